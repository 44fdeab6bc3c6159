"""The multi-host path for real: three lab hosts (network namespaces with their own /etc, /opt,
/var, process tree and sshd), ZooKeeper and Kafka deployed on them over SSH by the same
playbooks as every inventory, then failover, a rolling restart and teardown.

Run with `make test-lab` (it installs openssh-server and nftables when missing)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pyarrow.compute as pc
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks.harness import runner as runner_lib
from benchmarks.hosts import host_probe
from benchmarks.hosts import inventory as inventory_lib
from benchmarks.hosts import ssh as ssh_lib
from benchmarks.kafka import cluster
from benchmarks.record import ledger
from benchmarks.record.timeline_schema import TIMELINE_SCHEMA
from benchmarks.spec import scenario as sc
from tests.conftest import ROOT, assert_ok, wait_for
from tests.lab.helpers import built_lab, deployed, ssh, ssh_run

pytestmark = [pytest.mark.lab, pytest.mark.slow]

LAB = ROOT / "inventories" / "lab"
# The same hosts and cluster as cp-ansible's inventory layout describes them (groups kafka_broker and
# zookeeper, broker_id, its unit names): a cluster this project did not lay out.
LAB_CP = ROOT / "inventories" / "lab-cp-ansible"
ENSEMBLE = "10.213.0.11:2181,10.213.0.12:2181,10.213.0.13:2181/kafka"


@pytest.fixture(scope="module")
def lab():
    with built_lab(LAB) as the_lab:
        yield the_lab


@pytest.fixture(scope="module")
def lab_cluster(lab, runner):
    return deployed(runner, LAB, "3 ZooKeeper servers and 3 brokers")


def zookeeper_modes(inventory: inventory_lib.ClusterInventory) -> dict[str, str]:
    return {z.name: host_probe.zookeeper_mode(z) or "down" for z in inventory.zookeepers}


def test_lab_hosts_are_separate_hosts(lab):
    marker = f"probe-{time.time_ns()}"
    ssh(lab, "lab1", f"echo {marker} > /etc/kafka-bench-lab-probe")
    for host in lab.spec.hosts:
        out = ssh(lab, host.name, "hostname; ip -4 -o addr show dev eth0; ip route; ps -e -o pid=,comm= | head -1;"
                                  " cat /etc/kafka-bench-lab-probe 2>/dev/null; ip route get 192.0.2.1 2>&1 || true")
        lines = out.splitlines()
        assert lines[0] == host.name
        assert f"inet {host.address}/24" in out
        assert "default" not in out  # no route out of the lab ...
        assert "unreachable" in out.lower()  # ... so nothing outside is reachable
        assert any(line.split() == ["1", "sshd"] for line in lines), "the host has its own process tree"
        assert (marker in out) == (host.name == "lab1"), "each host has its own /etc"
    assert not Path("/etc/kafka-bench-lab-probe").exists()


def test_deploys_an_ensemble_and_brokers_over_ssh(lab, lab_cluster):
    brokers = {b.broker_id: b.bootstrap for b in lab_cluster.brokers}
    assert brokers == {0: "10.213.0.11:9092", 1: "10.213.0.12:9092", 2: "10.213.0.13:9092"}
    status = cluster.describe(lab_cluster)
    assert status.healthy, status.problems()
    # Brokers advertise their host's address, on the same port everywhere.
    metadata = AdminClient({"bootstrap.servers": lab_cluster.bootstrap_servers}).list_topics(timeout=10)
    assert {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()} == brokers
    modes = zookeeper_modes(lab_cluster)
    assert sorted(modes.values()) == ["follower", "follower", "leader"], modes
    for index, host in enumerate(lab.spec.hosts):
        assert ssh(lab, host.name, "cat /var/lib/zookeeper/myid").strip() == str(index + 1)
        config = ssh(lab, host.name, "cat /etc/kafka/server.properties /etc/zookeeper/zoo.cfg")
        assert f"zookeeper.connect={ENSEMBLE}" in config
        assert f"broker.id={index}" in config
        for peer in range(3):
            assert f"server.{peer + 1}=10.213.0.1{peer + 1}:2888:3888" in config
        # The roles' real-host paths and a real service user, in the host's own /etc and /opt.
        assert ssh(lab, host.name, "stat -c %U /var/lib/kafka/data; ls /opt/kafka").split() == \
            ["kafka", "kafka_2.13-3.9.2"]
    assert not Path("/opt/kafka").exists() and not Path("/etc/kafka").exists()


def test_brokers_cpu_is_read_over_ssh_from_their_own_hosts(lab, lab_cluster):
    """What a run records as broker_cpu_s on hosts of their own: each broker's process, found by its
    control script on its host, and the CPU seconds /proc there says it used."""
    reader = ssh_lib.ssh_reader(LAB)
    before = host_probe.broker_cpu(lab_cluster, reader)
    assert before is not None and sorted(before) == ["lab1", "lab2", "lab3"]
    for host, (pid, cpu) in before.items():
        assert str(pid) == ssh(lab, host, "/etc/kafka/kafka-service pid").strip() and cpu > 1, (host, pid, cpu)
    time.sleep(2)
    used = host_probe.cpu_used(before, host_probe.broker_cpu(lab_cluster, reader))
    assert used is not None and 0 < used < 3 * 2 * os.cpu_count(), used


@pytest.mark.long  # a second deployment over SSH; changed=0 is checked on every local cluster in `make test`
def test_second_deploy_changes_nothing(lab_cluster, runner):
    result = assert_ok(runner.run("site.yml", LAB))
    assert result.count("changed") == 0, result.stats.get("changed")


def test_acks_all_writes_go_on_through_a_broker_kill_and_a_host_isolation(lab_cluster, runner, tmp_path):
    """Run through the cp-ansible layout of the lab (inventories/lab-cp-ansible): the faults, heals
    and log collection find the brokers in kafka_broker, by cp-ansible's ids, and act on services
    the roles named as cp-ansible does (confluent-server, confluent-zookeeper)."""
    cp_layout = inventory_lib.load(LAB_CP)
    assert [(b.name, b.broker_id, b.bootstrap) for b in cp_layout.brokers] == [
        (b.name, b.broker_id, b.bootstrap) for b in lab_cluster.brokers]
    assert {b.service for b in cp_layout.brokers} == {"confluent-server"}
    [run] = sc.load(ROOT / "benchmarks" / "suites" / "lab" / "00-kill-then-isolate.yml")
    summary = runner_lib.execute(run.scenario, cp_layout, LAB_CP, runner, tmp_path, quick=False, seed=3)
    assert summary.valid, summary.invalid_reasons
    assert summary.acked_lost == 0, summary.acked_lost_ids
    assert summary.failed == summary.indeterminate == 0
    run_dir = Path(summary.run_dir)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    injected = {e["fault_id"]: e for e in events if e["event"] == "fault-injected"}
    healed = {e["fault_id"]: e for e in events if e["event"] == "fault-healed"}
    intents = {e["fault_id"]: e for e in events if e["event"] == "fault-intent"}
    assert sorted(e["kind"] for e in intents.values()) == ["broker-kill", "host-isolate"]
    # Every host's clock read over SSH before the faults: the lab's hosts share this machine's
    # kernel clock, so each measured offset is zero within its round trip (plus scheduling noise).
    [offsets] = [e["hosts"] for e in events if e["event"] == "clock-offsets"]
    assert sorted(o["host"] for o in offsets) == ["lab1", "lab2", "lab3"]
    for o in offsets:
        assert o["how"] == "ssh" and 0 < o["uncertainty_ns"] < 50e6, o
        assert abs(o["offset_ns"]) <= o["uncertainty_ns"] + 5e6, o
    assert sorted(p.name for p in (run_dir / "logs").iterdir()) == ["lab1", "lab2", "lab3"], "logs collected"
    assert all((run_dir / "logs" / h / "server.log").is_file() for h in ("lab1", "lab2", "lab3")), "the brokers' logs"
    # The kill landed on broker 1's process, found by the name the layout gives it: its ZooKeeper
    # registration went (once its session expired) while the fault lasted, and came back after.
    kill = next(f for f, e in intents.items() if e["kind"] == "broker-kill")
    alive = [(r["t_ns"], (r["brokers_alive"] or "").split(",")) for r in
             ledger.read(run_dir / "timeline", TIMELINE_SCHEMA).to_pylist() if r["error"] is None]
    assert any("1" not in ids for t, ids in alive if injected[kill]["at_ns"] <= t < healed[kill]["at_ns"])
    assert "1" in alive[-1][1], alive[-1]
    produced = ledger.read(run_dir / "ledger" / "produce", ledger.PRODUCE_SCHEMA)
    acks = produced.filter(pc.equal(produced.column("outcome"), "acked")).column("ack_ns")
    for fault_id, intent in intents.items():
        start, end = injected[fault_id]["at_ns"], healed[fault_id]["at_ns"]
        stamps = sorted(a for a in acks.to_pylist() if start <= a < end)
        first_gap = ((stamps[0] if stamps else end) - start) / 1e9
        print(f"\n{intent['kind']} ({intent['reason']}): {(end - start) / 1e9:.1f} s; no ack for the first "
              f"{first_gap:.1f} s, then {len(stamps)} acks")
        # acks=all writes are acknowledged again while the fault lasts, up to its end.
        assert stamps, f"{intent['kind']}: no acks=all write was acknowledged during the fault"
        assert stamps[-1] > end - 3e9, f"{intent['kind']}: acks stopped {(end - stamps[-1]) / 1e9:.1f} s before the heal"


def loss_counters(lab, host: str) -> dict[str, int]:
    """The packets the packet-loss table on `host` has seen and dropped (both chains), from nft's JSON."""
    listed = json.loads(ssh(lab, host, "nft -j list table inet kafka_bench_loss"))
    counts = {"seen": 0, "dropped": 0}
    for item in listed["nftables"]:
        rule = item.get("rule")
        if rule and rule.get("comment") in counts:
            counts[rule["comment"]] += next(e["counter"]["packets"] for e in rule["expr"] if "counter" in e)
    return counts


