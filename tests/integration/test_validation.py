"""Bad input is refused before anything is touched, naming the host and the variable."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from benchmarks.core.exit_codes import ExitCode
from tests.conftest import KRAFT_INVENTORY, LOCAL_INVENTORY, listening_ports, run_cli, service_pids

pytestmark = pytest.mark.slow


def broken_inventory(tmp_path: Path, edit, source: Path = LOCAL_INVENTORY) -> Path:
    """A copy of an inventory (the local one unless told), with its state under tmp_path, edited by `edit(hosts)`."""
    inv = tmp_path / "inventory"
    shutil.copytree(source, inv)
    all_vars = inv / "group_vars" / "all.yml"
    doc = yaml.safe_load(all_vars.read_text())
    doc["kafka_bench_state_dir"] = str(tmp_path / "state")
    doc["kafka_bench_cache_dir"] = str(tmp_path / "cache")
    all_vars.write_text(yaml.safe_dump(doc))
    hosts = yaml.safe_load((inv / "hosts.yml").read_text())
    edit(hosts)
    (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
    return inv


def brokers(hosts):
    return hosts["all"]["children"]["kafka"]["hosts"]


def set_host_var(name, value, host="broker0"):
    # host vars win over group_vars/kafka.yml, so the override takes effect
    def edit(hosts):
        brokers(hosts)[host][name] = value
    return edit


def duplicate_broker_id(hosts):
    brokers(hosts)["broker2"]["kafka_broker_id"] = 0


def duplicate_port(hosts):
    brokers(hosts)["broker1"]["kafka_port"] = 9092


def no_zookeeper(hosts):
    hosts["all"]["children"]["zookeeper"] = {"hosts": {}}


def even_quorum(hosts):
    del hosts["all"]["children"]["kafka_controller"]["hosts"]["broker2"]


def controller_port_on_a_broker_port(hosts):
    brokers(hosts)["broker1"]["kafka_controller_port"] = 9092


def zookeeper_mode_with_kafka_4(hosts):
    brokers(hosts)["broker0"]["kafka_metadata_mode"] = "zookeeper"


KRAFT = "kraft"  # cases on a copy of inventories/local-kraft

CASES = {
    "duplicate broker id": (duplicate_broker_id, ["broker0", "broker2", "broker.id 0", "kafka_broker_id"]),
    "duplicate port": (duplicate_port, ["broker0", "broker1", "127.0.0.1:9092", "kafka_port"]),
    "kraft: even quorum": (even_quorum, ["broker0", "2 controllers (broker0, broker1)", "1, 3 or 5", KRAFT]),
    "kraft: controller port on a broker port": (controller_port_on_a_broker_port, [
        "broker1", "ports 9093, 9092", "kafka_controller_port", "clash on localhost with broker0 (ports 9092, 9192)",
        KRAFT]),
    "kraft: zookeeper mode with kafka 4": (zookeeper_mode_with_kafka_4, [
        "broker0", "kafka_metadata_mode zookeeper is not available in Kafka 4.3.1", "kafka_version", KRAFT]),
    "min ISR above RF": (set_host_var("kafka_min_insync_replicas", 4),
                         ["broker0", "kafka_min_insync_replicas, got 4", "default.replication.factor"]),
    "unknown property": (set_host_var("kafka_host_server_properties", {"log.retention.hour": 5}),
                         ["broker0", "log.retention.hour", "kafka_host_server_properties"]),
    "no zookeeper host": (no_zookeeper, ["broker0", "kafka_zookeeper_group_name", "no ZooKeeper host"]),
}


@pytest.fixture
def teardown_if_deployed(tmp_path, runner):
    """Should a case wrongly deploy, tear it down so nothing is left running."""
    yield
    if (tmp_path / "state").exists():
        runner.run("teardown.yml", tmp_path / "inventory")


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_before_any_side_effect(case, tmp_path, teardown_if_deployed):
    edit, expected = CASES[case]
    inv = broken_inventory(tmp_path, edit, KRAFT_INVENTORY if KRAFT in expected else LOCAL_INVENTORY)
    expected = [fragment for fragment in expected if fragment != KRAFT]
    pids_before, ports_before = set(service_pids()), listening_ports()

    proc = run_cli("cluster", "up", "--inventory", str(inv), timeout=300)

    output = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == ExitCode.INVALID_INPUT, output[-3000:]
    for fragment in expected:
        assert fragment in output, f"{fragment!r} missing from the error:\n{output[-3000:]}"
    assert not (tmp_path / "state").exists(), "validation created state"
    assert not (tmp_path / "cache").exists(), "validation created the cache"
    assert set(service_pids()) == pids_before
    assert listening_ports() <= ports_before


def test_missing_inventory_is_refused(tmp_path):
    proc = run_cli("cluster", "status", "--inventory", str(tmp_path / "nope"))
    assert proc.returncode == ExitCode.INVALID_INPUT
    assert "does not exist" in proc.stderr


UPGRADE_INVENTORY = LOCAL_INVENTORY.parent / "local-upgrade"


@pytest.mark.parametrize(("source", "version", "expected"), [
    (LOCAL_INVENTORY, "4.3.1", ["broker0", "runs Kafka 3.9.2 in ZooKeeper mode, and Kafka 4.3.1 has no ZooKeeper mode",
                                "migrate to KRaft on 3.9 first (playbooks/migrate-to-kraft.yml)"]),
    (UPGRADE_INVENTORY, "4.3", ["kafka_upgrade_version must be a release such as 4.3.1 (got 4.3)"]),
    (UPGRADE_INVENTORY, "2.8.2", ["broker0", "runs Kafka 3.9.2", "newer than 2.8.2: this playbook does not downgrade"]),
], ids=["zookeeper to 4.x", "not a release", "downgrade"])
def test_an_upgrade_path_kafka_does_not_take_is_refused_before_any_host_is_touched(source, version, expected, tmp_path,
                                                                                    runner, teardown_if_deployed):
    inv = broken_inventory(tmp_path, lambda hosts: None, source)
    pids_before = set(service_pids())
    result = runner.run("upgrade.yml", inv, extravars={"kafka_upgrade_version": version})
    assert not result.ok
    messages = " ".join(" ".join(f.message.split()) for f in result.failures)
    for fragment in expected:
        assert fragment in messages, f"{fragment!r} missing from the error:\n{messages[-3000:]}"
    assert not (tmp_path / "state").exists(), "the upgrade touched a host before refusing"
    assert set(service_pids()) == pids_before
