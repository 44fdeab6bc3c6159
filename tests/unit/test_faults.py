"""Fault targeting, the journal, injection and healing, over a recording fake runner."""

from __future__ import annotations

import dataclasses
import random

import pytest
from pydantic import TypeAdapter

from benchmarks.harness import faults
from benchmarks.hosts import inventory
from benchmarks.hosts.ansible import PlaybookResult
from benchmarks.kafka.cluster import BrokerState, ClusterStatus, ControllerState, PartitionState, QuorumState
from benchmarks.spec.fault_kinds import KINDS, Fault, spec_of
from benchmarks.spec.fault_targets import FaultError, Resolved, Situation
from tests.conftest import LOCAL_INVENTORY, ROOT

INV = inventory.load(LOCAL_INVENTORY)
FAULT: TypeAdapter = TypeAdapter(Fault)


def status(alive=(0, 1, 2), controller=1, leaders=(2, 0, 1)):
    return ClusterStatus("c", controller, tuple(BrokerState(b.broker_id, b.host, b.port, b.name, b.broker_id in alive)
                                                for b in INV.brokers),
                         tuple(PartitionState("t", p, leader, (0, 1, 2), (0, 1, 2)) for p, leader in enumerate(leaders)), ())


class FakeRunner:
    def __init__(self, fail_on=()):
        self.calls, self.fail_on = [], set(fail_on)

    def run(self, playbook, inventory, extravars=None, limit=None, check=False, progress=None):
        self.calls.append((playbook, (extravars or {}).get("fault_phase"), limit))
        rc = 2 if playbook in self.fail_on else 0
        return PlaybookResult(playbook, rc, "failed" if rc else "successful", {"changed": {}}, [], 0.1)


def spec(**fault):
    return FAULT.validate_python({"at_s": 1, **fault})


def resolve(fault, status_now=None, rng=None, exclude=frozenset()):
    return fault.resolve(Situation(INV, status_now, "t", rng or random.Random(1), exclude))


@pytest.mark.parametrize("target, hosts, broker, reason", [
    ({"broker": 2}, ("broker2",), 2, "broker 2"),
    ({"controller": True}, ("broker1",), 1, "controller: broker 1"),
    ({"leader_of": 1}, ("broker0",), 0, "leader of t-1: broker 0"),
    ({"follower_of": 1}, ("broker1",), 1, "follower of t-1: broker 1"),
    ({"replica_of": 1}, ("broker0",), 0, "replica of t-1 (leader): broker 0"),
])
def test_targets_resolve_to_inventory_hosts(target, hosts, broker, reason):
    assert resolve(spec(kind="broker-kill", target=target), status()) == Resolved(hosts, broker, reason)


def test_second_follower_fault_picks_the_other_follower():
    pause = spec(kind="broker-pause", target={"follower_of": 0})
    first = resolve(pause, status())
    second = resolve(pause, status(), exclude=frozenset({first.broker_id}))
    assert (first.broker_id, second.broker_id) == (0, 1)
    with pytest.raises(faults.FaultError, match="no live follower"):
        resolve(pause, status(), exclude=frozenset({0, 1}))


def test_replica_faults_take_a_partitions_replicas_down_whichever_leads_by_then():
    """Seed 002 kills both replicas of its partition one after the other: if leadership moved
    between the two resolutions (a preferred-leader election after a heal), the second still finds
    the replica the first left, where a leader_of then follower_of pair found no follower."""
    kill = spec(kind="broker-kill", target={"replica_of": 0})
    first = resolve(kill, status(leaders=(2, 0, 1)))
    assert (first.broker_id, first.reason) == (2, "replica of t-0 (leader): broker 2")
    moved = status(leaders=(0, 0, 1))  # the election handed t-0 to broker 0 meanwhile
    second = resolve(kill, moved, exclude=frozenset({first.broker_id}))
    assert (second.broker_id, second.reason) == (0, "replica of t-0 (leader): broker 0")
    third = resolve(kill, moved, exclude=frozenset({0, 2}))
    assert (third.broker_id, third.reason) == (1, "replica of t-0 (follower): broker 1")
    assert resolve(kill, status(alive=(1, 2), leaders=(2, 0, 1)), exclude=frozenset({2})).broker_id == 1
    with pytest.raises(faults.FaultError, match="t-0 has no live replica left that is not already under a fault"):
        resolve(kill, status(alive=(0, 1)), exclude=frozenset({0, 1}))
    assert not kill.can_miss, "no role: the act cannot miss it"


