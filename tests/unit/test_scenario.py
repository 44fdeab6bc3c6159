"""Every scenario-validation rule, and sweep expansion."""

from __future__ import annotations

import pytest

from benchmarks.spec import client_profile, scenario_file
from benchmarks.spec import scenario as sc
from tests.conftest import ROOT

THREE_BROKERS = sc.ClusterShape(broker_ids=(0, 1, 2), hosts=1)


def parse(scenario=None, sweep=None, cluster=None):
    doc = {"scenario": {"name": "demo", **(scenario or {})}}
    if sweep is not None:
        doc["sweep"] = sweep
    return sc.parse(doc, "demo.yml", cluster)


def error_of(**kwargs) -> str:
    with pytest.raises(sc.ScenarioError) as info:
        parse(**kwargs)
    return str(info.value)


def test_defaults_make_a_valid_scenario():
    [run] = parse()
    s = run.scenario
    assert (s.workload.partitions, s.workload.replication_factor, s.workload.min_insync_replicas) == (3, 3, 1)
    assert s.topic == "kb-demo" and s.client.acks == "all" and s.faults == []


@pytest.mark.parametrize("scenario, expected", [
    ({"workload": {"replication_factr": 2}}, "demo.yml: scenario.workload.replication_factr: unknown key"),
    ({"clients": {}}, "demo.yml: scenario.clients: unknown key"),
    ({"faults": [{"kind": "broker-kill", "at_s": 1, "target": {"brokr": 1}}]}, "scenario.faults[0].target.brokr: unknown key"),
    ({"workload": {"consumer_groups": [{"name": "g", "size": 2}]}}, "scenario.workload.consumer_groups[0].size: unknown key"),
])
def test_unknown_keys_are_named_with_their_path(scenario, expected):
    assert expected in error_of(scenario=scenario)


def test_unknown_top_level_key():
    with pytest.raises(sc.ScenarioError, match=r"demo.yml: runs: unknown key"):
        sc.parse({"scenario": {"name": "x"}, "runs": []}, "demo.yml")


@pytest.mark.parametrize("scenario, expected", [
    ({"name": "Bad Name"}, "scenario.name: String should match pattern"),
    ({"workload": {"partitions": 0}}, "scenario.workload.partitions: Input should be greater than or equal to 1"),
    ({"workload": {"replication_factor": 16}}, "scenario.workload.replication_factor: Input should be less than or equal to 15"),
    ({"workload": {"min_insync_replicas": 0}},
     "scenario.workload.min_insync_replicas: Input should be greater than or equal to 1"),
    ({"workload": {"message_size": 8}}, "scenario.workload.message_size: Input should be greater than or equal to 16"),
    ({"workload": {"rate": 0}}, "scenario.workload.rate: Input should be greater than 0"),
    ({"workload": {"duration_s": 0}}, "scenario.workload.duration_s: Input should be greater than 0"),
    ({"workload": {"warmup_s": -1}}, "scenario.workload.warmup_s: Input should be greater than or equal to 0"),
    ({"workload": {"producers": 65}}, "scenario.workload.producers: Input should be less than or equal to 64"),
    ({"workload": {"keys": -1}}, "scenario.workload.keys: Input should be greater than or equal to 0"),
    ({"workload": {"topic": "Purchases!"}}, "scenario.workload.topic: String should match pattern"),
    ({"workload": {"consumer_groups": [{"name": "g", "consumers": 0}]}},
     "scenario.workload.consumer_groups[0].consumers: Input should be greater than or equal to 1"),
])
def test_value_ranges(scenario, expected):
    assert expected in error_of(scenario=scenario)


def test_settings_owned_by_the_workload_are_refused_in_topic_config():
    msg = error_of(scenario={"workload": {"topic_config": {"min.insync.replicas": "2"}}})
    assert "set min.insync.replicas with workload.min_insync_replicas" in msg
    msg = error_of(scenario={"workload": {"topic_config": {"unclean.leader.election.enable": "true"}}})
    assert "workload.unclean_leader_election" in msg


def test_consumer_group_names_are_unique():
    msg = error_of(scenario={"workload": {"consumer_groups": [{"name": "g"}, {"name": "g"}]}})
    assert "consumer group names must be unique" in msg


def test_acks_values():
    assert "acks must be one of 0, 1, all, -1 (got 'most')" in error_of(scenario={"client": {"producer": {"acks": "most"}}})
    [run] = parse(scenario={"client": {"producer": {"acks": -1}}})
    assert run.scenario.client.acks == "all"