def test_packet_loss_and_a_full_disk_act_for_real_and_heal_reverts_them_after_the_runner_was_killed(lab, lab_cluster,
                                                                                                     tmp_path):
    """packet-loss of 20% at broker 2's host and a full data disk at broker 1's, under load:
    nftables at lab3 sees the cluster's and the clients' packets and drops about a fifth of them,
    both ways; broker 1 cannot write (No space left on device) and halts. The runner is SIGKILLed
    while both faults are in force; `kafka-bench heal` reverts them from the journal (the table is
    gone, the filler deleted, broker 1 started and back in the cluster) and a second heal finds
    nothing to revert."""
    scenario_file = tmp_path / "lossy.yml"
    scenario_file.write_text(json.dumps({"scenario": {
        "name": "lossy", "workload": {"rate": 300, "producers": 1, "warmup_s": 1, "duration_s": 120},
        "faults": [{"kind": "packet-loss", "at_s": 2, "percent": 20, "target": {"broker": 2}},
                   {"kind": "disk-full", "at_s": 3, "target": {"broker": 1}}]}}))
    results = tmp_path / "results"
    proc = subprocess.Popen([ROOT / ".venv" / "bin" / "kafka-bench", "run", str(scenario_file), "-i", str(LAB),
                             "--results", str(results)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)

    def injected():
        logs = list(results.glob("*/*/events.jsonl"))
        return logs and logs[0].read_text().count('"fault-injected"') == 2

    try:
        wait_for(injected, 180, interval=0.5, what="the packet loss and the full disk injected")
        time.sleep(8)
        counts = loss_counters(lab, "lab3")
        wait_for(lambda: ssh_run(lab, "lab2", "/etc/kafka/kafka-service status").returncode != 0, 90,
                 what="broker 1 to stop on its full disk")
        free = int(ssh(lab, "lab2", "stat -f -c '%a' /var/lib/kafka"))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    share = counts["dropped"] / counts["seen"]
    print(f"\npacket-loss 20% at lab3: {counts['dropped']} of {counts['seen']} packets dropped ({share:.1%})")
    assert counts["seen"] > 500 and 0.12 < share < 0.28, counts
    assert free == 0, f"{free} blocks still free on lab2's data disk"
    assert "No space left on device" in ssh(lab, "lab2", "cat /var/log/kafka/server.log /var/log/kafka/kafkaServer.out"
                                                         " 2>/dev/null | grep -m 1 'No space left on device' || true")
    healed = subprocess.run([ROOT / ".venv" / "bin" / "kafka-bench", "heal", "-i", str(LAB)], capture_output=True,
                            text=True, timeout=300, cwd=ROOT)
    assert healed.returncode == 0, healed.stderr
    assert "reverted packet-loss on lab3" in healed.stderr and "reverted disk-full on lab2" in healed.stderr, healed.stderr
    assert "kafka_bench_loss" not in ssh(lab, "lab3", "nft list tables")
    assert ssh(lab, "lab2", "ls /var/lib/kafka").split() == ["data"]
    again = subprocess.run([ROOT / ".venv" / "bin" / "kafka-bench", "heal", "-i", str(LAB)], capture_output=True,
                           text=True, timeout=300, cwd=ROOT)
    assert "no fault to revert" in again.stderr, again.stderr
    wait_for(lambda: cluster.describe(lab_cluster).healthy, 180, what="a healthy cluster after the heal")


@pytest.mark.long
def test_the_ensemble_survives_losing_one_zookeeper_server(lab_cluster, runner):
    modes = zookeeper_modes(lab_cluster)
    leader = next(name for name, mode in modes.items() if mode == "leader")
    assert_ok(runner.run("faults/zookeeper-stop.yml", LAB, extravars={"fault_phase": "inject"}, limit=leader))
    try:
        survivors = wait_for(lambda: (m := zookeeper_modes(lab_cluster)) and m[leader] == "down"
                             and sorted(v for k, v in m.items() if k != leader) == ["follower", "leader"] and m,
                             timeout=60, what="a new ZooKeeper leader among the two survivors")
        print(f"\nZooKeeper leader {leader} stopped; ensemble now {survivors}")
        # The cluster still takes metadata changes (ZooKeeper writes) and acks=all writes.
        admin = AdminClient({"bootstrap.servers": lab_cluster.bootstrap_servers})
        topic = f"kb-lab-zk-{time.time_ns()}"
        admin.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})])[topic].result(30)
        assert _produce(lab_cluster, topic, 300) == 300
    finally:
        assert_ok(runner.run("faults/zookeeper-stop.yml", LAB, extravars={"fault_phase": "revert"}, limit=leader))
    wait_for(lambda: sorted(zookeeper_modes(lab_cluster).values()) == ["follower", "follower", "leader"],
             timeout=60, what="the ensemble of three serving again")


