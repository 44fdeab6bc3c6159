"""The lab is checked before anything is created: its inventory, its addresses, its names; and
the Vagrant topology matches its inventories (Vagrant itself validates the Vagrantfile in
tests/tools/test_vagrant.py)."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from benchmarks.hosts import inventory as inventory_lib
from benchmarks.hosts import lab, lab_spec
from tests.conftest import ROOT

GROUP_VARS = {
    "kafka_bench_lab_network": "10.213.0.0/24", "kafka_bench_lab_bridge": "kblab0",
    "kafka_bench_lab_gateway": "10.213.0.1", "kafka_bench_lab_management_address": "10.213.0.254",
    "kafka_bench_lab_state_dir": "/tmp/kb-lab-state",
}


def write_inventory(tmp_path, hosts, **overrides):
    (tmp_path / "group_vars").mkdir(exist_ok=True)
    (tmp_path / "group_vars" / "all.yml").write_text(yaml.safe_dump({**GROUP_VARS, **overrides}))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(
        {"all": {"children": {"kafka": {"hosts": {n: ({"ansible_host": a} if a else None) for n, a in hosts.items()}}}}}))
    return tmp_path


def error(tmp_path, hosts, **overrides) -> str:
    with pytest.raises(lab_spec.LabError) as info:
        lab_spec.load_spec(write_inventory(tmp_path, hosts, **overrides))
    return str(info.value)


def test_the_lab_inventory_describes_three_hosts_on_their_own_subnet():
    spec = lab_spec.load_spec(ROOT / "inventories" / "lab")
    assert [(h.name, h.address, h.netns, h.veth) for h in spec.hosts] == [
        ("lab1", "10.213.0.11", "kb-lab1", "kbv-lab1"), ("lab2", "10.213.0.12", "kb-lab2", "kbv-lab2"),
        ("lab3", "10.213.0.13", "kb-lab3", "kbv-lab3")]
    assert (spec.bridge, spec.gateway, spec.management) == ("kblab0", "10.213.0.1", "10.213.0.254")
    assert spec.state_dir == ROOT / ".state" / "lab"
    # Kafka's data on a tmpfs of each host's own, which the disk-full fault (and only it) fills.
    assert (spec.data_mount, spec.data_mb) == ("/var/lib/kafka", 512)
    assert {b.data_disk for b in inventory_lib.load(ROOT / "inventories" / "lab").brokers} == {"/var/lib/kafka"}
    assert {b.data_disk for b in inventory_lib.load(ROOT / "inventories" / "local").brokers} == {None}


def test_the_kraft_lab_runs_a_controller_and_a_broker_on_each_of_its_hosts():
    """Inventory hosts sharing an address are processes of one lab host (kafka_bench_lab_host)."""
    spec = lab_spec.load_spec(ROOT / "inventories" / "lab-kraft")
    assert [(h.name, h.address) for h in spec.hosts] == [
        ("kraft1", "10.213.1.11"), ("kraft2", "10.213.1.12"), ("kraft3", "10.213.1.13")]
    assert (spec.bridge, spec.state_dir) == ("kblab1", ROOT / ".state" / "lab-kraft")
    assert not {h.address for h in spec.hosts} & {h.address for h in lab_spec.load_spec(ROOT / "inventories" / "lab").hosts}
    inv = inventory_lib.load(ROOT / "inventories" / "lab-kraft")
    assert [(b.broker_id, b.name, b.bootstrap) for b in inv.brokers] == [
        (0, "kraft1", "10.213.1.11:9092"), (1, "kraft2", "10.213.1.12:9092"), (2, "kraft3", "10.213.1.13:9092")]
    assert [(c.node_id, c.name) for c in inv.controllers] == [(9990, "kraft1-ctl"), (9991, "kraft2-ctl"),
                                                               (9992, "kraft3-ctl")]


def test_every_lab_has_its_own_subnet_bridge_and_state_so_they_can_be_up_together():
    specs = [lab_spec.load_spec(ROOT / "inventories" / name) for name in ("lab", "lab-kraft", "lab-migration", "lab-upgrade")]
    assert len({s.bridge for s in specs}) == len({s.state_dir for s in specs}) == len({s.network for s in specs}) == 4
    addresses = [h.address for s in specs for h in s.hosts]
    assert len(addresses) == len(set(addresses)) == 12


def test_the_operations_labs_have_the_shapes_their_procedures_need():
    """lab-migration: ZooKeeper, 3.9 brokers and dedicated controllers waiting for the migration on
    each host; lab-upgrade: 3.9 in KRaft mode with dedicated controllers, what upgrade.yml takes to 4.x."""
    spec = lab_spec.load_spec(ROOT / "inventories" / "lab-migration")
    assert [(h.name, h.address) for h in spec.hosts] == [("mig1", "10.213.2.11"), ("mig2", "10.213.2.12"),
                                                         ("mig3", "10.213.2.13")]
    migrating = inventory_lib.load(ROOT / "inventories" / "lab-migration")
    assert (migrating.metadata_mode, migrating.kafka_version) == ("zookeeper", "3.9.2")
    assert [b.bootstrap for b in migrating.brokers] == ["10.213.2.11:9092", "10.213.2.12:9092", "10.213.2.13:9092"]
    assert migrating.migration_controllers == ("mig1-ctl", "mig2-ctl", "mig3-ctl")
    upgrading = inventory_lib.load(ROOT / "inventories" / "lab-upgrade")
    assert (upgrading.metadata_mode, upgrading.kafka_version) == ("kraft", "3.9.2")
    assert [(c.node_id, c.name) for c in upgrading.controllers] == [(9990, "upg1-ctl"), (9991, "upg2-ctl"),
                                                                    (9992, "upg3-ctl")]
    assert not {b.broker_id for b in upgrading.brokers} & {c.node_id for c in upgrading.controllers}


def test_processes_of_one_lab_host_must_name_it(tmp_path):
    inventory = write_inventory(tmp_path, {"lab1": "10.213.0.11", "lab1-ctl": "10.213.0.11"})
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    hosts["all"]["children"]["kafka"]["hosts"]["lab1-ctl"]["kafka_bench_lab_host"] = "lab1"
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    assert [(h.name, h.address) for h in lab_spec.load_spec(inventory).hosts] == [("lab1", "10.213.0.11")]
    hosts["all"]["children"]["kafka"]["hosts"]["lab1-ctl"] = {"ansible_host": "10.213.0.12", "kafka_bench_lab_host": "lab1"}
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    with pytest.raises(lab_spec.LabError, match="host lab1-ctl: lab host lab1 already has another address"):
        lab_spec.load_spec(inventory)


@pytest.mark.parametrize("hosts, overrides, expected", [
    ({"lab1": "10.9.0.5"}, {}, "host lab1: ansible_host 10.9.0.5 is not a host address of kafka_bench_lab_network "
                               "10.213.0.0/24"),
    ({"lab1": "10.213.0.255"}, {}, "ansible_host 10.213.0.255 is not a host address"),
    ({"lab1": "somewhere"}, {}, "host lab1: ansible_host 'somewhere' must be an IPv4 address in 10.213.0.0/24"),
    ({"lab1": None}, {}, "host lab1: ansible_host None must be an IPv4 address"),
    ({"lab1": "10.213.0.11", "lab2": "10.213.0.11"}, {}, "host lab2: ansible_host 10.213.0.11 is already used by lab1 "
                                                         "(inventory hosts on one lab host set kafka_bench_lab_host: lab1)"),
    ({"lab1": "10.213.0.1"}, {}, "ansible_host 10.213.0.1 is already used by kafka_bench_lab_gateway"),
    ({"Lab_1": "10.213.0.11"}, {}, "host 'Lab_1': lab host names are 1-11 of a-z"),
    ({"averyveryverylongname": "10.213.0.11"}, {}, "lab host names are 1-11"),
    ({"lab1": "10.213.0.11"}, {"kafka_bench_lab_network": "8.8.8.0/24", "kafka_bench_lab_gateway": "8.8.8.1",
                               "kafka_bench_lab_management_address": "8.8.8.2"}, "must be a private network"),
    ({"lab1": "10.213.0.11"}, {"kafka_bench_lab_gateway": "10.214.0.1"},
     "kafka_bench_lab_gateway 10.214.0.1 must be a host address of kafka_bench_lab_network"),
    ({"lab1": "10.213.0.11"}, {"kafka_bench_lab_management_address": "10.213.0.1"}, "must differ"),
    ({"lab1": "10.213.0.11"}, {"kafka_bench_lab_bridge": "a-bridge-name-too-long"}, "kafka_bench_lab_bridge"),
    ({"lab1": "10.213.0.11"}, {"kafka_bench_lab_data_mount": "/var", "kafka_bench_lab_data_mb": 64},
     "kafka_bench_lab_data_mount '/var' must be an absolute path of its own, not one of /, /etc, /var"),
    ({"lab1": "10.213.0.11"}, {"kafka_bench_lab_data_mount": "/var/lib/kafka"},
     "kafka_bench_lab_data_mb None must be a whole number of MiB from 16 to 65536"),
    ({"lab1": "10.213.0.11"}, {"kafka_bench_lab_data_mount": "/var/lib/kafka", "kafka_bench_lab_data_mb": "lots"},
     "kafka_bench_lab_data_mb 'lots' must be a whole number"),
])
def test_bad_lab_inventories_are_refused_with_the_file_and_field(tmp_path, hosts, overrides, expected):
    msg = error(tmp_path, hosts, **overrides)
    assert expected in msg and str(tmp_path) in msg


def test_an_inventory_that_is_not_a_lab_is_refused(tmp_path):
    with pytest.raises(lab_spec.LabError, match="not a lab inventory; missing kafka_bench_lab_network"):
        lab_spec.load_spec(ROOT / "inventories" / "local")


class FakeCommands:
    """Records commands; answers `ip` queries from a tiny model of links and namespaces."""

    def __init__(self):
        self.calls, self.links, self.netns = [], set(), set()

    def __call__(self, args):
        args = list(args)
        self.calls.append(args)
        out = ""
        if args[:3] == ["ip", "-o", "link"]:
            out = "".join(f"{i}: {n}: <UP>\n" for i, n in enumerate(sorted(self.links)))
        elif args[:3] == ["ip", "netns", "list"]:
            out = "".join(f"{n}\n" for n in sorted(self.netns))
        elif args[:3] == ["ip", "netns", "add"]:
            self.netns.add(args[3])
        elif args[:3] == ["ip", "netns", "del"]:
            self.netns.discard(args[3])
        elif args[:3] == ["ip", "link", "add"]:
            self.links.add(args[4] if args[3] == "name" else args[3])
        elif args[:3] == ["ip", "link", "del"]:
            self.links.discard(args[3])
        return subprocess.CompletedProcess(args, 0, out, "")


def test_teardown_removes_only_what_the_lab_made_and_reports_clean(tmp_path):
    spec = lab_spec.load_spec(write_inventory(tmp_path, {"lab1": "10.213.0.11", "lab2": "10.213.0.12"},
                                         kafka_bench_lab_state_dir=str(tmp_path / "state")))
    fake = FakeCommands()
    fake.links = {"kblab0", "kbv-lab1", "eth0", "kbv-other"}
    fake.netns = {"kb-lab1", "someone-elses"}
    left = lab.Lab(spec, run=fake, sleep=lambda s: None, mountinfo=lambda: "").down()
    assert left == []
    assert fake.links == {"eth0", "kbv-other"} and fake.netns == {"someone-elses"}
    assert ["ip", "netns", "pids", "kb-lab1"] in fake.calls
    assert not any(c[:3] == ["ip", "netns", "del"] and c[3] == "kb-lab2" for c in fake.calls)


def test_vagrant_topology_matches_its_inventories():
    text = (ROOT / "Vagrantfile").read_text()
    for layout, inventory in (("colocated", "vagrant"), ("separate", "vagrant-separate"), ("kraft", "vagrant-kraft")):
        block = text.split(f'"{layout}" => {{', 1)[1].split("\n    ],", 1)[0]
        assert f'inventory: "inventories/{inventory}"' in block
        boxes = {m[0]: (m[1], set(m[2].split())) for m in
                 re.findall(r'name: "([^"]+)", ip: "([^"]+)".*?groups: %w\[([^\]]*)\]', block)}
        hosts = yaml.safe_load((ROOT / "inventories" / inventory / "hosts.yml").read_text())["all"]["children"]
        seen: dict[str, tuple[str, set[str]]] = {}
        for group, body in hosts.items():
            for name, hostvars in body["hosts"].items():
                address = (hostvars or {}).get("ansible_host") or seen.get(name, (None,))[0]
                seen[name] = (address, seen.get(name, (None, set()))[1] | {group})
        assert seen == boxes, layout


def test_every_inventory_uses_the_same_group_names_or_cp_ansibles():
    for path in sorted((ROOT / "inventories").glob("*/hosts.yml")):
        children = yaml.safe_load(path.read_text())["all"]["children"]
        groups = set(children)
        # ZooKeeper mode: zookeeper and kafka; KRaft: kafka and kafka_controller (combined nodes are in both);
        # a ZooKeeper cluster about to migrate to KRaft: all three, its controllers declared for the migration
        # (kafka_zookeeper_migration: true, read as Ansible resolves it: group_vars may be a file or a directory).
        # Or cp-ansible's layout (inventories/*cp-ansible): its broker group is kafka_broker.
        brokers = "kafka_broker" if "cp-ansible" in path.parent.name else "kafka"
        assert {brokers} <= groups <= {"zookeeper", brokers, "kafka_controller", "loadgen"}, path
        if {"zookeeper", "kafka_controller"} <= groups:
            controllers = tuple(children["kafka_controller"]["hosts"])
            assert inventory_lib.load(path.parent).migration_controllers == controllers, path
        else:
            assert ("zookeeper" in groups) != ("kafka_controller" in groups), path