def test_bootstrap_servers_come_from_the_inventory():
    msg = error_of(scenario={"client": {"producer": {"bootstrap.servers": "x:9092"}}})
    assert "bootstrap.servers comes from the inventory" in msg


def test_fault_kind_lists_the_allowed_values():
    msg = error_of(scenario={"faults": [{"kind": "broker-kil", "at_s": 1}]})
    assert "scenario.faults[0].kind: must be one of 'broker-kill', 'broker-stop', 'broker-pause', " \
           "'broker-restart', 'zookeeper-stop', 'controller-kill', 'controller-stop', 'controller-pause', " \
           "'quorum-loss', 'host-isolate', 'host-partition', 'packet-loss', 'network-delay' or 'disk-full' " \
           "(got 'broker-kil')" in msg


@pytest.mark.parametrize("target", [{}, {"broker": 1, "controller": True}, {"random": False}])
def test_fault_target_needs_exactly_one_choice(target):
    msg = error_of(scenario={"faults": [{"kind": "broker-kill", "at_s": 1, "target": target}]})
    assert "set exactly one of broker, leader_of, follower_of, replica_of, controller: true, random: true" in msg


def test_a_fault_without_a_kind_names_the_kinds():
    msg = error_of(scenario={"faults": [{"at_s": 1}]})
    assert "scenario.faults[0].kind: required: one of 'broker-kill', 'broker-stop', " in msg


def test_errors_inside_a_fault_name_its_path_without_its_kind():
    msg = error_of(scenario={"faults": [{"kind": "broker-pause", "at_s": -1}]})
    assert "scenario.faults[0].at_s: Input should be greater than or equal to 0" in msg


def test_heal_comes_after_inject():
    msg = error_of(scenario={"faults": [{"kind": "broker-stop", "at_s": 5, "heal_at_s": 5}]})
    assert "heal_at_s (5.0) must come after at_s (5.0)" in msg


def test_zookeeper_stop_takes_no_target():
    msg = error_of(scenario={"faults": [{"kind": "zookeeper-stop", "at_s": 1, "target": {"broker": 0}}]})
    assert "zookeeper-stop takes no target" in msg


def test_ports_apply_to_host_partition_only():
    msg = error_of(scenario={"faults": [{"kind": "host-isolate", "at_s": 1, "ports": [9092]}]})
    assert "scenario.faults[0].ports: unknown key" in msg
    msg = error_of(scenario={"faults": [{"kind": "host-partition", "at_s": 1, "ports": [0]}]})
    assert "scenario.faults[0].ports[0]" in msg and "greater than or equal to 1" in msg
    [run] = parse(scenario={"faults": [{"kind": "host-partition", "at_s": 1, "target": {"leader_of": 0},
                                        "ports": [9092]}]})
    assert run.scenario.fault_label == "host-partition (leader of 0; ports 9092) at 1 s"


def test_fault_falls_inside_the_measured_phase():
    msg = error_of(scenario={"workload": {"duration_s": 10}, "faults": [{"kind": "broker-kill", "at_s": 10}]})
    assert "faults[0].at_s (10): the first injection must fall inside workload.duration_s (10)" in msg


@pytest.mark.parametrize("field", ["leader_of", "follower_of", "replica_of"])
def test_leader_of_follower_of_and_replica_of_name_a_partition_of_the_topic(field):
    msg = error_of(scenario={"faults": [{"kind": "broker-kill", "at_s": 1, "target": {field: 3}}]})
    assert f"faults[0].target.{field} (3) is not a partition of a 3-partition topic" in msg


def test_a_scenario_that_cannot_run_is_an_error_naming_its_field():
    msg = error_of(scenario={"workload": {"replication_factor": 1, "min_insync_replicas": 2}})
    assert msg == ("demo.yml: scenario.workload.min_insync_replicas: min.insync.replicas 2 > replication factor 1: "
                   "every acks=all write would fail")
    msg = error_of(scenario={"workload": {"replication_factor": 5}}, cluster=THREE_BROKERS)
    assert msg == ("demo.yml: scenario.workload.replication_factor: replication factor 5 > 3 brokers in the inventory "
                   "(allowed: 1 to 3)")


def test_a_sweep_none_of_whose_points_can_run_is_an_error():
    msg = error_of(sweep={"workload.replication_factor": [4, 5]}, cluster=THREE_BROKERS)
    assert msg == ("demo.yml: sweep (workload.replication_factor): every point is impossible: replication factor 4 > "
                   "3 brokers in the inventory (allowed: 1 to 3); replication factor 5 > 3 brokers in the inventory "
                   "(allowed: 1 to 3)")


