"""Operational procedures run as timed events of a run: a playbook the runner starts during the
measured phase, under the run's load, with each play it goes through recorded on the run's
timeline (`procedure-start`, `procedure-play`, `procedure-end` events).

A procedure is one spec (its playbook, the metadata modes it applies to, what the inventory must
have) and one playbook under playbooks/; adding one touches nothing else.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from pydantic import Field

from benchmarks.fault_kinds import Strict


@dataclasses.dataclass(frozen=True)
class ProcedureSpec:
    name: str
    playbook: str  # under playbooks/
    modes: frozenset[str]  # the metadata modes of the clusters it applies to
    needs_migration_controllers: bool = False  # controllers waiting for a ZooKeeper migration
    summary: str = ""


SPECS = {spec.name: spec for spec in (
    ProcedureSpec("rolling-restart", "rolling-restart.yml", frozenset({"kraft", "zookeeper"}),
                  summary="every node restarted one at a time, gated on health, the active controller last"),
    ProcedureSpec("migrate-to-kraft", "migrate-to-kraft.yml", frozenset({"zookeeper"}), needs_migration_controllers=True,
                  summary="ZooKeeper -> KRaft migration of a Kafka 3.9 cluster, finalized"),
)}


class Procedure(Strict):
    """`procedures: [{playbook: migrate-to-kraft, at_s: 20}]` in a scenario."""

    playbook: Literal["rolling-restart", "migrate-to-kraft"]
    at_s: Annotated[float, Field(ge=0)]  # seconds into the measured phase (scaled by --quick)

    @property
    def spec(self) -> ProcedureSpec:
        return SPECS[self.playbook]


def cluster_errors(procedure: Procedure, metadata_mode: str, migration_controllers: int) -> list[tuple[str, str]]:
    """(field, message) for what this inventory cannot do of the procedure."""
    spec = procedure.spec
    if metadata_mode not in spec.modes:
        allowed = ", ".join(name for name, s in SPECS.items() if metadata_mode in s.modes)
        return [("playbook", f"{spec.name} needs a {' or '.join(sorted(spec.modes))} cluster; this inventory runs "
                             f"{metadata_mode}, so allowed here: {allowed}")]
    if spec.needs_migration_controllers and migration_controllers not in (1, 3, 5):
        return [("playbook", f"{spec.name} needs 1, 3 or 5 KRaft controllers waiting for the migration (group "
                             f"kafka_controller with kafka_zookeeper_migration: true, as in inventories/local-migration); "
                             f"this inventory has {migration_controllers}")]
    return []
