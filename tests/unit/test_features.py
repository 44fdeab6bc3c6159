"""Feature levels a scenario asks for: finalized with the cluster's tool only where they differ,
waited for on every broker, and recorded (benchmarks/harness/features.py), without a cluster."""

from __future__ import annotations

import pytest

from benchmarks.harness import features
from benchmarks.hosts.ansible import PlaybookResult, TaskFailure
from benchmarks.hosts.inventory import load
from benchmarks.spec.workload import Workload
from tests.conftest import KRAFT_INVENTORY

INV = load(KRAFT_INVENTORY)
ELR = features.ELR


class Cluster:
    """Brokers that report the finalized levels; the features playbook changes them, and each
    broker sees the change only after `lag` more reads."""

    def __init__(self, levels, lag=0, fail=False):
        self.levels, self.lag, self.fail = dict(levels), lag, fail
        self.pending: dict[str, tuple[dict[str, int], int]] = {}
        self.calls = []

    def run(self, playbook, inventory, extravars=None, limit=None, check=False, progress=None):
        self.calls.append((playbook, extravars))
        if self.fail:
            return PlaybookResult(playbook, 2, "failed", {}, [TaskFailure("broker0", "Set the feature levels", "boom")], 0.1)
        new = {**self.levels, **extravars["kafka_features"]}
        self.pending = {b.bootstrap: (new, self.lag) for b in INV.brokers}
        return PlaybookResult(playbook, 0, "successful", {"changed": {"broker0": 1}}, [], 0.1)

    def read(self, address):
        if address in self.pending:
            new, left = self.pending[address]
            if left == 0:
                return new
            self.pending[address] = (new, left - 1)
        return self.levels


def test_nothing_is_asked_without_the_setting_nor_on_zookeeper():
    assert features.wanted(Workload(), "kraft") == {}
    assert features.wanted(Workload(eligible_leader_replicas=False), "zookeeper") == {}
    assert features.wanted(Workload(eligible_leader_replicas=False), "kraft") == {ELR: 0}


def test_a_level_already_finalized_runs_no_playbook():
    cluster = Cluster({ELR: 1})
    [event] = features.finalize(INV, KRAFT_INVENTORY, cluster, {ELR: 1}, read=cluster.read)
    assert cluster.calls == []
    assert (event.feature, event.level, event.previous, event.changed) == (ELR, 1, 1, False)


def test_a_differing_level_is_set_and_waited_for_on_every_broker():
    cluster = Cluster({ELR: 1, "kraft.version": 1}, lag=2)
    [event] = features.finalize(INV, KRAFT_INVENTORY, cluster, {ELR: 0}, read=cluster.read, timeout_s=5)
    assert cluster.calls == [("features.yml", {"kafka_features": {ELR: 0}})]
    assert (event.previous, event.level, event.changed) == (1, 0, True)
    assert all(cluster.read(b.bootstrap)[ELR] == 0 for b in INV.brokers)


def test_a_feature_the_brokers_do_not_report_is_at_level_0():
    cluster = Cluster({})
    [event] = features.finalize(INV, KRAFT_INVENTORY, cluster, {ELR: 0}, read=cluster.read)
    assert cluster.calls == [] and event.previous == 0


def test_a_failed_playbook_names_the_feature_and_the_failure():
    cluster = Cluster({ELR: 1}, fail=True)
    with pytest.raises(features.FeatureError, match=r"finalizing \{'eligible.leader.replicas.version': 0\} failed:"
                       r"(.|\n)*boom"):
        features.finalize(INV, KRAFT_INVENTORY, cluster, {ELR: 0}, read=cluster.read)


def test_brokers_that_never_report_the_level_time_out():
    cluster = Cluster({ELR: 1}, lag=10**6)
    with pytest.raises(features.FeatureError, match="every broker to report"):
        features.finalize(INV, KRAFT_INVENTORY, cluster, {ELR: 0}, read=cluster.read, timeout_s=0.6)