def test_min_isr_above_rf_in_a_sweep_point_is_skipped_with_its_reason():
    runs = parse(sweep={"workload.min_insync_replicas": [1, 2]}, scenario={"workload": {"replication_factor": 1}})
    assert runs[1].scenario is None and "min.insync.replicas 2 > replication factor 1" in runs[1].skipped


def test_a_broker_the_inventory_does_not_have_is_refused():
    kill = {"kind": "broker-kill", "at_s": 1, "target": {"broker": 7}}
    msg = error_of(scenario={"faults": [kill]}, cluster=THREE_BROKERS)
    assert msg == "demo.yml: scenario.faults[0].target.broker: 7 is not a broker of the inventory; allowed: 0, 1, 2"
    msg = error_of(sweep={"faults": [[], [kill]]}, cluster=THREE_BROKERS)
    assert "demo.yml (sweep point {'faults': [{'kind': 'broker-kill'" in msg and "target.broker: 7 is not" in msg
    [run] = parse(scenario={"faults": [{**kill, "target": {"broker": 2}}]}, cluster=THREE_BROKERS)
    assert run.scenario.faults[0].target.broker == 2


def test_sweep_expands_the_cross_product_and_skips_impossible_points():
    runs = parse(sweep={"client.producer.acks": ["0", "1", "all"], "workload.replication_factor": [1, 2, 3, 4],
                        "workload.min_insync_replicas": [1, 2]}, cluster=THREE_BROKERS)
    assert len(runs) == 3 * 4 * 2
    skipped = {r.index: r.skipped for r in runs if r.skipped}
    assert sum("min.insync.replicas 2 > replication factor 1" in s for s in skipped.values()) == 3
    assert sum("replication factor 4 > 3 brokers" in s for s in skipped.values()) == 6
    ok = [r for r in runs if r.scenario]
    assert len(ok) == 24 - 9
    first = ok[0]
    assert first.point == {"client.producer.acks": "0", "workload.replication_factor": 1, "workload.min_insync_replicas": 1}
    assert first.scenario.client.producer == {"acks": "0"} and first.scenario.name == "demo-000"
    assert len({r.scenario.name for r in ok}) == len(ok)


def test_sweep_over_dotted_librdkafka_keys_and_faults():
    kill = {"kind": "broker-kill", "at_s": 5, "target": {"leader_of": 0}}
    runs = parse(sweep={"client.producer.linger.ms": [0, 20], "faults": [[], [kill]]})
    assert [(r.scenario.client.producer["linger.ms"], len(r.scenario.faults)) for r in runs] == [(0, 0), (0, 1), (20, 0), (20, 1)]


@pytest.mark.parametrize("sweep, expected", [
    ({"workloads.partitions": [1]}, "sweep key 'workloads.partitions' must start with workload."),
    ({"workload.partitions": []}, "sweep.workload.partitions needs at least one value"),
])
def test_sweep_keys_are_checked(sweep, expected):
    assert expected in error_of(sweep=sweep)


def test_a_bad_sweep_value_names_the_point():
    msg = error_of(sweep={"workload.partitions": [3, 0]})
    assert "sweep point {'workload.partitions': 0}" in msg and "greater than or equal to 1" in msg