def test_random_target_is_seeded_and_only_picks_live_brokers():
    kill = spec(kind="broker-kill")
    picks = {resolve(kill, status(alive=(0, 2)), random.Random(seed)).broker_id for seed in range(20)}
    assert picks == {0, 2}
    assert resolve(kill, status(), random.Random(7)) == resolve(kill, status(), random.Random(7))


def test_zookeeper_stop_targets_every_server_and_leaderless_partitions_are_refused():
    stop = spec(kind="zookeeper-stop")
    assert not stop.reads_cluster and resolve(stop).hosts == ("zk0",)
    with pytest.raises(faults.FaultError, match="t-0 has no leader"):
        resolve(spec(kind="broker-kill", target={"leader_of": 0}), status(leaders=(None, 0, 1)))


def test_every_kind_has_its_playbook_and_only_its_own_options():
    for kind, cls in KINDS.items():
        assert (ROOT / "playbooks" / cls.playbook).is_file(), kind
    assert spec(kind="host-partition", ports=[9092]).extravars() == {"fault_ports": [9092]}
    assert spec(kind="host-partition").extravars() == {} == spec(kind="broker-kill").extravars()
    assert [k for k, cls in KINDS.items() if cls.needs_own_addresses] == ["host-isolate", "host-partition", "packet-loss",
                                                                            "network-delay"]
    assert [k for k, cls in KINDS.items() if cls.needs_data_disk] == ["disk-full"]
    with pytest.raises(faults.FaultError, match="unknown fault 'slow-disk'; known: broker-kill, "):
        spec_of("slow-disk")


def test_injection_journals_intent_before_the_playbook_and_revert_heals(tmp_path):
    journal = faults.Journal(tmp_path / "journal.jsonl")
    runner = FakeRunner()
    injector = faults.AnsibleFaultInjector(runner, LOCAL_INVENTORY, journal)
    record = injector.new_record("broker-pause", ["broker1"], 1, "broker 1")
    injector.inject(record)
    assert [e["phase"] for e in journal.entries()] == ["intent", "injected"]
    assert journal.outstanding() == [record]
    injector.revert(record)
    assert runner.calls == [("faults/broker-pause.yml", "inject", "broker1"), ("faults/broker-pause.yml", "revert", "broker1")]
    assert journal.outstanding() == []


def test_a_failed_injection_stays_outstanding(tmp_path):
    journal = faults.Journal(tmp_path / "journal.jsonl")
    injector = faults.AnsibleFaultInjector(FakeRunner(fail_on={"faults/broker-kill.yml"}), LOCAL_INVENTORY, journal)
    record = injector.new_record("broker-kill", ["broker0"], 0, "broker 0")
    with pytest.raises(faults.FaultError, match="injecting broker-kill on broker0 failed"):
        injector.inject(record)
    assert journal.outstanding() == [record], "the intent may have taken effect: heal must revert it"


def test_heal_reverts_zookeeper_first_then_starts_everything_and_is_idempotent(tmp_path):
    journal = faults.Journal(tmp_path / "journal.jsonl")
    injector = faults.AnsibleFaultInjector(FakeRunner(), LOCAL_INVENTORY, journal)
    kill = injector.new_record("broker-kill", ["broker2"], 2, "broker 2")
    zk = injector.new_record("zookeeper-stop", ["zk0"], None, "every ZooKeeper server")
    injector.inject(kill)
    journal.write(zk, "intent")  # the runner died right after writing its intent
    with (tmp_path / "journal.jsonl").open("a") as handle:
        handle.write('{"fault_id": "torn')  # and a line torn by the crash
    runner = FakeRunner()
    report = faults.heal(runner, LOCAL_INVENTORY, journal)
    assert [r.kind for r in report.reverted] == ["zookeeper-stop", "broker-kill"]
    assert runner.calls == [("faults/zookeeper-stop.yml", "revert", "zk0"), ("faults/broker-kill.yml", "revert", "broker2"),
                            ("start.yml", None, None)]
    again = FakeRunner()
    assert faults.heal(again, LOCAL_INVENTORY, journal).reverted == []
    assert again.calls == [("start.yml", None, None)]


