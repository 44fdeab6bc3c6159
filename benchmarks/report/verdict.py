"""A verdict per run in plain language, against the other runs of the same sweep.

"0 lost; 18% less throughput than acks=1; 9.8 s without acks on the worst partition during
broker-kill (leader of 0); new leader after 9.4 s". Runs are compared with the runs that had
the same fault schedule: the fastest of them sets the throughput baseline, the one with the
lowest p99 the latency baseline; only the settings that differ are named."""

from __future__ import annotations

from typing import Any

from benchmarks.analysis.rows import RunRow, TrialsRow
from benchmarks.core.codes import BLIND_SHARE

SETTINGS = (("acks", "acks={}"), ("replication_factor", "RF {}"), ("min_insync_replicas", "min ISR {}"),
            ("unclean_leader_election", "unclean election {}"), ("eligible_leader_replicas", "ELR {}"))
ORIGIN = {"isr": "from the ISR", "elr": "from the Eligible Leader Replicas", "unclean": "by an unclean election"}
THROUGHPUT_MARGIN = 0.05  # less than 5% apart is the same throughput on a noisy machine
LATENCY_MARGIN = 1.25


def describe_difference(row: RunRow, baseline: RunRow) -> str:
    parts = [fmt.format(_fmt(getattr(baseline, key))) for key, fmt in SETTINGS
             if getattr(row, key) != getattr(baseline, key)]
    return ", ".join(parts) or baseline.scenario


def _fmt(value: Any) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _against_warm(row: RunRow) -> str:
    return "" if row.warm_p50_ms is None else f" against {row.warm_p50_ms:,.1f} ms on the warmed path"


def _loss_said(row: RunRow, parts: list[str], severity: str) -> str:
    """What the final read found of the run's acknowledged writes, added to `parts`; the severity it leaves."""
    if row.expect_loss:  # a negative control: the loss it was built to cause shows the harness can see it
        if not row.gone:
            parts.append("negative control LOST NOTHING: the harness may be blind to loss")
            severity = "bad"
        else:
            parts.append("negative control: lost acknowledged writes, as it must")
    if row.lost:
        parts.append(f"{_plural(row.lost, 'acknowledged message')} LOST")
        severity = "bad" if not row.expect_loss else severity
    elif not row.unseen:
        parts.append("0 lost")
    if row.unseen:
        # The final read went to the end offsets after healing: these are gone from the log too,
        # only nothing was written after them (the log was truncated below them).
        parts.append(f"{_plural(row.unseen, 'acknowledged message')} MISSING past the end of the log (unseen)")
        severity = "bad" if not row.expect_loss else severity
    return severity


def verdict(row: RunRow, peers: list[RunRow]) -> tuple[str, str]:
    """(verdict, severity) of `row`; severity is bad (acknowledged writes lost or unseen), warn
    (writes refused or unconfirmed, invalid run) or good."""
    parts, severity = [], "good"
    if not row.valid:
        parts.append(f"INVALID run ({'; '.join(row.invalid_reasons or ['reason not recorded'])})")
        severity = "warn"
    if row.steady is False:  # None: too short to judge
        parts.append(f"NOT STEADY before any fault (p99 {row.steady_p99_first_ms or 0:,.0f} ms in its first third, "
                     f"{row.steady_p99_last_ms or 0:,.0f} ms in its last; p50 {row.steady_p50_ms or 0:,.1f} ms"
                     f"{_against_warm(row)}; {row.steady_acked_share or 0:.1%} of its sends acknowledged)")
        severity = "warn"
    if row.checked is False:  # it failed before its final read ended (None: a run of an older version)
        parts.append(f"NOT CHECKED: the run stopped before its final read ended, so what became of its "
                     f"{_plural(row.acked, 'acknowledged write')} is not known")
        severity = "warn" if severity == "good" else severity
    else:
        severity = _loss_said(row, parts, severity)
    severity = _refusals_said(row, parts, severity)
    if row.duplicates:
        parts.append(_plural(row.duplicates, "duplicate"))
    if row.lag_max is not None:
        told, odd = consumers_said(row)
        parts.append(told)
        severity = "warn" if odd and severity == "good" else severity
    if row.txn_committed is not None:
        told, broken = transactions_said(row)
        parts.append(told)
        severity = "bad" if broken else severity
    parts += _against_peers(row, peers) + _faults_said(row)
    return "; ".join(parts), severity


