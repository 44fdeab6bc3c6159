"""The run directory's typed records: summary.json and the lines of events.jsonl.

The runner writes them, the analysis reads them (its Spark schemas are derived from these
models: `benchmarks.analysis.schemas`), the report and the tests read them: one definition
of each, validated where it is written. An event is a union keyed on its name.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator


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


# ---------------------------------------------------------------- events.jsonl


class Event(Record):
    """Every line: when it was written (wall clock, ns) and which run wrote it (set by the log)."""

    t_ns: int = 0
    run_id: str = ""


class RunStart(Event):
    event: Literal["run-start"] = "run-start"
    scenario: str
    topic: str
    seed: int
    quick: bool
    warmup_s: float
    duration_s: float
    inventory: str
    trial: int = 1
    trials: int = 1


class HealBeforeRun(Event):
    event: Literal["heal-before-run"] = "heal-before-run"


class ClusterRecovered(Event):
    event: Literal["cluster-recovered"] = "cluster-recovered"
    waited_s: float


class FeatureFinalized(Event):
    """A KRaft feature level the scenario asks for, finalized before the run (playbooks/features.yml)."""

    event: Literal["feature-finalized"] = "feature-finalized"
    feature: str
    level: int
    previous: int         # the level before (0: the cluster did not report the feature)
    changed: bool         # False: it already was at this level


class HostClock(Record):
    host: str
    offset_ns: int       # the host's clock minus the runner's
    uncertainty_ns: int  # +- this
    how: str             # "local" (the runner's own clock) or "ssh" (measured)


class ClockOffsets(Event):
    """The hosts' clocks against the runner's, measured before a run with faults (benchmarks/hosts/clocks.py)."""

    event: Literal["clock-offsets"] = "clock-offsets"
    hosts: list[HostClock]


class ProducePathWarm(Event):
    event: Literal["produce-path-warm"] = "produce-path-warm"
    seconds: float
    sent: int
    acked: int
    window_sent: list[int]             # per 1-s window: messages sent in it,
    window_acked: list[int]            # acks received in it,
    window_p99_ms: list[float | None]  # and their p99 (None: not a single ack in it)
    settled: bool
    p50_ms: float | None               # p50 ack latency of the last windows: the warmed path's level

    @field_validator("window_p99_ms", mode="before")
    @classmethod
    def _no_ack_is_none(cls, values: list[Any]) -> list[Any]:
        return [None if isinstance(v, float) and not math.isfinite(v) else v for v in values]


class LoadStart(Event):
    event: Literal["load-start"] = "load-start"
    start_ns: int
    end_ns: int
    measured_from_ns: int


class FaultIntent(Event):
    event: Literal["fault-intent"] = "fault-intent"
    fault_id: str
    kind: str
    hosts: list[str]
    broker: int | None
    reason: str
    scheduled_ns: int


class FaultSkipped(Event):
    """An injection of the schedule not carried out: the cluster had not recovered in time, it
    found no target, or as many brokers as the scenario's max_brokers_down were under a fault."""

    event: Literal["fault-skipped"] = "fault-skipped"
    kind: str
    step: str  # the scenario's entry: "faults[0] #7"
    reason: str
    scheduled_ns: int
    made_up_by: str | None = None  # a recurring fault with a count: the injection added for it ("faults[0] #65")


class FaultInjected(Event):
    event: Literal["fault-injected"] = "fault-injected"
    fault_id: str
    at_ns: int  # when the fault acted, on the runner's clock (a host's stamp less its clock offset)


class FaultMissed(Event):
    """A fault that acted on a broker the role it was aimed at had left between the target's
    resolution and the act (a preferred-leader election moved the partition's leader, say): the
    cluster read just after the act shows another broker in that role."""

    event: Literal["fault-missed"] = "fault-missed"
    fault_id: str
    step: str  # the scenario's entry: "faults[0] #7"
    reason: str  # "the leader of t-0 was broker 0, not broker 2"
    made_up_by: str | None = None  # a recurring fault with a count: the injection added for it


class FaultHealStart(Event):
    event: Literal["fault-heal-start"] = "fault-heal-start"
    fault_id: str
    scheduled_ns: int


class FaultHealed(Event):
    event: Literal["fault-healed"] = "fault-healed"
    fault_id: str
    at_ns: int  # as FaultInjected's


class ScheduleStepFailed(Event):
    event: Literal["schedule-step-failed"] = "schedule-step-failed"
    action: str
    step: str
    error: str


