"""A run's summary (summary.json): its settings, what its ledgers say became of every message
(checked by `benchmarks.check.checker`), or, for a run that never finished its final read, the load's
own counts with `checked` false; written whatever failed before."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.check import checker
from benchmarks.harness import effective
from benchmarks.harness.run_state import Run
from benchmarks.record import ledger, records


def _checked(run_dir: Path) -> tuple[checker.Verdict, dict[str, int]]:
    """The checker's verdict on the run's ledgers, and what each consumer group read."""
    return checker.check_run(ledger.read(run_dir / "ledger" / "produce", ledger.PRODUCE_SCHEMA),
                             ledger.read(run_dir / "ledger" / "consume", ledger.CONSUME_SCHEMA))


def _unchecked(sent: int, acked: int, failed: int, indeterminate: int) -> checker.Verdict:
    """What a run that never reached the end of its final read can say: the load's own counts;
    what became of its acknowledged writes is not known (summary.checked is False)."""
    return checker.Verdict(sent, acked, failed, indeterminate, lost=0, unseen=0, duplicates=0, reordered=0,
                           failed_delivered=0, indeterminate_delivered=0, unledgered=0, final_read=0, missing_ids=[])


def summarize(run: Run) -> records.RunSummary:
    """Counts from the ledgers (from the load's counters when the run could not be checked);
    summary.json, written whatever failed before."""
    s, w, run_dir = run.scenario, run.scenario.workload, run.run_dir
    sent, acked_live, failed, indeterminate = run.workers.totals()
    verdict, consumed = _unchecked(sent, acked_live, failed, indeterminate), run.workers.consumed()
    if run.checked:
        checked: list[tuple[checker.Verdict, dict[str, int]]] = []
        run.checked = run.stage("check", lambda run: checked.append(_checked(run_dir)))
        verdict, consumed = checked[0] if checked else (verdict, consumed)
    start_ns, end_ns = run.start_ns, run.workers.end_ns
    summary = records.RunSummary(
        run_id=run.run_id, scenario=s.name, description=s.description, run_dir=str(run_dir), topic=run.topic,
        metadata_mode=run.inventory.metadata_mode, kafka_version=run.inventory.kafka_version,
        eligible_leader_replicas=run.eligible_leader_replicas, security=run.conn.security,
        acks=s.client.acks, replication_factor=w.replication_factor, min_insync_replicas=w.min_insync_replicas,
        unclean_leader_election=w.unclean_leader_election, partitions=w.partitions, message_size=w.message_size,
        fault=s.fault_label, fault_schedule=[records.ScheduledFault(**f.schedule_entry()) for f in s.faults],
        load_start_ns=start_ns, measured_from_ns=start_ns + int(run.warmup_s * 1e9), load_end_ns=end_ns,
        warm_p50_ms=run.warm_p50_ms if w.rate else None,  # an unthrottled load queues by design
        sent=verdict.sent, acked=verdict.acked, failed=verdict.failed, indeterminate=verdict.indeterminate,
        acked_lost=verdict.acked_lost, acked_lost_ids=verdict.missing_ids, lost=verdict.lost, unseen=verdict.unseen,
        duplicates=verdict.duplicates, final_read=verdict.final_read, consumed=consumed,
        throughput_msgs_s=verdict.acked / ((end_ns - start_ns) / 1e9) if end_ns > start_ns > 0 else 0.0,
        faults=run.fault_log, valid=not run.invalid, invalid_reasons=run.invalid,
        checked=run.checked, failed_steps=run.failed,
        live_counters=records.LiveCounters(sent=sent, acked=acked_live, failed=failed, indeterminate=indeterminate),
        trial=run.trial, trials=s.trials, expect_loss=s.expect_loss, broker_cpu_s=run.broker_cpu_s,
        sweep_of=run.sweep[0] if run.sweep else None,
        sweep_point=[records.SweepValue(path=path, value=json.dumps(value)) for path, value in
                     (run.sweep[1] if run.sweep else {}).items()],
        transactions=records.TransactionProfile(
            messages=s.client.transactions.messages, abort_ratio=s.client.transactions.abort_ratio,
            timeout_ms=s.client.transactions.timeout_ms,
            client=effective.producer_client(s)) if s.client.transactions else None,
    )
    (run_dir / "summary.json").write_text(summary.model_dump_json(indent=2))
    return summary
