#!/bin/sh
# PID 1 of one kafka-bench lab host. Started by `kafka-bench lab up` inside the host's network
# namespace and fresh mount, UTS and PID namespaces (unshare --kill-child): whatever runs here
# dies with it, and every mount made here vanishes with the namespace.
#   lab-host.sh NAME ADDRESS STATE_DIR AUTHORIZED_KEYS HOSTS_FILE [DATA_MOUNT DATA_MB]
# It gives the host its own /etc and /var (copy-on-write over the machine's), an empty /opt,
# its own /run and /tmp, its host name, and an sshd on ADDRESS:22 that accepts the lab's key
# only; then it becomes that sshd, which also reaps the host's orphans. With DATA_MOUNT, Kafka's
# data gets a filesystem of its own there (a tmpfs of DATA_MB MiB) that a disk-full fault can
# fill without touching this machine's disks.
set -eu
name=$1 address=$2 state=$3 authorized_keys=$4 hosts_file=$5 data_mount=${6:-} data_mb=${7:-0}

# Read what the host needs from the project before any mount: the project may live under a
# directory this script covers (a clone in /tmp, say).
hosts=$(cat "$hosts_file")
keys=$(cat "$authorized_keys")

mount --make-rprivate /
hostname "$name"
for dir in etc var; do
  mkdir -p "$state/$dir.upper" "$state/$dir.work"
  mount -t overlay "lab-$name-$dir" -o "lowerdir=/$dir,upperdir=$state/$dir.upper,workdir=$state/$dir.work" "/$dir"
done
mkdir -p "$state/opt"
mount --bind "$state/opt" /opt
mount -t tmpfs -o mode=0755 "lab-$name-run" /run
mount -t tmpfs -o mode=1777 "lab-$name-tmp" /tmp
if [ -n "$data_mount" ]; then
  mkdir -p "$data_mount"
  mount -t tmpfs -o "mode=0755,size=${data_mb}m" "lab-$name-data" "$data_mount"
fi
mkdir -p /run/sshd /run/lock
chmod 0755 /run/sshd

echo "$name" > /etc/hostname
printf '%s\n' "$hosts" > /etc/hosts
printf '%s\n' "$keys" > /etc/ssh/kafka-bench-lab-authorized-keys
chmod 0600 /etc/ssh/kafka-bench-lab-authorized-keys
rm -f /etc/ssh/ssh_host_*
ssh-keygen -q -A
cat > /etc/ssh/sshd_config <<EOF
# kafka-bench lab host $name: root by the lab's key only, on the lab address only.
ListenAddress $address:22
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile /etc/ssh/kafka-bench-lab-authorized-keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile /run/sshd.pid
MaxStartups 100:30:200
MaxSessions 100
Subsystem sftp internal-sftp
EOF
exec /usr/sbin/sshd -D -e -f /etc/ssh/sshd_config