class RetryWaited(Event):
    """A call of the run's to Kafka that met errors meaning "not yet" and was retried
    (benchmarks.harness.retry): which step, which call, what it met, how long it waited, and whether it
    went through in the end (False: its bound passed, or a fatal error followed)."""

    event: Literal["retry-waited"] = "retry-waited"
    step: str
    call: str
    attempts: int
    errors: list[str]
    waited_s: float
    ok: bool


class RunFailed(Event):
    """A step of the run raised: the run is invalid with this reason, its faults are healed, and
    the suite goes on. The traceback is in the run directory's `error.txt`."""

    event: Literal["run-failed"] = "run-failed"
    step: str
    error: str


class ProcedureStart(Event):
    """An operational procedure (benchmarks/spec/procedures.py) started under the load."""

    event: Literal["procedure-start"] = "procedure-start"
    procedure_id: str
    procedure: str     # its name in the scenario (migrate-to-kraft, rolling-restart, ...)
    playbook: str      # under playbooks/
    scheduled_ns: int
    extravars: dict[str, Any] = {}  # the variables the playbook was given (the procedure's parameters)


class ProcedurePlay(Event):
    """The procedure's playbook began a play (its time is the event's t_ns): its steps, in order."""

    event: Literal["procedure-play"] = "procedure-play"
    procedure_id: str
    play: str
    host: str = ""  # the host of the play's first task: for a batch of a play with `serial: 1`, its node
    play_id: str = ""  # the play's id: the batches of a play with `serial` share it, two plays of one name do not


class ProcedureEnd(Event):
    event: Literal["procedure-end"] = "procedure-end"
    procedure_id: str
    ok: bool
    elapsed_s: float
    changed: int           # tasks that changed something, over every host
    failures: list[str]    # "host: task: message" of each failed task


class ConsumerKilled(Event):
    event: Literal["consumer-killed"] = "consumer-killed"
    group: str
    pid: int


class LoadEnd(Event):
    event: Literal["load-end"] = "load-end"
    end_ns: int
    producers: list[dict[str, Any]]  # what each producer process got for itself (load.producer_meta)


class HealAfterRun(Event):
    event: Literal["heal-after-run"] = "heal-after-run"


class Healed(Event):
    """Every outstanding fault reverted (their ids), and start.yml run unless every node was seen
    up; not_up says why it ran: what the last look at the cluster found (a node down or not seen,
    the cluster not answering)."""

    event: Literal["healed"] = "healed"
    reverted: list[str] = []
    start_playbook: bool = True
    not_up: list[str] = []


class FinalReadStart(Event):
    event: Literal["final-read-start"] = "final-read-start"


class FinalReadEnd(Event):
    event: Literal["final-read-end"] = "final-read-end"
    end_offsets: dict[int, int]  # per partition


class LedgerCompacted(Event):
    """The run's ledgers merged, each writer's parts into one file (benchmarks.record.ledger.compact)."""

    event: Literal["ledger-compacted"] = "ledger-compacted"
    parts: int                  # parts merged and removed
    files: int                  # files written, one per writer
    bytes_before: int
    bytes_after: int
    took_s: float
    problems: list[str] = []    # writers left as parts, and why (their readers are only slower)


class TopicDeleted(Event):
    """The run's topic deleted once its ledgers were read back and collected (no event when the run
    was asked to keep it); error: why it could not be deleted, which leaves the run valid (its data
    is in the ledgers)."""

    event: Literal["topic-deleted"] = "topic-deleted"
    topic: str
    deleted: bool
    error: str | None = None
    took_s: float


AnyEvent = Annotated[RunStart | HealBeforeRun | ClusterRecovered | FeatureFinalized | ClockOffsets | ProducePathWarm
                     | LoadStart | FaultIntent | FaultSkipped | FaultInjected | FaultMissed | FaultHealStart | FaultHealed
                     | ScheduleStepFailed | RetryWaited | RunFailed
                     | ProcedureStart | ProcedurePlay | ProcedureEnd
                     | ConsumerKilled | LoadEnd | HealAfterRun | Healed | FinalReadStart | FinalReadEnd | LedgerCompacted
                     | TopicDeleted,
                     Field(discriminator="event")]
EVENT = TypeAdapter(AnyEvent)


def event_name(model: type[Event]) -> str:
    """An event's name as it stands in events.jsonl ("fault-injected")."""
    return str(model.model_fields["event"].default)


FAULT_INTENT, FAULT_INJECTED, FAULT_HEALED = (event_name(m) for m in (FaultIntent, FaultInjected, FaultHealed))
FAULT_SKIPPED, FAULT_MISSED = event_name(FaultSkipped), event_name(FaultMissed)
PROCEDURE_START, PROCEDURE_PLAY, PROCEDURE_END = (event_name(m) for m in (ProcedureStart, ProcedurePlay, ProcedureEnd))