def _refusals_said(row: RunRow, parts: list[str], severity: str) -> str:
    """The sends refused or unconfirmed and what was behind them, added to `parts`; the severity it leaves."""
    refused = row.failed + row.indeterminate
    aborted = row.txn_failed_sends or 0  # messages of transactions that did not commit: purged, as they should
    if refused:
        written = (row.failed_delivered or 0) + (row.indeterminate_delivered or 0)  # None: not checked
        said = [text for n, text in ((row.failed, f"{_plural(row.failed, 'send')} failed"),
                                     (row.indeterminate, f"{_plural(row.indeterminate, 'send')} unconfirmed")) if n]
        parts.append(" and ".join(said) + (f" ({written:,} of them written anyway)" if written else "")
                     + (f" ({aborted:,} of them in transactions that did not commit)" if aborted else ""))
        # What was behind them, where the client retried until it gave up: the brokers' answers,
        # and the client's own errors (librdkafka's names start with "_": timeouts, lost connections).
        causes = sorted((row.causes or {}).items(), key=lambda kv: -kv[1])
        for who, mine in (("the brokers answered", False), ("the client saw", True)):
            named = [f"{name} ({count:,})" for name, count in causes if name.startswith("_") is mine]
            if named:
                parts.append(f"{who} {', '.join(named)}")
        # Refused writes are the point of a negative control's faults, not a warning of its own; nor
        # are the sends of a transaction that was aborted.
        severity = "warn" if severity == "good" and not row.expect_loss and refused > aborted else severity
    return severity


def _against_peers(row: RunRow, peers: list[RunRow]) -> list[str]:
    """How `row` compares with the runs of its sweep that had the same faults: less throughput than the
    fastest, or else a p99 above the quickest's (nothing when it is within the margins)."""
    parts: list[str] = []
    same = [p for p in peers if p.fault == row.fault and p.run_id != row.run_id]
    rate = row.throughput_msgs_s or 0.0
    fastest = max(same, key=lambda p: p.throughput_msgs_s or 0.0, default=None)
    top = (fastest.throughput_msgs_s or 0.0) if fastest else 0.0
    if fastest and top > 0 and rate < (1 - THROUGHPUT_MARGIN) * top:
        less = 1 - rate / top
        parts.append(f"{less:.0%} less throughput than {describe_difference(row, fastest)}")
    else:
        quickest = min((p for p in same if p.latency_p99_ms is not None), key=lambda p: p.latency_p99_ms or 0.0,
                       default=None)
        p99 = row.latency_p99_ms
        if quickest and p99 is not None and (best := quickest.latency_p99_ms or 0.0) > 0 and p99 > LATENCY_MARGIN * best:
            parts.append(f"p99 latency {p99 / best:.1f}x that of "
                         f"{describe_difference(row, quickest)} ({p99:,.0f} ms vs {best:,.0f} ms)")
    return parts


def _faults_said(row: RunRow) -> list[str]:
    """What the run's faults cost: time without acks, a leaderless partition, the new leader and ELR."""
    parts: list[str] = []
    if row.fault_schedule:
        faults = [f"{f['kind']} ({f['target']})" if f["target"] else f["kind"] for f in row.fault_schedule]
        during = faults[0] if len(faults) == 1 else ", ".join(faults[:-1]) + " and " + faults[-1]
        parts.append(f"{row.unavailable_in_fault_s:.1f} s without acks on the worst partition during {during}")
        if row.leaderless_s:
            parts.append(f"partition {row.leaderless_partition} had no leader ({row.leaderless_s:.1f} s "
                         "without acks while leaderless)")
        if row.new_leader_s is not None:
            origins = [ORIGIN.get(o, o) for o in (row.new_leader_from or "").split(",") if o]
            parts.append(f"new leader after {row.new_leader_s:.1f} s" + (f" ({' and '.join(origins)})" if origins else ""))
        parts += _elr_explained(row)
    return parts


def consumers_said(row: RunRow) -> tuple[str, bool]:
    """The consumer groups in words (analysis/consumers.py), and whether one read wrong."""
    said = f"consumers lagged up to {_plural(row.lag_max or 0, 'record')} ({row.lag_max_s or 0:.1f} s)"
    if row.rebalances:
        said += (f", {_plural(row.rebalances, 'rebalance')} under load (slowest {row.rebalance_max_s or 0:.1f} s, "
                 f"{_plural(row.partitions_moved or 0, 'partition')} moved)")
    wrong = [text for n, text in ((row.skipped, f"{row.skipped:,} SKIPPED"),
                                  (row.out_of_order, f"{row.out_of_order:,} read OUT OF ORDER")) if n]
    if row.group_duplicates:
        wrong.append(f"{row.group_duplicates:,} read twice")
    return said + ("; " + ", ".join(wrong) if wrong else ""), bool(row.skipped or row.out_of_order)


def transactions_said(row: RunRow) -> tuple[str, bool]:
    """Exactly-once in words (analysis/transactions.py), and whether it broke its promise."""
    anomalies = [(row.lost_commits, "committed transaction", "LOST (a message missing)"),
                 (row.aborted_reads, "aborted transaction", "READ by read_committed consumers"),
                 (row.torn, "transaction", "TORN (read in part)")]
    found = [f"{_plural(n, word)} {what}" for n, word, what in anomalies if n]
    said = (f"exactly-once ({row.txn_client or 'client unknown'}): {row.txn_committed:,} transactions "
            f"committed, {row.txn_aborted:,} aborted, {row.txn_unknown:,} unconfirmed; "
            + ("; ".join(found) if found else "no lost commit, aborted read or torn transaction"))
    if row.lso_stall_s:
        said += f"; read_committed consumers held back up to {row.lso_stall_s:.1f} s (last stable offset standing still)"
    return said, bool(found)


