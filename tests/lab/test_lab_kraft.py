"""Kafka 4.3 in the production KRaft shape on the lab (inventories/lab-kraft): three hosts, each
running a dedicated controller process and a broker process, deployed over SSH by the same
playbooks; the active controller killed under acks=all load while every broker stays up.

Run with `make test-lab`, after tests/lab/test_lab.py (each module builds its lab and tears it
down: the two labs have their own subnets and could also be up together)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest

from benchmarks.harness import runner as runner_lib
from benchmarks.kafka import cluster
from benchmarks.record import ledger
from benchmarks.record.timeline_schema import QUORUM_SCHEMA, TIMELINE_SCHEMA
from benchmarks.spec import scenario as sc
from tests.conftest import ROOT, assert_ok, wait_for
from tests.lab.helpers import built_lab, deployed, ssh

pytestmark = [pytest.mark.lab, pytest.mark.slow]

LAB = ROOT / "inventories" / "lab-kraft"
QUORUM = "10.213.1.11:9093,10.213.1.12:9093,10.213.1.13:9093"


@pytest.fixture(scope="module")
def lab():
    with built_lab(LAB) as the_lab:
        yield the_lab


@pytest.fixture(scope="module")
def kraft_lab(lab, runner):
    return deployed(runner, LAB, "3 dedicated controllers and 3 brokers")


def test_each_host_runs_a_controller_and_a_broker(lab, kraft_lab):
    status = cluster.describe(kraft_lab)
    assert status.healthy, status.problems()
    quorum = cluster.kraft_state(kraft_lab, [])
    assert quorum.leader in (9990, 9991, 9992)
    assert sorted(v.node_id for v in quorum.raw_quorum.voters) == [9990, 9991, 9992]
    assert sorted(o.node_id for o in quorum.raw_quorum.observers) == [0, 1, 2], "the brokers observe the quorum"
    for index, host in enumerate(lab.spec.hosts):
        broker = ssh(lab, host.name, "cat /etc/kafka/server.properties")
        controller = ssh(lab, host.name, "cat /etc/kafka-controller/server.properties")
        assert "process.roles=broker\n" in broker and f"node.id={index}\n" in broker
        assert "process.roles=controller\n" in controller and f"node.id={9990 + index}\n" in controller
        for config in (broker, controller):
            assert f"controller.quorum.bootstrap.servers={QUORUM}\n" in config
        # Two services of one host, each with its own process, directories and port.
        pids = ssh(lab, host.name, "/etc/kafka/kafka-service pid; /etc/kafka-controller/kafka-service pid").split()
        assert len(set(pids)) == 2, pids
        listening = ssh(lab, host.name, "ss -ltnH")
        assert ":9092 " in listening and ":9093 " in listening, listening


@pytest.mark.long  # a second deployment over SSH; changed=0 is checked on every local cluster in `make test`
def test_second_deploy_changes_nothing(kraft_lab, runner):
    result = assert_ok(runner.run("site.yml", LAB))
    assert result.count("changed") == 0, result.stats.get("changed")


def test_active_controller_kill_leaves_every_broker_up(lab, kraft_lab, runner, tmp_path):
    """The production shape's point: the active controller SIGKILLed, another controller leads at
    a higher epoch, no broker goes down with it, nothing acknowledged is lost."""
    leader = cluster.kraft_state(kraft_lab, []).leader
    [run] = sc.load(ROOT / "benchmarks" / "suites" / "kraft" / "00-active-controller-kill.yml")
    summary = runner_lib.execute(run.scenario, kraft_lab, LAB, runner, tmp_path, quick=True, seed=3)
    assert summary.valid, summary.invalid_reasons
    assert summary.acked > 1000 and summary.acked_lost == 0, summary.acked_lost_ids
    [fault] = summary.faults
    assert fault.target.startswith(f"active controller: {leader} (epoch ") and "goes down with it" not in fault.target
    run_dir = Path(summary.run_dir)
    quorum = ledger.read(run_dir / "quorum", QUORUM_SCHEMA)
    leaders = [x for x in pc.unique(quorum.column("leader")).to_pylist() if x is not None]
    assert leader in leaders and len(leaders) >= 2, f"a new active controller in the timeline: {leaders}"
    timeline = ledger.read(run_dir / "timeline", TIMELINE_SCHEMA)
    alive = {r["brokers_alive"] for r in timeline.to_pylist() if r["error"] is None}
    assert alive == {"0,1,2"}, f"every broker stayed registered: {alive}"
    wait_for(lambda: cluster.describe(kraft_lab).healthy, 180, what="a healthy cluster after the run")


def test_teardown_leaves_no_kafka_on_the_hosts(lab, kraft_lab, runner):
    assert_ok(runner.run("teardown.yml", LAB))
    for host in lab.spec.hosts:
        assert ssh(lab, host.name, "pgrep -f '[k]afka[.]Kafka' || true").strip() == ""
        assert ssh(lab, host.name, "ls /etc/kafka /etc/kafka-controller /var/lib/kafka-controller/data 2>&1 || true").count(
            "No such file") == 3
