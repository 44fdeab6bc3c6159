"""The run directory's typed records: summary.json and the suite's plan (the lines of
events.jsonl are benchmarks.record.run_events').

The runner writes them, the analysis reads them (its Spark schemas are derived from these
models: `benchmarks.analysis.schemas`), the report and the tests read them: one definition
of each, validated where it is written.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# ---------------------------------------------------------------- summary.json


class ScheduledFault(Record):
    """A fault of the scenario's schedule, as data (its target in words)."""

    kind: str
    target: str
    at_s: float                         # the first injection
    heal_at_s: float | None
    every_s: float | None = None        # a recurring fault: injected this often,
    duration_s: float | None = None     # each injection healed this long after it acted,
    until_s: float | None = None        # until then (None: the end of the workload)
    count: int | None = None            # or until this many acted (skipped ones made up for)


class SweepValue(Record):
    """One dimension of a sweep point: the scenario field's path and the value it took (as JSON)."""

    path: str
    value: str


class AppliedFault(Record):
    """A fault as the run carried it out."""

    fault_id: str
    kind: str
    target: str  # how the target was resolved: "leader of t-0: broker 2"
    hosts: list[str]


class LiveCounters(Record):
    """What the load processes counted as they went (the checker's counts come from the ledgers)."""

    sent: int
    acked: int
    failed: int
    indeterminate: int


class TransactionProfile(Record):
    """A transactional run's producer profile (scenario client.transactions), and the client that
    did the work: librdkafka has no KIP-890 (transactions server-side defence), whatever the broker."""

    messages: int                       # per transaction
    abort_ratio: float                  # share aborted on purpose
    timeout_ms: int                     # transaction.timeout.ms
    client: str                         # "librdkafka 2.x.y"


class RunSummary(Record):
    run_id: str
    scenario: str
    description: str
    run_dir: str
    topic: str
    metadata_mode: str | None           # kraft | zookeeper (None: a run of an older version)
    kafka_version: str | None           # as the inventory deploys it
    eligible_leader_replicas: bool | None = None  # ELR (KIP-966) on during the run; None: ZooKeeper, or unknown
    security: str | None = None         # the clients' profile: plaintext, tls, mtls, sasl_ssl (None: an older run)
    acks: str
    replication_factor: int
    min_insync_replicas: int
    unclean_leader_election: bool
    partitions: int
    message_size: int
    fault: str                          # the scenario's fault schedule in words, for people; "none"
    fault_schedule: list[ScheduledFault]  # the same as data
    load_start_ns: int                  # first intended send (wall clock, ns)
    measured_from_ns: int               # end of the warm-up
    warm_p50_ms: float | None           # p50 ack latency of the warmed produce path, just before the load
    load_end_ns: int                    # the load's end, as late as the scheduled steps made it
    sent: int
    acked: int
    failed: int
    indeterminate: int
    acked_lost: int                     # acked, absent from the final read of the whole topic: lost + unseen
    acked_lost_ids: list[str]           # up to 20 "producer:seq"
    lost: int                           # the checker's (benchmarks/check/checker.py): acked, gone, a later offset read
    unseen: int                         # acked, gone, nothing after it read
    duplicates: int                     # extra copies in the log
    final_read: int                     # distinct messages of this run found by the final read
    consumed: dict[str, int]            # distinct messages per consumer group
    throughput_msgs_s: float            # acked messages per second over the whole load (warm-up included)
    faults: list[AppliedFault]
    valid: bool
    invalid_reasons: list[str]
    live_counters: LiveCounters
    trial: int = 1                      # which of the configuration's trials this run is (1-based)
    trials: int = 1                     # how many trials of its configuration the scenario asked for
    expect_loss: bool = False           # a negative control: it must lose acknowledged writes
    transactions: TransactionProfile | None = None  # exactly-once runs only
    sweep_of: str | None = None         # the scenario whose sweep this run is a point of (None: no sweep)
    sweep_point: list[SweepValue] = []  # that point: each swept field and its value
    # CPU seconds the brokers spent during the load, all of them together, read from /proc here or
    # over SSH on hosts of their own (None: a broker's process cannot be read, or one was restarted
    # during the load).
    broker_cpu_s: float | None = None
    # The final read reached the end offsets, and the checker read the ledgers: lost, unseen,
    # duplicates and final_read stand. False for a run that failed before (failed_steps says
    # where): its counts are the load's own, and what became of its acknowledged writes is not known.
    checked: bool = True
    failed_steps: list[str] = []        # the steps of the run that raised (run-failed events), in order


# ---------------------------------------------------------------- suite.json


class PlannedRun(Record):
    """One run a suite will make: its place, its scenario (a sweep point's own name) and trial."""

    number: int                         # 1-based, in the order the suite runs them
    scenario: str
    trial: int = 1
    trials: int = 1


class SuitePlan(Record):
    """What one `kafka-bench run` set out to do, written before its first run: a report of the
    directory names the runs missing from it, and `--resume` finishes them with the same options."""

    suite: str                          # the suite's name or the scenario file, as given
    inventory: str
    quick: bool
    seed: int | None
    trials: int | None                  # --trials, when given
    ledger: bool
    runs: list[PlannedRun]