def _elr_explained(row: RunRow) -> list[str]:
    """What Eligible Leader Replicas (KIP-966, KRaft) changed in this run, in plain words, from
    what the timeline measured: only where it mattered (the ISR went below min ISR, or a leader
    came from the ELR)."""
    said = []
    elr, under, stall = row.eligible_leader_replicas, row.under_min_isr_s or 0.0, row.hw_stall_s or 0.0
    if "elr" in (row.new_leader_from or "").split(","):
        said.append("ELR made a replica that had left the ISR leader cleanly: it held every committed write, so the "
                    "partition neither stayed leaderless nor needed an unclean election")
    if row.acked_invisible:
        said.append(f"{_plural(row.acked_invisible, 'write')} acknowledged while the high watermark stood still "
                    f"({stall:.1f} s with the ISR below min ISR {row.min_insync_replicas}): no consumer could read "
                    "them until the ISR grew back (the leader holds the high watermark while the ISR is below min ISR)")
    elif elr and under > 0:
        said.append(f"the ISR stayed below min ISR {row.min_insync_replicas} for {under:.1f} s with ELR on "
                    f"(the high watermark stood still {stall:.1f} s of it); the replicas that left the ISR stayed "
                    "eligible to lead")
    elif elr is False and under > 0 and row.fault_schedule:
        said.append(f"the ISR stayed below min ISR {row.min_insync_replicas} for {under:.1f} s with ELR off: "
                    "replicas that left it could only come back as leaders through an unclean election")
    return said


def _spread(t: TrialsRow, name: str) -> str:
    median, p90, top = (getattr(t, f"{name}_{which}_s") or 0.0 for which in ("median", "p90", "max"))
    return f"median {median:.1f} s, p90 {p90:.1f} s, max {top:.1f} s"


def trials_verdict(t: TrialsRow) -> tuple[str, str]:
    """(verdict, severity) of a configuration's trials (a row of analysis/trials.py): phrased
    over the trials, with the 95% interval of the share that lost; bad when any trial lost an
    acknowledged write, warn when invalid trials were left out or none was valid."""
    n, lost, invalid = t.trials, t.trials_with_loss, t.trials_invalid
    if t.blind:
        return (f"HARNESS BLIND: this negative control lost acknowledged writes in {lost} of "
                f"{_plural(n, 'valid trial')} (it must in at least {BLIND_SHARE:.0%} of them); no verdict of this "
                "harness on loss can be trusted until it sees the loss it was built to cause"), "bad"
    if not n:
        return f"no valid trial ({_plural(invalid, 'invalid trial')})", "warn"
    if t.expect_loss:
        parts = [f"negative control: lost acknowledged writes in {lost} of {_plural(n, 'trial')}, as it must "
                 f"(median {t.lost_median:,.0f}, max {t.lost_max:,} a trial): the harness sees loss"]
    elif lost:
        parts = [f"lost acknowledged writes in {lost} of {_plural(n, 'trial')} (median {t.lost_median:,.0f}, "
                 f"max {t.lost_max:,} a trial; 95% interval of the share that loses: "
                 f"{t.loss_ci_low:.0%} to {t.loss_ci_high:.0%})"]
    else:
        parts = [f"0 of {_plural(n, 'trial')} lost an acknowledged write (chance that a trial loses: below "
                 f"{t.loss_ci_high:.1%} at 95% confidence)"]
    injections, charged = t.faults_injected or 0, t.injections_with_loss or 0
    if t.recurring:  # many injections of one fault: the evidence per injection too
        per_injection = (f"{charged} of {injections:,} fault injections lost an acknowledged write (95% interval of the "
                         f"share: {t.injection_loss_ci_low:.1%} to {t.injection_loss_ci_high:.1%})")
        if n == 1 and not t.expect_loss:  # one run: its injections are the evidence
            parts = [per_injection + (f"; {t.lost_max:,} acknowledged writes lost" if lost else "")]
        else:
            parts.append(per_injection)
    elif injections:
        parts.append(f"{_plural(injections, 'fault')} injected")
    if t.unavailable_max_s:
        parts.append(f"worst partition without acks: {_spread(t, 'unavailable')}")
    if t.new_leader_max_s is not None:
        parts.append(f"new leader after {_spread(t, 'new_leader')}")
    if t.duplicates:
        parts.append(_plural(t.duplicates, "duplicate"))
    if invalid:
        parts.append(f"{_plural(invalid, 'invalid trial')} left out")
    return "; ".join(parts), "bad" if lost and not t.expect_loss else "warn" if invalid else "good"
