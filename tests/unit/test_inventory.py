"""The CLI reads inventories the way the playbooks do."""

from __future__ import annotations

import pytest

from benchmarks.hosts import inventory
from tests.conftest import LOCAL_INVENTORY, ROOT


def test_local_inventory_is_the_classic_lab_layout():
    inv = inventory.load(LOCAL_INVENTORY)
    assert [(b.name, b.broker_id, b.host, b.port) for b in inv.brokers] == [
        ("broker0", 0, "127.0.0.1", 9092), ("broker1", 1, "127.0.0.1", 9093), ("broker2", 2, "127.0.0.1", 9094)]
    assert inv.bootstrap_servers == "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"
    assert [(z.name, z.host, z.port) for z in inv.zookeepers] == [("zk0", "127.0.0.1", 2181)]
    assert inv.broker(1).conf_dir == str(ROOT / ".state" / "local" / "broker1" / "config")
    assert inv.broker("broker2").ctl.endswith("/broker2/config/kafka-service")


def test_ids_follow_inventory_order_with_a_base_and_explicit_ids_win(tmp_path):
    (tmp_path / "hosts.yml").write_text(
        "all:\n  children:\n    kafka:\n      vars: {kafka_broker_id_base: 1}\n      hosts:\n"
        "        a: {ansible_host: 10.0.0.5}\n        b: {kafka_broker_id: 7, kafka_port: 9192}\n        c: {}\n")
    inv = inventory.load(tmp_path)
    assert [(b.name, b.broker_id, b.host, b.port) for b in inv.brokers] == [
        ("a", 1, "10.0.0.5", 9092), ("b", 7, "b", 9192), ("c", 3, "c", 9092)]


def test_missing_inventory_and_missing_group_are_named(tmp_path):
    with pytest.raises(inventory.InventoryError, match="does not exist"):
        inventory.load(tmp_path / "nope")
    (tmp_path / "hosts.yml").write_text("all:\n  children:\n    zookeeper:\n      hosts: {z: {}}\n")
    with pytest.raises(inventory.InventoryError, match=r"group 'kafka' \(or cp-ansible's 'kafka_broker'\) has no hosts"):
        inventory.load(tmp_path)


def test_unknown_broker_is_named():
    with pytest.raises(inventory.InventoryError, match="no broker 9; brokers are broker0 \\(id 0\\)"):
        inventory.load(LOCAL_INVENTORY).broker(9)


def test_the_migration_inventory_is_zookeeper_with_controllers_waiting_for_the_migration():
    inv = inventory.load(ROOT / "inventories" / "local-migration")
    assert inv.metadata_mode == "zookeeper" and inv.kafka_version == "3.9.2"
    assert [b.bootstrap for b in inv.brokers] == ["127.0.0.1:9092", "127.0.0.1:9093", "127.0.0.1:9094"]
    assert inv.controllers == () and inv.migration_controllers == ("ctl0", "ctl1", "ctl2")
    assert inventory.load(LOCAL_INVENTORY).migration_controllers == ()


def test_a_cp_ansible_inventory_is_read_with_its_own_groups_ids_listeners_and_unit_names(tmp_path):
    inv = inventory.load(ROOT / "inventories" / "example-cp-ansible")
    assert inv.kraft, "cp-ansible runs KRaft when kafka_controller has hosts"
    assert [(b.name, b.broker_id, b.port, b.service) for b in inv.brokers] == [
        (f"kafka{i}.example.internal", i, 9092, "confluent-server") for i in (1, 2, 3)]
    assert [(c.node_id, c.port, c.service, c.combined) for c in inv.controllers] == [
        (9991, 9093, "confluent-kcontroller", False), (9992, 9093, "confluent-kcontroller", False),
        (9993, 9093, "confluent-kcontroller", False)]
    # Its defaults where the inventory says nothing: ids from position + 1, the internal listener,
    # the hostname variable; ZooKeeper mode without controllers.
    (tmp_path / "hosts.yml").write_text(
        "all:\n  children:\n    zookeeper:\n      hosts: {zk1: {hostname: 10.0.0.9}}\n"
        "    kafka_broker:\n      vars:\n        kafka_broker_listeners:\n"
        "          internal: {name: INTERNAL, port: 19092}\n          broker: {name: BROKER, port: 9091}\n"
        "      hosts:\n        a: {hostname: 10.0.0.5}\n        b: {ansible_host: 10.0.0.6}\n")
    inv = inventory.load(tmp_path)
    assert not inv.kraft
    assert [(b.broker_id, b.bootstrap, b.service) for b in inv.brokers] == [
        (1, "10.0.0.5:19092", "confluent-server"), (2, "10.0.0.6:19092", "confluent-server")]
    assert [(z.host, z.port, z.service) for z in inv.zookeepers] == [("10.0.0.9", 2181, "confluent-zookeeper")]
    assert inv.foreign_hosts == ()
    assert inventory.load(ROOT / "inventories" / "example-cp-ansible").foreign_hosts == (
        "kafka1.example.internal", "kafka2.example.internal", "kafka3.example.internal",
        "ctl1.example.internal", "ctl2.example.internal", "ctl3.example.internal")


def test_a_service_control_other_than_script_or_systemd_is_refused_naming_host_and_allowed_values(tmp_path):
    (tmp_path / "hosts.yml").write_text(
        "all:\n  children:\n    kafka:\n      hosts: {a: {kafka_bench_service_control: sysv}}\n")
    with pytest.raises(inventory.InventoryError, match="host a: kafka_bench_service_control is 'sysv'; allowed: script, systemd"):
        inventory.load(tmp_path)


def test_brokers_in_both_layouts_groups_are_refused_naming_both(tmp_path):
    (tmp_path / "hosts.yml").write_text(
        "all:\n  children:\n    kafka:\n      hosts: {a: {}}\n    kafka_broker:\n      hosts: {b: {}}\n")
    with pytest.raises(inventory.InventoryError, match="both groups 'kafka' and 'kafka_broker' have hosts"):
        inventory.load(tmp_path)