@pytest.mark.long
def test_rolling_restart_goes_host_by_host_with_the_controller_and_zookeeper_leader_last(lab, lab_cluster, runner):
    admin = AdminClient({"bootstrap.servers": lab_cluster.bootstrap_servers})
    topic = f"kb-lab-rolling-{time.time_ns()}"
    admin.create_topics([NewTopic(topic, 6, 3, config={"min.insync.replicas": "2"})])[topic].result(30)
    assert _produce(lab_cluster, topic, 3000) == 3000
    wait_for(lambda: cluster.describe(lab_cluster).healthy, timeout=120, what="a healthy cluster before restarting")
    before = cluster.describe(lab_cluster)
    zk_leader = next(name for name, mode in zookeeper_modes(lab_cluster).items() if mode == "leader")
    controller = lab_cluster.broker(before.controller_id).name

    samples: list[tuple[int, int]] = []  # (live brokers, under-replicated partitions) every ~0.5 s
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                status = cluster.describe(lab_cluster, timeout=5)
                samples.append((sum(b.alive for b in status.brokers),
                                sum(p.under_replicated for p in status.partitions)))
            except Exception:  # a broker answering mid-restart may fail one sample
                pass
            stop.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        result = assert_ok(runner.run("rolling-restart.yml", LAB))
    finally:
        stop.set()
        sampler.join(10)
    print(f"\nrolling restart of 3 ZooKeeper servers and 3 brokers: {time.monotonic() - started:.0f} s, "
          f"{len(samples)} samples, fewest live brokers {min(s[0] for s in samples)}, "
          f"most under-replicated partitions {max(s[1] for s in samples)}")
    assert result.count("changed") == 6
    assert min(live for live, _ in samples) >= 2, "two brokers were down at once"
    after = cluster.describe(lab_cluster)
    assert after.healthy, after.problems()
    # Restarted last = running for the shortest time: the old controller and the old ZooKeeper leader.
    uptimes = {h.name: [int(x) for x in ssh(lab, h.name, "ps -o etimes= -p $(/etc/kafka/kafka-service pid);"
                                                         " ps -o etimes= -p $(/etc/zookeeper/zookeeper-service pid)").split()]
               for h in lab.spec.hosts}
    assert min(uptimes, key=lambda h: uptimes[h][0]) == controller, uptimes
    assert min(uptimes, key=lambda h: uptimes[h][1]) == zk_leader, uptimes


def test_teardown_leaves_nothing_even_after_a_host_died(lab):
    """Runs last: a host's init killed abruptly (as a crashed test would leave it), then down."""
    victim = lab.spec.hosts[1]
    pid = lab._pid(victim)
    assert pid is not None
    subprocess.run(["kill", "-9", str(pid)], check=True)
    assert lab.down() == []
    assert not {h.netns for h in lab.spec.hosts} & set(subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                                      text=True).stdout.split())
    assert lab.down() == [], "a second teardown must find nothing to do"
    # A half-built lab (a namespace and the bridge only) is torn down too.
    subprocess.run(["ip", "netns", "add", lab.spec.hosts[0].netns], check=True)
    subprocess.run(["ip", "link", "add", "name", lab.spec.bridge, "type", "bridge"], check=True)
    assert lab.down() == []


def _produce(inventory: inventory_lib.ClusterInventory, topic: str, count: int) -> int:
    acked = []
    producer = Producer({"bootstrap.servers": inventory.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=str(i), value=b"x" * 100,
                         on_delivery=lambda err, msg: acked.append(1) if err is None else None)
        producer.poll(0)
    producer.flush(60)
    return len(acked)
