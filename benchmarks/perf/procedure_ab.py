"""A procedure under load with and without one environment setting, side by side on the same
machine: each round deploys the inventory's cluster from nothing, runs the procedure's scenario
(`kafka-bench run`) once with the setting and once without, alternating which goes first, and
reads each run's procedure time (its procedure-end event), the run's validity, the CPU its
producer processes used (their own records) and the p50/p99 of its acks as the run's analysis
gives them (its summary.parquet). Medians and their ratio, per round and overall.

    python -m benchmarks.perf.procedure_ab --inventory inventories/local-upgrade \\
        --scenario benchmarks/suites/operations/02-upgrade.yml --env KAFKA_TOOL_ARCHIVE=off [--rounds 2]

The setting is what the "B" runs get (the environment of kafka-bench, so of its playbooks and
the tools they start); the "A" runs get the environment as it is.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

from benchmarks.core import paths
from benchmarks.harness import load
from benchmarks.perf import save_figures
from benchmarks.record import records, run_events

KAFKA_BENCH = str(Path(sys.executable).parent / "kafka-bench")
LATENCY = ("latency_p50_ms", "latency_p99_ms")  # the analysis' figures read for each run


def kafka_bench(*args: str) -> None:
    subprocess.run([KAFKA_BENCH, *args], check=True, stdout=subprocess.DEVNULL)


@dataclasses.dataclass(frozen=True)
class ProcedureRun:
    """One run of the scenario: its procedures' seconds, whether they and the run succeeded."""

    procedure_s: float
    procedures_ok: bool
    valid: bool
    lost: int
    acked: int
    producers_cpu_s: float
    latency_p50_ms: float | None  # the analysis' (summary.parquet), None without one
    latency_p99_ms: float | None


def procedure_run(scenario: Path, inventory: Path, env: dict[str, str]) -> ProcedureRun:
    """Run the scenario once; its procedures' seconds, whether they and the run succeeded."""
    with tempfile.TemporaryDirectory(prefix="kb-procedure-ab-") as tmp:
        subprocess.run([KAFKA_BENCH, "run", str(scenario), "-i", str(inventory), "--results", tmp],
                       env=env, stdout=subprocess.DEVNULL, check=False)
        [run_dir] = [events.parent for events in Path(tmp).rglob("events.jsonl")]
        ends = [event for line in (run_dir / "events.jsonl").read_text().splitlines()
                if isinstance(event := run_events.EVENT.validate_json(line), run_events.ProcedureEnd)]
        summary = records.RunSummary.model_validate_json((run_dir / "summary.json").read_text())
        cpu_s = sum(meta["cpu_s"] for meta in load.producer_meta(run_dir / "ledger" / "produce"))
        [analysed] = pq.read_table(run_dir.parent / "summary.parquet", columns=list(LATENCY)).to_pylist()
    return ProcedureRun(sum(e.elapsed_s for e in ends), bool(ends) and all(e.ok for e in ends), summary.valid,
                        summary.lost, summary.acked, round(cpu_s, 1), **analysed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inventory", type=Path, required=True)
    parser.add_argument("--scenario", type=Path, required=True)
    parser.add_argument("--env", required=True, help="NAME=VALUE: the setting the B runs get")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of one A and one B run, alternating the order")
    args = parser.parse_args()
    name, sep, value = args.env.partition("=")
    if not sep or not name:
        parser.error(f"--env {args.env!r}: give NAME=VALUE")
    envs = {"A": dict(os.environ), "B": {**os.environ, name: value}}
    runs: dict[str, list[ProcedureRun]] = {"A": [], "B": []}
    rows: dict[str, list[dict[str, object]]] = {"A": [], "B": []}
    for round_ in range(1, args.rounds + 1):
        for side in ("A", "B") if round_ % 2 else ("B", "A"):
            kafka_bench("cluster", "down", "--purge", "-i", str(args.inventory))
            kafka_bench("cluster", "up", "-i", str(args.inventory))
            row = procedure_run(args.scenario, args.inventory, envs[side])
            runs[side].append(row)
            rows[side].append({"round": round_, **dataclasses.asdict(row)})
            print(f"round {round_} {side} ({'as is' if side == 'A' else args.env}): procedure {row.procedure_s:.1f} s, "
                  f"ok {row.procedures_ok}, valid {row.valid}, lost {row.lost} of {row.acked} acked, producers' CPU "
                  f"{row.producers_cpu_s:.1f} s, acks p50 {row.latency_p50_ms} ms p99 {row.latency_p99_ms} ms",
                  flush=True)
    kafka_bench("cluster", "down", "--purge", "-i", str(args.inventory))

    def medians(field: str) -> dict[str, float | None]:
        """Per side, the median of a ProcedureRun field over the runs that have it."""
        values = {side: [v for r in side_runs if (v := getattr(r, field)) is not None] for side, side_runs in runs.items()}
        return {side: statistics.median(v) if v else None for side, v in values.items()}

    med = medians("procedure_s")
    assert med["A"] is not None and med["B"] is not None  # every run has its procedure's seconds
    results = {"inventory": str(args.inventory), "scenario": str(args.scenario), "b_env": args.env,
               "rounds": args.rounds, "median_procedure_s": med, "a_over_b": med["A"] / med["B"], "raw": rows,
               "project": str(paths.PROJECT_ROOT)}
    print(f"procedure time, medians of {args.rounds}: {med['A']:.1f} s as is, {med['B']:.1f} s with {args.env} "
          f"(as is / with: {results['a_over_b']:.2f})")
    for field in ("producers_cpu_s", *LATENCY):
        by_side = results[f"median_{field}"] = medians(field)
        print(f"{field}, medians: {by_side['A']} as is, {by_side['B']} with {args.env}")
    print(f"figures: {save_figures('procedure-ab', results)}")


if __name__ == "__main__":
    main()
