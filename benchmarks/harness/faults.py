"""Faults: declarative, reversible, idempotent, journaled.

Every fault is applied by a playbook under playbooks/faults/ with an inject and a revert
phase. Before each injection an "intent" line goes to the journal; "injected" and "healed"
lines follow. `heal` reverts every fault whose last line is not "healed", whoever injected
it, so a runner killed mid-fault leaves nothing broken for long; healing twice changes
nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.core import paths
from benchmarks.hosts import clocks
from benchmarks.hosts.ansible import PlaybookResult, PlaybookRunner, summarize_failures
from benchmarks.spec.fault_kinds import spec_of
from benchmarks.spec.fault_targets import FaultError

__all__ = ["AnsibleFaultInjector", "FaultError", "FaultRecord", "HealReport", "Journal", "heal"]

@dataclasses.dataclass(frozen=True)
class FaultRecord:
    fault_id: str
    kind: str
    hosts: tuple[str, ...]  # inventory hosts the playbook is limited to
    broker_id: int | None
    inventory: str
    reason: str  # how the target was chosen ("broker 1", "leader of partition 0: broker 2", ...)
    extravars: dict[str, Any] = dataclasses.field(default_factory=dict)  # the fault's options, for its playbook


class Journal:
    """Append-only JSON lines; one line per phase of each fault."""

    def __init__(self, path: Path = paths.FAULT_JOURNAL, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.clock = clock

    def write(self, record: FaultRecord, phase: str, **extra: Any) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = {"fault_id": record.fault_id, "phase": phase, "t": self.clock(), **dataclasses.asdict(record), **extra}
        with open(self.path, "a+", encoding="utf-8") as handle:
            handle.seek(0, os.SEEK_END)
            torn = False
            if handle.tell() > 0:  # a crash mid-write leaves a line without its newline: never extend it
                handle.seek(handle.tell() - 1)
                torn = handle.read(1) != "\n"
            handle.write(("\n" if torn else "") + json.dumps(line) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line torn by a crash mid-write; its fault has an earlier intent line
        return out

    def outstanding(self, inventory: str | None = None) -> list[FaultRecord]:
        """Faults whose last journal line is not 'healed' (intent included: it may have happened)."""
        last: dict[str, dict[str, Any]] = {}
        for entry in self.entries():
            last[entry["fault_id"]] = entry
        fields = {f.name for f in dataclasses.fields(FaultRecord)}
        records = []
        for entry in last.values():
            if entry["phase"] == "healed" or (inventory and entry["inventory"] != inventory):
                continue
            data = {k: entry[k] for k in fields if k in entry}  # lines of older versions lack newer fields
            data["hosts"] = tuple(data["hosts"])
            records.append(FaultRecord(**data))
        return records


class AnsibleFaultInjector:
    """Applies faults with the playbooks under playbooks/faults/, journaling every phase."""

    def __init__(self, runner: PlaybookRunner, inventory_path: Path, journal: Journal | None = None,
                 clock: Callable[[], float] = time.time, offsets: Mapping[str, clocks.Offset] | None = None) -> None:
        self.runner = runner
        self.offsets = dict(offsets or {})  # host -> its clock against ours (benchmarks/hosts/clocks.py); none: ours
        self.inventory_path = Path(inventory_path)
        self.journal = journal or Journal()
        self.clock = clock

    def new_record(self, kind: str, hosts: Iterable[str], broker_id: int | None, reason: str,
                   extravars: dict[str, Any] | None = None) -> FaultRecord:
        spec_of(kind)  # a kind there is no spec of is refused before anything is journaled
        return FaultRecord(uuid.uuid4().hex[:12], kind, tuple(hosts), broker_id,
                           str(self.inventory_path.resolve()), reason, dict(extravars or {}))

    def _apply(self, record: FaultRecord, phase: str, not_before_ns: int | None = None) -> float | None:
        """Run the fault's playbook; returns when the control script acted (the runner's wall
        clock, s), if it did. With `not_before_ns` (the runner's clock), the playbook may start
        early: the host acts no earlier than that. Both are converted by the hosts' clock offsets."""
        at_host = clocks.latest_on_host(self.offsets, record.hosts, not_before_ns) if not_before_ns else None
        timing = {"fault_not_before_ns": str(at_host)} if at_host else {}
        result = self.runner.run(spec_of(record.kind).playbook, self.inventory_path,
                                 extravars={**record.extravars, **timing, "fault_phase": phase},
                                 limit=",".join(record.hosts))
        if not result.ok:
            raise FaultError(f"{'injecting' if phase == 'inject' else 'reverting'} {record.kind} on "
                             f"{','.join(record.hosts)} failed:\n{summarize_failures(result.failures)}")
        none = clocks.Offset("", 0, 0, "local")
        stamps = [self.offsets.get(host, none).to_runner(int(m))
                  for host, out in result.outputs for m in re.findall(r"at_ns=(\d+)", out)]
        return min(stamps) / 1e9 if stamps else None

    def inject(self, record: FaultRecord, not_before_ns: int | None = None) -> float:
        """Inject; the intent is journaled first. Returns when the signal was sent (or the
        playbook ended, when the service was already in the fault state)."""
        self.journal.write(record, "intent")
        acted = self._apply(record, "inject", not_before_ns)
        at = acted if acted is not None else self.clock()
        self.journal.write(record, "injected", acted_at=at)
        return at

    def revert(self, record: FaultRecord, not_before_ns: int | None = None) -> float:
        acted = self._apply(record, "revert", not_before_ns)
        at = acted if acted is not None else self.clock()
        self.journal.write(record, "healed", acted_at=at)
        return at


@dataclasses.dataclass
class HealReport:
    reverted: list[FaultRecord]
    start: PlaybookResult | None  # None: start.yml was not run (not asked for, or every node was up)
    not_up: list[str] = dataclasses.field(default_factory=list)  # why it ran: what `not_up` found


def heal(runner: PlaybookRunner, inventory_path: Path, journal: Journal | None = None,
         ensure_started: bool = True, not_up: Callable[[], list[str]] | None = None) -> HealReport:
    """Revert every outstanding fault of this inventory, then start whatever is still down
    (start.yml). With `not_up` (why not every node is seen to run, nothing when every node is:
    cluster.nodes_not_up, which the caller may give time), start.yml is left out when every node
    is up after the reverts: a healthy cluster is healed in a second, not in the twenty of a
    playbook that changes nothing. Otherwise the report keeps what `not_up` found."""
    injector = AnsibleFaultInjector(runner, inventory_path, journal)
    outstanding = injector.journal.outstanding(str(Path(inventory_path).resolve()))
    outstanding.sort(key=lambda r: spec_of(r.kind).heal_order)  # e.g. ZooKeeper before the brokers
    for record in outstanding:
        injector.revert(record)
    if not ensure_started:
        return HealReport(outstanding, None)
    why = not_up() if not_up is not None else []
    if not_up is not None and not why:
        return HealReport(outstanding, None)
    start = runner.run("start.yml", inventory_path)
    if not start.ok:
        raise FaultError(f"start.yml failed while healing:\n{summarize_failures(start.failures)}")
    return HealReport(outstanding, start, why)
