"""The lines of a run's events.jsonl: one typed record per kind of event, a union keyed on its name.

The runner writes them (benchmarks.record.event_log), the analysis, the report and the tests read
them; benchmarks.record.records holds the run's summary and the suite's plan.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, field_validator

from benchmarks.record.records import Record


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
