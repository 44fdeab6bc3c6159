"""The steps of a run after its load: every fault healed, the consumer groups drained and the
topic read back, the logs and the ledgers collected, the run's topic deleted
(benchmarks.harness.runner runs them in that order, whatever failed before)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Callable

from benchmarks.core.codes import FINAL_READ_COMMITTED
from benchmarks.core.wait import WaitTimeout, wait_until
from benchmarks.harness import faults, final_read
from benchmarks.harness.retry import CALL_RETRY_S
from benchmarks.harness.run_state import Run
from benchmarks.hosts import host_probe
from benchmarks.kafka import cluster, topics
from benchmarks.record import ledger, run_events

# After the load, the consumer groups are given up to DRAIN_S to read every acknowledged message.
# A transactional run's readers (read_committed) never see the aborted transactions' messages, so
# there the wait ends once their counts have stood still for DRAIN_QUIET_S instead.
DRAIN_S = 30.0
DRAIN_QUIET_S = 5.0
# A broker a scheduled heal started near the end of the load may not be up yet when the run ends:
# ZooKeeper mode keeps it from registering until its old session expires (18 s), and a killed
# broker recovers its logs first. The heal after the run gives it this long before it falls back
# to start.yml (whose playbook alone takes longer than that wait, ~40 s on 2 busy cores).
HEAL_GRACE_S = 30.0

def heal_after(run: Run) -> None:
    """Every fault healed, whatever happened: at the end of the load, on Ctrl-C, on an error."""
    if run.inventory.given is not None:
        return  # a cluster known only by its bootstrap address: no fault to heal, no host to start
    run.show("healing")
    run.events.write(run_events.HealAfterRun())
    heal(run, grace_s=HEAL_GRACE_S)
    if run.steps:
        run.steps.active.clear()


def heal(run: Run, grace_s: float = 0.0) -> None:
    """Revert what the journal holds; start.yml only when a node is down or cannot be seen, also
    after `grace_s` (a node a heal started during the run may still be on its way up)."""
    # Services on hosts of their own are seen through their control scripts over SSH: a healthy
    # cluster of remote hosts is healed without start.yml's minute too.
    processes = host_probe.process_state_probe(run.inventory, run.remote)
    # A finalized migration stopped ZooKeeper for good: its servers are not waited for.
    seen = dataclasses.replace(run.inventory, zookeepers=()) if run.steps and run.steps.zookeeper_retired else run.inventory

    def not_up() -> list[str]:
        found: list[str] = []

        def every_node_up() -> bool:
            found[:] = cluster.nodes_not_up(seen, run.conn, process_probe=processes)
            return not found
        with contextlib.suppress(WaitTimeout):
            wait_until(every_node_up, grace_s, interval_s=1.0, what="every node to be up")
        return found

    report = faults.heal(run.runner, run.inventory_path, run.journal, not_up=not_up)
    run.events.write(run_events.Healed(reverted=[r.fault_id for r in report.reverted],
                                       start_playbook=report.start is not None, not_up=report.not_up))


class Drain:
    """When the consumer groups are done reading after the load: each has read as many messages
    as were acknowledged, or, reading committed transactions only (the aborted ones' messages
    never reach them), their counts have stood still for DRAIN_QUIET_S."""

    def __init__(self, acked: int, committed_only: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.acked, self.committed_only, self.clock = acked, committed_only, clock
        self.counts: dict[str, int] | None = None
        self.since = clock()

    def done(self, counts: dict[str, int]) -> bool:
        if min(counts.values(), default=self.acked) >= self.acked:
            return True
        if counts != self.counts:
            self.counts, self.since = dict(counts), self.clock()
        return self.committed_only and self.clock() - self.since >= DRAIN_QUIET_S


def read_back(run: Run) -> None:
    """Let the consumer groups drain (what they have not read by then, the final read and the
    checker account for), then read every partition from the beginning to its end offsets."""
    drain = Drain(run.workers.totals()[1], committed_only=run.scenario.client.transactions is not None)

    def drained() -> bool:
        run.show("draining consumers")
        return drain.done(run.workers.consumed())

    if run.workers.consumers:
        with contextlib.suppress(WaitTimeout):
            wait_until(drained, DRAIN_S, interval_s=0.5, what="the consumer groups to read every acked message")
    run.show("final read")
    run.events.write(run_events.FinalReadStart())
    ends = final_read.read(run.conn, run.topic, run.run_id, run.run_dir / "ledger" / "consume", retrier=run.retrier)
    if run.scenario.client.transactions:  # and what a read_committed consumer gets of it
        final_read.read(run.conn, run.topic, run.run_id, run.run_dir / "ledger" / "consume",
                        group=FINAL_READ_COMMITTED, retrier=run.retrier)
    run.events.write(run_events.FinalReadEnd(end_offsets=ends))
    run.checked = True


def collect(run: Run) -> None:
    """Service logs and the run's slice of the fault journal into the run directory; each writer's
    ledger parts merged."""
    run_dir = run.run_dir
    if run.inventory.given is None:  # a cluster known only by its bootstrap address has no host to read logs on
        run.runner.run("collect-logs.yml", run.inventory_path, extravars={"collect_logs_dest": str(run_dir / "logs")})
    ids = {f.fault_id for f in run.fault_log}
    with open(run_dir / "fault-journal.jsonl", "w", encoding="utf-8") as handle:
        for entry in run.journal.entries():
            if entry["fault_id"] in ids:
                handle.write(json.dumps(entry) + "\n")
    run.show("compacting the ledgers")
    started = time.monotonic()
    merged = ledger.compact(run_dir)
    run.events.write(run_events.LedgerCompacted(parts=merged.parts, files=merged.files, bytes_before=merged.bytes_before,
                                                bytes_after=merged.bytes_after, took_s=round(time.monotonic() - started, 3),
                                                problems=merged.problems))


def delete_topic(run: Run) -> None:
    """The run's topic deleted: its data is in the ledgers, and a topic left behind keeps costing the
    brokers. Measured on the local cluster (2 cores): with 68 earlier runs' topics left on it, the
    produce-path warm-up of seed 001's load (13 partitions, five consumers, 500 msg/s) acked 150-280
    msg/s and had not settled after 210 s; with them deleted, it settled in 6 s, twice. A topic that
    cannot be deleted leaves the run valid; the event says why. A "not yet" answer (a controller
    busy after the heal) is retried as every other call of the run is."""
    run.step = "delete the topic"
    run.show("deleting the topic")
    started = time.monotonic()
    try:
        deleted = run.retrier.call(run.step, f"delete {run.topic}", lambda: topics.delete_topic(run.conn, run.topic),
                                   CALL_RETRY_S)
        error = None
    except Exception as exc:  # a cluster down after its run, or no right to delete: the run still stands
        deleted, error = False, f"{type(exc).__name__}: {exc}"[:300]
    run.events.write(run_events.TopicDeleted(topic=run.topic, deleted=deleted, error=error,
                                             took_s=round(time.monotonic() - started, 3)))
