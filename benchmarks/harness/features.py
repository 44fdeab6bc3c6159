"""KRaft feature levels a scenario asks for, finalized before its run.

The levels are read on the wire (ApiVersions: every broker reports the levels it has seen
finalized), changed with the cluster's own tool (`playbooks/features.yml`, kafka-features
upgrade/downgrade), and waited for until every broker reports the new level: a broker that
still runs with the old one would make the run measure the wrong setting."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchmarks.core.wait import WaitTimeout, wait_until
from benchmarks.hosts.ansible import PlaybookRunner, summarize_failures
from benchmarks.hosts.inventory import ClusterInventory
from benchmarks.kafka import kafka_protocol
from benchmarks.record import run_events
from benchmarks.spec.workload import Workload

ELR = "eligible.leader.replicas.version"


class FeatureError(RuntimeError):
    """A level could not be finalized; the message says which and why."""


def wanted(workload: Workload, metadata_mode: str) -> dict[str, int]:
    """The feature levels a workload asks for (none: leave the cluster as it is). A ZooKeeper
    cluster has no feature levels: ELR off is what it always runs with (ELR on is refused there
    when the scenario is read)."""
    if workload.eligible_leader_replicas is None or metadata_mode != "kraft":
        return {}
    return {ELR: int(workload.eligible_leader_replicas)}


def levels(address: str, settings: dict[str, str] | None = None) -> dict[str, int]:
    """The finalized levels one broker reports (a feature at level 0 is not reported: 0)."""
    with kafka_protocol.KafkaConnection(address, settings=settings) as conn:
        conn.api_versions()
        return dict(conn.features)


def finalize(inventory: ClusterInventory, inventory_path: Path, runner: PlaybookRunner, want: dict[str, int],
             read: Callable[[str], dict[str, int]] | None = None, timeout_s: float = 60.0) -> list[run_events.FeatureFinalized]:
    """Finalize `want` on the cluster unless it already is there; wait until every broker reports
    it. One event per feature asked for, saying whether anything changed."""
    if not want:
        return []
    if read is None:
        settings = dict(inventory.connection().properties)
        read = lambda address: levels(address, settings)  # noqa: E731
    addresses = [b.bootstrap for b in inventory.brokers]
    before = _first(addresses, read)
    differ = {name: level for name, level in want.items() if before.get(name, 0) != level}
    if differ:
        result = runner.run("features.yml", inventory_path, extravars={"kafka_features": differ})
        if not result.ok:
            raise FeatureError(f"finalizing {differ} failed:\n{summarize_failures(result.failures)}")

        def everywhere() -> bool:
            return all(all(_safe(read, a).get(n, 0) == lvl for n, lvl in differ.items()) for a in addresses)

        try:
            wait_until(everywhere, timeout_s, what=f"every broker to report {differ}")
        except WaitTimeout as exc:
            raise FeatureError(str(exc)) from None
    return [run_events.FeatureFinalized(feature=name, level=level, previous=before.get(name, 0), changed=name in differ)
            for name, level in want.items()]


def _safe(read: Callable[[str], dict[str, int]], address: str) -> dict[str, int]:
    try:
        return read(address)
    except (kafka_protocol.ProtocolError, OSError):
        return {}


def _first(addresses: list[str], read: Callable[[str], dict[str, int]]) -> dict[str, int]:
    errors = []
    for address in addresses:
        try:
            return read(address)
        except (kafka_protocol.ProtocolError, OSError) as exc:
            errors.append(str(exc))
    raise FeatureError("no broker answered to report its feature levels: " + "; ".join(errors))
