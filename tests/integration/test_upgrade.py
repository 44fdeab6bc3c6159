"""The rolling upgrades to Kafka 4.3.1 (playbooks/upgrade.yml) and a throttled partition reassignment
(playbooks/reassign-partitions.yml), each run by the operations suite's scenario as a procedure
under acks=all load with a consumer group reading, on a cluster of this machine of three combined
nodes: from 3.9.2 (inventories/local-upgrade, the upgrade from the last release with ZooKeeper)
and from 4.2.1 (inventories/local-upgrade-4x, an upgrade between 4.x releases). Every node ends on
the new release with the release's feature levels finalized, and nothing acknowledged is lost; a
second upgrade changes nothing, and site.yml refuses to deploy the old release back before
touching a host. The reassignment then moves the (upgraded) cluster's topic off broker 2.

The cluster uses the broker ports of the other modules' clusters: it is deployed here and torn
down at the end of the module.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.conftest import ROOT, assert_ok, listening_ports
from tests.integration.procedures import ProcedureRun, run_procedure_scenario

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PORTS = {9092, 9093, 9094, 9192, 9193, 9194}
BOOTSTRAP = "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"
SUITE = ROOT / "benchmarks" / "suites" / "operations"
NODES = ("broker0", "broker1", "broker2")


@dataclasses.dataclass(frozen=True)
class OldRelease:
    """A cluster deployed on an older release, to upgrade: its inventory and the metadata.version
    its release finalizes."""

    inventory: str
    release: str
    metadata_version: str

    @property
    def path(self) -> Path:
        return ROOT / "inventories" / self.inventory

    @property
    def state(self) -> Path:
        return ROOT / ".state" / self.inventory

    def release_of(self, node: str) -> str:
        return (self.state / node / "config" / "kafka-release").read_text().strip()

    def features(self) -> str:
        return subprocess.run([str(self.state / "broker0" / "config" / "kafka-tool"), "features", "describe"],
                              capture_output=True, text=True, check=True, timeout=120).stdout


RELEASES = [OldRelease("local-upgrade", "3.9.2", "3.9-IV0"), OldRelease("local-upgrade-4x", "4.2.1", "4.2-IV1")]
# `make test` upgrades from 3.9.2 (the last release with ZooKeeper, the upgrade most clusters face);
# the upgrade between 4.x releases goes through the same playbook and is `long` (`make test-full`).
PARAMS = [pytest.param(RELEASES[0], id="3.9.2"), pytest.param(RELEASES[1], id="4.2.1", marks=pytest.mark.long)]


@pytest.fixture(scope="module", params=PARAMS)
def old_release(request, runner) -> Iterator[OldRelease]:
    """Kafka on the older release in KRaft mode on three combined nodes."""
    old: OldRelease = request.param
    assert_ok(runner.run("teardown.yml", old.path))
    assert not PORTS & listening_ports(), "a cluster still holds the ports: tear it down first"
    assert_ok(runner.run("site.yml", old.path))
    yield old
    runner.run("teardown.yml", old.path)


@dataclasses.dataclass(frozen=True)
class Upgraded:
    """The old release's cluster upgraded under load: what it ran before, and the procedure's run."""

    old: OldRelease
    releases_before: list[str]  # each node's release, in NODES order
    features_before: str        # `kafka-features describe` before the upgrade
    run: ProcedureRun


# The tests ask for the state they check: the upgraded cluster is a fixture (the upgrade runs once
# per release, whichever of its tests run, in any order), and nothing after it changes its release.
@pytest.fixture(scope="module")
def upgraded(old_release, runner, tmp_path_factory, spark) -> Upgraded:
    old = old_release
    releases, features = [old.release_of(n) for n in NODES], old.features()
    run = run_procedure_scenario(SUITE / "02-upgrade.yml", old.path, runner, tmp_path_factory.mktemp("upgrade"))
    return Upgraded(old, releases, features, run)


def test_the_upgrade_under_load_ends_on_the_new_release_and_loses_nothing(upgraded):
    old, result = upgraded.old, upgraded.run
    assert upgraded.releases_before == [old.release] * 3
    assert f"FinalizedVersionLevel: {old.metadata_version}" in upgraded.features_before
    assert result.summary.acked > 10_000
    # The controllers that follow, one at a time (a step each), then the active controller, then the features.
    steps = result.plays
    assert steps.count("Roll the KRaft controllers that follow, one at a time") == 2
    assert steps.index("Roll the KRaft quorum leader after the other controllers") > steps.index(
        "Roll the KRaft controllers that follow, one at a time")
    assert steps[-1] == "Finalize the new release's feature levels"
    assert [old.release_of(n) for n in NODES] == ["4.3.1"] * 3
    described = old.features()
    assert "metadata.version" in described and "FinalizedVersionLevel: 4.3-IV0" in described
    # The heal after the run (start.yml, on the inventory that still names the old release) left
    # every node on 4.3.1.
    assert all("kafka_2.13-4.3.1/libs" in (old.state / n / "config" / "kafka-service").read_text() for n in NODES)
    # The new release's tool classes were archived before the roll (its health checks mapped them),
    # and the old release's archive went once each node ran the new one.
    for n in NODES:
        archives = [p.name for p in (old.state / n / "config").glob("tools-*.jsa")]
        assert len(archives) == 1 and archives[0].startswith("tools-4.3.1-"), (n, archives)


def test_a_second_upgrade_changes_nothing(upgraded, runner):
    result = assert_ok(runner.run("upgrade.yml", upgraded.old.path, extravars={"kafka_upgrade_version": "4.3.1"}))
    assert result.count("changed") == 0, result.stats


def test_site_refuses_to_deploy_the_old_release_back(upgraded, runner):
    state = upgraded.old.state
    before = {n: (state / n / "config" / "server.properties").read_text() for n in NODES}
    result = runner.run("site.yml", upgraded.old.path)
    assert not result.ok
    messages = " ".join(" ".join(f.message.split()) for f in result.failures)
    assert "this node runs Kafka 4.3.1" in messages and 'set kafka_version: "4.3.1"' in messages, messages
    assert {n: (state / n / "config" / "server.properties").read_text() for n in NODES} == before


def test_a_throttled_reassignment_under_load_moves_the_topic_off_broker_2(upgraded, runner, tmp_path, spark):
    old_release = upgraded.old
    result = run_procedure_scenario(SUITE / "03-reassign-partitions.yml", old_release.path, runner, tmp_path,
                                    keep_topic=True)  # where the reassignment put its partitions, read below
    assert result.summary.acked > 10_000
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    topic = next(t for name, t in admin.list_topics(timeout=30).topics.items() if name.startswith("kb-reassign-partitions"))
    assert len(topic.partitions) == 6
    for number, partition in sorted(topic.partitions.items()):
        assert partition.replicas == [number % 2, (number + 1) % 2], (number, partition.replicas)
        assert partition.leader == number % 2, "the preferred leaders were elected"
    # The throttle is cleared once the move completed.
    configs = subprocess.run([str(old_release.state / "broker0" / "config" / "kafka-tool"), "configs", "--describe",
                              "--entity-type", "brokers", "--entity-name", "2"],
                             capture_output=True, text=True, check=True, timeout=120).stdout
    assert "throttled.rate" not in configs, configs