@pytest.mark.parametrize(("outstanding", "up", "calls"), [
    (False, True, []),  # nothing journaled, every node seen up: no playbook at all
    (False, False, [("start.yml", None, None)]),  # a node down (or not seen) that no fault of ours explains
    (True, True, [("faults/broker-kill.yml", "revert", "broker2")]),  # the revert brought every node back
    (True, False, [("faults/broker-kill.yml", "revert", "broker2"), ("start.yml", None, None)]),
])
def test_heal_runs_start_only_when_a_node_is_not_seen_up_after_the_reverts(tmp_path, outstanding, up, calls):
    journal = faults.Journal(tmp_path / "journal.jsonl")
    if outstanding:
        injector = faults.AnsibleFaultInjector(FakeRunner(), LOCAL_INVENTORY, journal)
        injector.inject(injector.new_record("broker-kill", ["broker2"], 2, "broker 2"))
    runner = FakeRunner()
    why = [] if up else ["broker 2 (broker2, 127.0.0.1:9094): its process is stopped"]
    report = faults.heal(runner, LOCAL_INVENTORY, journal, not_up=lambda: why)
    assert runner.calls == calls
    assert (report.start is not None) is (("start.yml", None, None) in calls)
    assert report.not_up == why, "the report says why start.yml ran"


def test_unknown_fault_kind_is_refused():
    with pytest.raises(faults.FaultError, match="unknown fault 'broker-melt'"):
        faults.AnsibleFaultInjector(FakeRunner(), LOCAL_INVENTORY).new_record("broker-melt", ["broker0"], 0, "")


def test_a_network_fault_keeps_its_options_through_the_journal_to_heal(tmp_path):
    journal = faults.Journal(tmp_path / "journal.jsonl")
    seen = []

    class Recording(FakeRunner):
        def run(self, playbook, inventory, extravars=None, limit=None, check=False, progress=None):
            seen.append((playbook, dict(extravars or {}), limit))
            return super().run(playbook, inventory, extravars, limit, check, progress)

    injector = faults.AnsibleFaultInjector(Recording(), LOCAL_INVENTORY, journal)
    record = injector.new_record("host-partition", ["broker0"], 0, "leader of t-0: broker 0", {"fault_ports": [9092]})
    injector.inject(record)  # ... and the runner dies here: heal must cut the same ports' rules
    faults.heal(Recording(), LOCAL_INVENTORY, journal)
    assert seen[:2] == [("faults/host-partition.yml", {"fault_ports": [9092], "fault_phase": "inject"}, "broker0"),
                        ("faults/host-partition.yml", {"fault_ports": [9092], "fault_phase": "revert"}, "broker0")]
    assert journal.outstanding() == []


