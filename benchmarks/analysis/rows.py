"""The analysis' rows as the report reads them: by attribute, typed. A run's row (`RunRow`, a
row of summary.csv) and a configuration's trials summed up (`TrialsRow`, a row of trials.csv).

The analysis computes these columns (`metrics.RUN_COLUMNS`, `trials.TRIALS_COLUMNS`, in these
orders: a test holds each pair to the same names); `.of` takes a collected row. No PySpark here:
the report's readers and the tests build rows without a Spark session. A figure is None where
the analysis has none: what a final read tells (lost, unseen, duplicates, ...) for a run that
could not be checked, timings of a run without faults, the transaction and consumer-group
figures of runs without them, the spread of trials none of which was valid.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunRow:
    # What ran, on what, with which settings.
    run_id: str
    scenario: str
    description: str | None = None
    metadata_mode: str | None = None
    kafka_version: str | None = None
    eligible_leader_replicas: bool | None = None  # None: not known (ZooKeeper has none)
    security: str | None = None
    acks: str = "all"
    replication_factor: int = 3
    min_insync_replicas: int = 1
    unclean_leader_election: bool = False
    fault: str = "none"  # the schedule in words
    fault_schedule: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # ScheduledFault, as data
    # What became of the writes.
    sent: int = 0
    acked: int = 0
    failed: int = 0
    indeterminate: int = 0
    lost: int | None = 0
    unseen: int | None = 0
    duplicates: int | None = 0
    reordered: int | None = 0
    failed_delivered: int | None = 0
    indeterminate_delivered: int | None = 0
    # Throughput and latency.
    throughput_msgs_s: float | None = None
    throughput_mb_s: float | None = None
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    latency_p999_ms: float | None = None
    latency_max_ms: float | None = None
    send_latency_p99_ms: float | None = None
    e2e_p99_ms: float | None = None
    # Unavailability and leadership.
    unavailable_s: float | None = None
    unavailable_in_fault_s: float | None = None
    leaderless_partition: int | None = None
    leaderless_s: float | None = None
    under_min_isr_s: float | None = None
    hw_stall_s: float | None = None
    acked_invisible: int | None = None
    new_leader_s: float | None = None
    new_leader_from: str | None = None  # "isr", "elr", "unclean", comma-separated
    # Steadiness before any fault.
    steady: bool | None = None  # None: too short to judge
    steady_p99_first_ms: float | None = None
    steady_p99_last_ms: float | None = None
    steady_p50_ms: float | None = None
    warm_p50_ms: float | None = None
    steady_acked_share: float | None = None
    causes: dict[str, int] | None = None  # broker and client errors behind failed and unconfirmed sends
    faults_injected: int | None = None
    injections_with_loss: int | None = None
    # Exactly-once (transactional runs only).
    txn_committed: int | None = None
    txn_aborted: int | None = None
    txn_unknown: int | None = None
    lost_commits: int | None = None
    aborted_reads: int | None = None
    torn: int | None = None
    lso_stall_s: float | None = None
    txn_failed_sends: int | None = None
    txn_client: str | None = None
    # Consumer groups (runs with groups only).
    lag_max: int | None = None
    lag_max_s: float | None = None
    rebalances: int | None = None
    rebalance_max_s: float | None = None
    partitions_moved: int | None = None
    skipped: int | None = None
    out_of_order: int | None = None
    group_duplicates: int | None = None
    # The brokers' CPU, the sweep, the trial, the run's standing.
    broker_cpu_s: float | None = None
    broker_cpu_ms_per_1k: float | None = None
    sweep_of: str | None = None
    sweep_point: list[dict[str, Any]] | None = None
    trial: int = 1
    expect_loss: bool = False  # a negative control
    valid: bool = True
    invalid_reasons: list[str] = dataclasses.field(default_factory=list)
    checked: bool | None = True  # False: its final read did not end (None: a run of an older version)
    # What it gains of its configuration's trials.
    trials: int | None = None
    trials_with_loss: int | None = None
    loss_ci_low: float | None = None
    loss_ci_high: float | None = None

    @classmethod
    def of(cls, row: dict[str, Any]) -> RunRow:
        """A collected row (`Row.asDict(recursive=True)`); lists and maps the analysis left null as empty."""
        return cls(**{**row, "fault_schedule": row.get("fault_schedule") or [],
                      "invalid_reasons": row.get("invalid_reasons") or []})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def gone(self) -> int:
        """Acknowledged writes lost or unseen (0 for a run that could not be checked: it says so)."""
        return (self.lost or 0) + (self.unseen or 0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrialsRow:
    """A configuration (scenario, metadata mode, release, security) over its trials."""

    scenario: str
    metadata_mode: str | None = None
    kafka_version: str | None = None
    security: str | None = None
    acks: str = "all"
    replication_factor: int = 3
    min_insync_replicas: int = 1
    unclean_leader_election: bool = False
    fault: str = "none"
    expect_loss: bool = False  # a negative control
    blind: bool = False  # a negative control that lost in fewer than BLIND_SHARE of its valid trials
    recurring: bool = False  # a recurring fault: the evidence is per injection too
    trials: int = 0  # valid trials
    trials_invalid: int = 0
    trials_with_loss: int = 0
    loss_ci_low: float | None = None  # 95% interval of the share of trials that lose (None: no valid trial)
    loss_ci_high: float | None = None
    lost_median: float | None = None
    lost_max: int | None = None
    unavailable_median_s: float | None = None
    unavailable_p90_s: float | None = None
    unavailable_max_s: float | None = None
    new_leader_median_s: float | None = None
    new_leader_p90_s: float | None = None
    new_leader_max_s: float | None = None
    duplicates: int | None = None
    faults_injected: int | None = None
    injections_with_loss: int | None = None
    injection_loss_ci_low: float | None = None
    injection_loss_ci_high: float | None = None

    @classmethod
    def of(cls, row: dict[str, Any]) -> TrialsRow:
        return cls(**row)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


RUN_ROW_COLUMNS = tuple(f.name for f in dataclasses.fields(RunRow))
TRIALS_ROW_COLUMNS = tuple(f.name for f in dataclasses.fields(TrialsRow))