def test_files_that_are_not_scenarios(tmp_path):
    with pytest.raises(sc.ScenarioError, match="cannot read"):
        sc.load(tmp_path / "missing.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text("scenario: [unclosed\n")
    with pytest.raises(sc.ScenarioError, match="bad.yml: not valid YAML"):
        sc.load(bad)
    bad.write_text("- a list\n")
    with pytest.raises(sc.ScenarioError, match="must be a mapping"):
        sc.load(bad)


def test_network_faults_need_hosts_with_addresses_of_their_own():
    doc = {"scenario": {"name": "demo", "faults": [{"kind": "broker-kill", "at_s": 1},
                                                   {"kind": "host-isolate", "at_s": 2}]}}
    with pytest.raises(sc.ScenarioError) as info:
        sc.parse(doc, "demo.yml", THREE_BROKERS)
    assert ("demo.yml: scenario.faults[1].kind: host-isolate needs brokers on hosts with addresses of their own"
            in str(info.value))
    assert "allowed here: broker-kill, broker-stop, broker-pause, broker-restart, zookeeper-stop" in str(info.value)
    assert len(sc.parse(doc, "demo.yml", sc.ClusterShape(broker_ids=(0, 1, 2), hosts=3))) == 1


def test_a_cluster_known_only_by_its_bootstrap_refuses_faults_procedures_and_feature_levels():
    """Every one named with its field and what is allowed; load alone runs."""
    hostless = sc.ClusterShape(broker_ids=(0, 1, 2), hosts=3, metadata_mode="kraft", no_hosts="this run names only --bootstrap")
    doc = {"scenario": {"name": "demo", "workload": {"eligible_leader_replicas": True},
                        "faults": [{"kind": "broker-kill", "at_s": 1, "target": {"leader_of": 0}}],
                        "procedures": [{"playbook": "rolling-restart", "at_s": 2}]}}
    with pytest.raises(sc.ScenarioError) as info:
        sc.parse(doc, "demo.yml", hostless)
    said = " ".join(str(info.value).split())
    need = "needs an inventory naming the cluster's hosts (--inventory), and this run names only --bootstrap"
    assert f"demo.yml: scenario.faults[0].kind: broker-kill {need}; allowed here: no faults" in said
    assert f"demo.yml: scenario.procedures[0].playbook: rolling-restart {need}; allowed here: no procedures" in said
    assert (f"demo.yml: scenario.workload.eligible_leader_replicas: setting a feature level {need}; allowed here: null"
            in said)
    [run] = sc.parse({"scenario": {"name": "demo"}}, "demo.yml", hostless)
    assert run.scenario is not None


def test_a_cluster_this_project_did_not_deploy_takes_faults_but_refuses_procedures_and_feature_levels():
    foreign = sc.ClusterShape(broker_ids=(1, 2, 3), hosts=3, metadata_mode="kraft", controller_ids=(9991, 9992, 9993),
                              not_deployed="cp.yml says this project did not deploy k1 (kafka_bench_service_control: systemd)")
    doc = {"scenario": {"name": "demo", "workload": {"eligible_leader_replicas": False},
                        "faults": [{"kind": "broker-kill", "at_s": 1, "target": {"broker": 2}}],
                        "procedures": [{"playbook": "rolling-restart", "at_s": 2}]}}
    with pytest.raises(sc.ScenarioError) as info:
        sc.parse(doc, "demo.yml", foreign)
    said = " ".join(str(info.value).split())
    why = "runs this project's roles on the hosts, and cp.yml says this project did not deploy k1"
    assert f"demo.yml: scenario.procedures[0].playbook: rolling-restart {why}" in said and "allowed here: no procedures" in said
    assert f"demo.yml: scenario.workload.eligible_leader_replicas: setting a feature level {why}" in said
    assert "faults[0]" not in said
    del doc["scenario"]["procedures"], doc["scenario"]["workload"]
    [run] = sc.parse(doc, "demo.yml", foreign)
    assert run.scenario is not None and run.scenario.faults[0].kind == "broker-kill"


def test_disk_full_needs_brokers_whose_data_has_a_filesystem_of_its_own():
    doc = {"scenario": {"name": "demo", "faults": [{"kind": "disk-full", "at_s": 1, "target": {"leader_of": 0}}]}}
    shared = sc.ClusterShape(broker_ids=(0, 1, 2), hosts=3, no_data_disk=("broker0", "broker1", "broker2"))
    with pytest.raises(sc.ScenarioError) as info:
        sc.parse(doc, "demo.yml", shared)
    said = str(info.value)
    assert ("demo.yml: scenario.faults[0].kind: disk-full fills a filesystem that holds only Kafka's data, and brokers "
            "broker0, broker1, broker2 name none (kafka_bench_fault_disk_mount: its mount point;") in said
    assert "allowed here: broker-kill," in said and "disk-full" not in said.split("allowed here:")[1]
    [run] = sc.parse(doc, "demo.yml", sc.ClusterShape(broker_ids=(0, 1, 2), hosts=3))
    assert run.scenario is not None and run.scenario.faults[0].label == "disk-full (leader of 0) at 1 s"


KRAFT_SHAPE = sc.ClusterShape(broker_ids=(0, 1, 2), hosts=1, metadata_mode="kraft", controller_ids=(0, 1, 2))


def test_faults_of_the_other_metadata_mode_are_refused_naming_the_allowed_kinds():
    zk_fault = {"scenario": {"name": "demo", "faults": [{"kind": "zookeeper-stop", "at_s": 1}]}}
    with pytest.raises(sc.ScenarioError) as info:
        sc.parse(zk_fault, "demo.yml", KRAFT_SHAPE)
    assert ("demo.yml: scenario.faults[0].kind: zookeeper-stop needs a zookeeper cluster; this inventory runs kraft, "
            "so allowed here: broker-kill, broker-stop, broker-pause, broker-restart, controller-kill, controller-stop, "
            "controller-pause, quorum-loss, host-isolate, host-partition") in str(info.value)
    kraft_fault = {"scenario": {"name": "demo", "faults": [{"kind": "quorum-loss", "at_s": 1}]}}
    with pytest.raises(sc.ScenarioError, match="quorum-loss needs a kraft cluster; this inventory runs zookeeper, "
                                               "so allowed here: broker-kill, .*zookeeper-stop"):
        sc.parse(kraft_fault, "demo.yml", THREE_BROKERS)
    assert len(sc.parse(kraft_fault, "demo.yml", KRAFT_SHAPE)) == 1


def test_controller_targets_are_checked_against_the_inventory():
    doc = {"scenario": {"name": "demo", "faults": [{"kind": "controller-kill", "at_s": 1, "target": {"node": 7}},
                                                   {"kind": "broker-kill", "at_s": 2, "target": {"controller": True}}]}}
    with pytest.raises(sc.ScenarioError) as info:
        sc.parse(doc, "demo.yml", KRAFT_SHAPE)
    assert "scenario.faults[0].target.node: 7 is not a controller of the inventory; allowed: 0, 1, 2" in str(info.value)
    assert ("scenario.faults[1].target.controller: in KRaft the active controller is a controller, not a broker: use "
            "controller-kill, controller-stop or controller-pause with target {active: true}") in str(info.value)


def test_a_scenario_becomes_its_kraft_variant_on_a_kraft_cluster():
    [path] = (ROOT / "benchmarks" / "suites" / "seeds").glob("05-*.yml")
    [zk] = sc.load(path, THREE_BROKERS)
    [kraft] = sc.load(path, KRAFT_SHAPE)
    assert [f.kind for f in zk.scenario.faults] == ["zookeeper-stop"]
    assert [f.kind for f in kraft.scenario.faults] == ["quorum-loss"]
    assert "KRaft equivalent of ZooKeeper stopped" in kraft.scenario.description
    assert kraft.scenario.workload == zk.scenario.workload
    bad = {"scenario": {"name": "demo"}, "kraft": {"faults": [{"kind": "quorum-loss", "at_s": 1, "target": {"node": 1}}]}}
    with pytest.raises(sc.ScenarioError, match=r"demo.yml \(its kraft variant\).*quorum-loss takes no target"):
        sc.parse(bad, "demo.yml", THREE_BROKERS)


def test_eligible_leader_replicas_need_a_kraft_cluster():
    """ELR on is refused on ZooKeeper (skipped in a sweep, naming what is allowed); off is what
    ZooKeeper always runs with; on KRaft both run."""
    msg = error_of(scenario={"workload": {"eligible_leader_replicas": True}}, cluster=THREE_BROKERS)
    assert msg == ("demo.yml: scenario.workload.eligible_leader_replicas: Eligible Leader Replicas need a KRaft cluster "
                   "(Kafka 4.x); this inventory runs zookeeper, which has none (allowed here: false or null)")
    sweep = {"workload.eligible_leader_replicas": [False, True]}
    zk = parse(sweep=sweep, cluster=THREE_BROKERS)
    assert [r.scenario.workload.eligible_leader_replicas if r.scenario else r.skipped[:29] for r in zk] == [
        False, "Eligible Leader Replicas need"]
    kraft = parse(sweep=sweep, cluster=KRAFT_SHAPE)
    assert [r.scenario.workload.eligible_leader_replicas for r in kraft if r.scenario] == [False, True]


def test_the_durability_suite_runs_elr_off_and_on_on_kraft_only():
    for path in sorted((ROOT / "benchmarks" / "suites" / "durability").glob("*.yml")):
        zk, kraft = sc.load(path, THREE_BROKERS), sc.load(path, KRAFT_SHAPE)
        assert not any(r.scenario and r.scenario.workload.eligible_leader_replicas for r in zk), path
        values = {r.scenario.workload.eligible_leader_replicas for r in kraft if r.scenario}
        assert values == ({False, True} if "leader-kill" not in path.name else {None}), path


def test_procedures_are_checked_against_the_scenario_and_the_inventory():
    unknown = {"scenario": {"name": "demo", "procedures": [{"playbook": "site", "at_s": 1}]}}
    with pytest.raises(sc.ScenarioError, match=r"demo.yml: scenario.procedures\[0\].playbook: must be one of "
                                               r"'rolling-restart', 'migrate-to-kraft', 'upgrade', "
                                               r"'reassign-partitions' or 'replace-broker' \(got 'site'\)"):
        sc.parse(unknown, "demo.yml")
    late = {"scenario": {"name": "demo", "workload": {"duration_s": 10},
                         "procedures": [{"playbook": "rolling-restart", "at_s": 10}]}}
    with pytest.raises(sc.ScenarioError, match=r"procedures\[0\].at_s \(10.0\) must fall inside workload.duration_s"):
        sc.parse(late, "demo.yml")
    migrate = {"scenario": {"name": "demo", "procedures": [{"playbook": "migrate-to-kraft", "at_s": 1}]}}
    with pytest.raises(sc.ScenarioError) as info:
        sc.parse(migrate, "demo.yml", KRAFT_SHAPE)
    assert ("demo.yml: scenario.procedures[0].playbook: migrate-to-kraft needs a zookeeper cluster; this inventory "
            "runs kraft, so allowed here: rolling-restart, upgrade, reassign-partitions, replace-broker") in str(info.value)
    with pytest.raises(sc.ScenarioError, match="needs 1, 3 or 5 KRaft controllers waiting for the migration .* "
                                               "this inventory has 0"):
        sc.parse(migrate, "demo.yml", THREE_BROKERS)
    waiting = sc.ClusterShape(broker_ids=(0, 1, 2), hosts=1, migration_controllers=3)
    [run] = sc.parse(migrate, "demo.yml", waiting)
    assert run.scenario is not None and run.scenario.procedures[0].playbook_file == "migrate-to-kraft.yml"


def test_upgrade_and_reassignment_parameters_are_checked_before_anything_runs():
    def procedure(**fields):
        return {"scenario": {"name": "demo", "workload": {"replication_factor": 2, "min_insync_replicas": 1},
                             "procedures": [{"at_s": 1, **fields}]}}

    def errors(doc, shape=None):
        with pytest.raises(sc.ScenarioError) as info:
            sc.parse(doc, "demo.yml", shape)
        return str(info.value)

    assert "scenario.procedures[0].to_version: Field required" in errors(procedure(playbook="upgrade"))
    assert ("scenario.procedures[0].to_version: String should match pattern"
            in errors(procedure(playbook="upgrade", to_version="4.3")))
    zookeeper = sc.ClusterShape(broker_ids=(0, 1, 2), hosts=1, kafka_version="3.9.2")
    assert ("scenario.procedures[0].to_version: Kafka 4.3.1 has no ZooKeeper mode, and this inventory runs ZooKeeper: "
            "migrate to KRaft on 3.9 first" in errors(procedure(playbook="upgrade", to_version="4.3.1"), zookeeper))
    kraft = sc.ClusterShape(broker_ids=(0, 1, 2), hosts=1, metadata_mode="kraft", kafka_version="4.3.1")
    assert ("to_version: 3.9.2 is older than the Kafka 4.3.1 this inventory runs: upgrade.yml does not downgrade"
            in errors(procedure(playbook="upgrade", to_version="3.9.2"), kraft))
    [run] = sc.parse(procedure(playbook="upgrade", to_version="4.3.1"), "demo.yml",
                     sc.ClusterShape(broker_ids=(0, 1, 2), hosts=1, metadata_mode="kraft", kafka_version="3.9.2"))
    assert run.scenario is not None and run.scenario.procedures[0].extravars("t")["kafka_upgrade_version"] == "4.3.1"

    assert ("scenario: procedures[0].brokers: 1 broker(s) cannot hold workload.replication_factor 2 replicas"
            in errors(procedure(playbook="reassign-partitions", brokers=[0])))
    assert "names a broker twice" in errors(procedure(playbook="reassign-partitions", brokers=[0, 0]))
    assert "scenario.procedures[0].throttle_bytes: Input should be greater than or equal to 0" in errors(
        procedure(playbook="reassign-partitions", brokers=[0, 1], throttle_bytes=-1))
    assert ("scenario.procedures[0].brokers: no broker 7 in this inventory (brokers: 0, 1, 2)"
            in errors(procedure(playbook="reassign-partitions", brokers=[0, 7]), kraft))
    assert "scenario.procedures[0].unknown: unknown key" in errors(
        procedure(playbook="reassign-partitions", brokers=[0, 1], unknown=1))

    assert "scenario.procedures[0].broker: no broker 5 in this inventory" in errors(
        procedure(playbook="replace-broker", broker=5), kraft)
    assert "broker 2 is also a KRaft controller (a combined node)" in errors(
        procedure(playbook="replace-broker", broker=2),
        sc.ClusterShape(broker_ids=(0, 1, 2), hosts=1, metadata_mode="kraft", controller_ids=(0, 1, 2)))
    alone = procedure(playbook="replace-broker", broker=2)
    alone["scenario"]["workload"] = {"replication_factor": 1}
    assert "replacing its disks loses them" in errors(alone)
    [run] = sc.parse(procedure(playbook="replace-broker", broker=2), "demo.yml", zookeeper)
    assert run.scenario is not None and run.scenario.procedures[0].extravars("t") == {"replace_broker_id": 2}


def test_the_evidence_suite_kills_the_leader_at_least_60_times_and_repeats_its_controls_ten_times():
    suite = ROOT / "benchmarks" / "suites" / "evidence"
    for shape in (THREE_BROKERS, KRAFT_SHAPE):
        [safe] = [r.scenario for r in sc.load(suite / "00-safe-profile-leader-kills.yml", shape)]
        assert safe is not None and len(safe.injections()) >= 60 and not safe.quick
        assert safe.faults[0].count == len(safe.injections()), "a skipped kill is made up for: that many act"
        w, producer = safe.workload, safe.client.producer
        assert (safe.client.acks, w.replication_factor, w.min_insync_replicas, w.unclean_leader_election,
                producer["enable.idempotence"]) == ("all", 3, 2, False, True)
        assert {(i.fault.kind, i.fault.target_words) for i in safe.injections()} == {("broker-kill", "leader of 0")}
        for control in ("10-negative-acks1-lagging-followers.yml", "11-negative-unclean-election.yml"):
            runs = [r.scenario for r in sc.load(suite / control, shape) if r.scenario]
            assert runs and all(s.trials == 10 and s.expect_loss for s in runs), (control, shape)


@pytest.mark.parametrize("client, message", [
    ({"producer": {"transactional.id": "x"}}, "demo.yml: scenario.client: producer.transactional.id: remove it with "
                                              "transactions (set per producer from the run id)"),
    ({"producer": {"acks": 1}}, "scenario.client: producer.acks: a transactional producer needs acks all (got '1')"),
    ({"consumer": {"isolation.level": "read_uncommitted"}},
     "scenario.client: consumer.isolation.level: with transactions every reader reads committed (allowed: "
     "read_committed; got 'read_uncommitted')"),
    ({"transactions": {"abort_ratio": 1.5}}, "scenario.client.transactions.abort_ratio: Input should be less than or "
                                             "equal to 1"),
])
def test_a_transactional_profile_refuses_what_contradicts_it(client, message):
    transactions = {"transactions": {"messages": 10}} if "transactions" not in client else {}
    assert message in error_of(scenario={"client": {**client, **transactions}})


def test_the_transaction_coordinator_is_a_target_of_transactional_runs_only():
    fault = {"kind": "broker-kill", "at_s": 5, "target": {"transaction_coordinator": True}}
    assert ("demo.yml: scenario: faults[0].target.transaction_coordinator: needs a transactional producer (client.transactions)"
            in error_of(scenario={"faults": [fault]}))
    [run] = parse(scenario={"faults": [fault], "client": {"transactions": {"messages": 5, "abort_ratio": 0.2}}})
    assert run.scenario.client.transactions is not None and run.scenario.client.transactions.messages == 5


def test_the_evidence_suite_checks_exactly_once_under_leader_and_coordinator_kills():
    """... each on librdkafka and on the Java producer, the rest of the profile the same: the report
    shows the two clients side by side."""
    files = sorted((ROOT / "benchmarks" / "suites" / "evidence").glob("2*.yml"))
    targets = []
    for path in files:
        librdkafka, java = [run.scenario for run in sc.load(path)]
        assert librdkafka and java and librdkafka.client.transactions and len(librdkafka.injections()) == 10
        assert librdkafka.faults[0].count == 10, "ten kills act, a skipped one made up for"
        assert (librdkafka.client.producer_library, java.client.producer_library) == ("librdkafka", "java")
        assert librdkafka.model_copy(update={"client": java.client, "name": java.name}) == java
        targets.append(librdkafka.faults[0].target.words)
    assert targets == ["leader of 0", "transaction coordinator"]


def test_the_consumer_group_protocol_needs_a_kraft_cluster():
    doc = {"scenario": {"name": "demo", "client": {"consumer": {"group.protocol": "consumer"}}}}
    with pytest.raises(sc.ScenarioError, match=r"demo.yml: scenario.client.consumer.group.protocol: the consumer group "
                                               r"protocol \(KIP-848\) needs a KRaft cluster \(Kafka 4.x\); this inventory "
                                               r"runs zookeeper \(allowed here: classic\)"):
        sc.parse(doc, "demo.yml", THREE_BROKERS)
    [run] = sc.parse(doc, "demo.yml", KRAFT_SHAPE)
    assert run.scenario is not None and run.scenario.client.consumer["group.protocol"] == "consumer"


def test_the_lab_suite_validates_on_lab_hosts_and_its_full_disk_is_refused_on_one_machine():
    lab_hosts = sc.ClusterShape(broker_ids=(0, 1, 2), hosts=3)
    files = sorted((ROOT / "benchmarks" / "suites" / "lab").glob("*.yml"))
    kinds = {f.kind for path in files for run in sc.load(path, lab_hosts) for f in run.scenario.faults}
    assert {"broker-kill", "host-isolate", "host-partition", "disk-full", "packet-loss"} <= kinds
    one_machine = sc.ClusterShape(broker_ids=(0, 1, 2), hosts=1, no_data_disk=("broker0", "broker1", "broker2"))
    with pytest.raises(sc.ScenarioError, match="02-disk-full.yml: scenario.faults.0..kind: disk-full fills a filesystem"):
        sc.load(ROOT / "benchmarks" / "suites" / "lab" / "02-disk-full.yml", one_machine)


def test_a_profile_on_the_java_producer_takes_the_settings_both_clients_share_only():
    error = error_of(scenario={"client": {"producer_library": "java", "producer": {"queue.buffering.max.ms": 5}}})
    assert "scenario.client: producer.queue.buffering.max.ms: not a setting both producer libraries share; with " \
           "producer_library java the allowed keys are acks, batch.size," in error
    assert "demo.yml: scenario.client.producer_library: must be one of 'librdkafka' or 'java' (got 'jvm')" in error_of(
        scenario={"client": {"producer_library": "jvm"}})
    assert "client.producer_library: java runs on an open-loop schedule; set workload.rate" in error_of(
        scenario={"client": {"producer_library": "java"}, "workload": {"rate": None}})
    [run] = parse(scenario={"client": {"producer_library": "java", "producer": {"acks": "all", "linger.ms": 5}}})
    assert run.scenario is not None and run.scenario.client.producer_library == "java"



SAFE_PRODUCER = {"acks": "all", "enable.idempotence": True, "linger.ms": 5}


def test_a_client_named_by_a_shared_profile_is_that_profile():
    [named] = parse({"client": "safe"})
    [written] = parse({"client": {"producer": SAFE_PRODUCER}})
    assert named.scenario == written.scenario


def test_a_profile_is_extended_key_by_key():
    [run] = parse({"client": {"profile": "safe", "name": "slower", "producer": {"linger.ms": 50},
                              "consumer": {"group.protocol": "consumer"}}})
    client = run.scenario.client
    assert client.name == "slower" and client.producer == {**SAFE_PRODUCER, "linger.ms": 50}
    assert client.consumer == {"group.protocol": "consumer"}


def test_a_sweep_over_profiles_records_the_clients_they_stand_for():
    runs = parse(sweep={"client": [{"profile": "safe", "name": "eager"}, {"producer": {"acks": "1"}}]})
    assert runs[0].point == {"client": {"producer": SAFE_PRODUCER, "name": "eager"}}
    assert runs[0].scenario.client.producer == SAFE_PRODUCER and runs[1].scenario.client.acks == "1"


@pytest.mark.parametrize("client", ["sfae", {"profile": "../seeds/00-atu-lab"}, {"profile": 3}])
def test_an_unknown_profile_is_named_with_the_profiles_there_are(client):
    message = error_of(scenario={"client": client})
    assert message.startswith("demo.yml: scenario.client: no client profile ") and "the profiles are safe" in message


def test_no_suite_file_copies_a_shared_profile():
    """A copy would drift from the profile the other scenarios share: name it instead."""
    profiles = {name: client_profile.named_client(name, "test") for name in client_profile.client_profiles()}
    for path in sorted((ROOT / "benchmarks" / "suites").glob("*/*.yml")):
        doc = scenario_file.read_yaml(path.read_text())
        clients = [doc["scenario"].get("client"), *doc.get("sweep", {}).get("client", [])]
        for client in clients:
            if isinstance(client, dict) and "profile" not in client:
                copied = [name for name, profile in profiles.items()
                          if profile.get("producer") == client.get("producer")]
                assert not copied, f"{path.relative_to(ROOT)}: client repeats the {copied[0]} profile; name it"