def test_journal_lines_of_older_versions_without_options_still_heal(tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_text('{"fault_id": "a1", "phase": "intent", "t": 1, "kind": "broker-kill", "hosts": ["broker1"], '
                    f'"broker_id": 1, "inventory": "{LOCAL_INVENTORY.resolve()}", "reason": "broker 1"}}\n')
    [record] = faults.Journal(path).outstanding()
    assert (record.kind, record.hosts, record.extravars) == ("broker-kill", ("broker1",), {})


# ---------------------------------------------------------------- KRaft controller faults

KRAFT = inventory.load(ROOT / "inventories" / "local-kraft")
DEDICATED = inventory.ClusterInventory(
    KRAFT.path, KRAFT.brokers, (), tuple(inventory.Controller(f"ctl{i}", 9990 + i, "10.0.0.1", 9093, "/etc/kafka", False)
                                        for i in range(3)), "kraft", "4.3.1")


def kraft_status(inv, leader, voters):
    quorum = QuorumState(leader, 7, 100, tuple(ControllerState(c.node_id, c.name, c.endpoint, c.node_id in voters, 0,
                                                               c.combined) for c in inv.controllers))
    return dataclasses.replace(status(controller=leader), quorum=quorum)


def kraft_resolve(fault, inv, status_now, exclude=frozenset()):
    return fault.resolve(Situation(inv, status_now, "t", random.Random(1), exclude))


@pytest.mark.parametrize("target, hosts, broker, reason", [
    ({"active": True}, ("ctl1",), None, "active controller: 9991 (epoch 7)"),
    ({"follower": True}, ("ctl0",), None, "follower voter: 9990 (leader 9991)"),
    ({"node": 9992}, ("ctl2",), None, "controller 9992"),
])
def test_controller_targets_resolve_to_controller_hosts(target, hosts, broker, reason):
    kill = spec(kind="controller-kill", target=target)
    assert kraft_resolve(kill, DEDICATED, kraft_status(DEDICATED, 9991, {9990, 9991, 9992})) == \
        Resolved(hosts, broker, reason)


def test_a_fault_on_a_combined_node_says_the_other_role_goes_down_with_it():
    st = kraft_status(KRAFT, 2, {0, 1, 2})
    assert kraft_resolve(spec(kind="controller-pause"), KRAFT, st) == Resolved(
        ("broker2",), 2, "active controller: 2 (epoch 7) (a combined node: broker 2 goes down with it)")
    assert kraft_resolve(spec(kind="broker-kill", target={"leader_of": 0}), KRAFT, st).reason == \
        "leader of t-0: broker 2 (a combined node: controller 2 goes down with it)"


def test_quorum_loss_kills_a_majority_leader_first():
    loss = spec(kind="quorum-loss")
    assert loss.heal_order == 0 and loss.playbook == "faults/quorum-loss.yml"
    assert kraft_resolve(loss, DEDICATED, kraft_status(DEDICATED, 9992, {9990, 9991, 9992})) == Resolved(
        ("ctl2", "ctl0"), None, "2 of 3 controllers: 9992, 9990 (leader 9992)")
    assert "combined nodes: brokers 1, 0 go down with them" in kraft_resolve(
        loss, KRAFT, kraft_status(KRAFT, 1, {0, 1, 2})).reason
    with pytest.raises(ValueError, match="quorum-loss takes no target"):
        spec(kind="quorum-loss", target={"active": True})


def test_follower_target_needs_a_leader_and_a_follower():
    with pytest.raises(faults.FaultError, match="no leader"):
        kraft_resolve(spec(kind="controller-stop", target={"follower": True}), DEDICATED,
                      kraft_status(DEDICATED, None, set()))
    with pytest.raises(faults.FaultError, match="no follower voter"):
        kraft_resolve(spec(kind="controller-stop", target={"follower": True}), DEDICATED,
                      kraft_status(DEDICATED, 9990, {9990, 9991, 9992}), exclude=frozenset({9991, 9992}))
    with pytest.raises(ValueError, match="exactly one of active: true, follower: true, node"):
        spec(kind="controller-kill", target={"active": True, "node": 1})


def test_packet_loss_needs_its_share_and_hands_it_to_its_playbook():
    fault = FAULT.validate_python({"kind": "packet-loss", "at_s": 1, "percent": 2.5, "target": {"broker": 1}})
    assert (fault.playbook, fault.extravars(), fault.label) == (
        "faults/packet-loss.yml", {"fault_loss_percent": 2.5}, "packet-loss (broker 1; 2.5% of packets) at 1 s")
    for bad in (0, 100, 0.001):
        with pytest.raises(ValueError, match="percent"):
            FAULT.validate_python({"kind": "packet-loss", "at_s": 1, "percent": bad})


def test_the_transaction_coordinator_is_the_leader_of_the_partition_the_id_hashes_to():
    """Kafka's partitionFor: Utils.abs(transactionalId.hashCode) % partitions of __transaction_state.
    "hello".hashCode() is 99162322 (-> partition 22 of 50); "polygenelubricants".hashCode() is
    Integer.MIN_VALUE, which Utils.abs maps to 0."""
    state = tuple(PartitionState("__transaction_state", p, p % 3, (0, 1, 2), (0, 1, 2)) for p in range(50))
    now = dataclasses.replace(status(), partitions=status().partitions + state)
    target = spec(kind="broker-kill", target={"transaction_coordinator": True})
    for transactional_id, partition in (("hello", 22), ("polygenelubricants", 0)):
        got = target.resolve(Situation(INV, now, "t", random.Random(1), frozenset(), transactional_id))
        assert got.broker_id == partition % 3
        assert got.reason == (f"transaction coordinator of {transactional_id} (__transaction_state-{partition}): "
                              f"broker {partition % 3}")
    with pytest.raises(FaultError, match="no transactional producer"):
        resolve(target, status())
    with pytest.raises(FaultError, match="__transaction_state is not in the cluster's metadata"):
        target.resolve(Situation(INV, status(), "t", random.Random(1), frozenset(), "hello"))
