"""A synthetic run directory of any size, laid out and typed exactly as `kafka-bench run`
writes it, for measuring the analysis (10 million messages would take the local cluster
hours to produce with a ledger). The run has what the analysis looks for: a leader kill of
partition 0 with a 10 s leaderless window, acknowledged writes truncated away (lost),
timed-out sends of which half landed, duplicates and reordered pairs.

    python -m benchmarks.perf.ledger_synth DIR --messages 1000000
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.record import ledger, timeline_schema

RUN_ID = "synthetic"
T0 = 1_800_000_000_000_000_000
RATE = 50_000          # messages/s over both producers
PARTITIONS = 3
FAULT_AT = 0.4         # fraction of the load
LEADERLESS_S = 10.0
PART_ROWS = 1_000_000  # rows per Parquet part, as the ledger writer flushes


def _write_parts(directory: Path, prefix: str, table: pa.Table) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for index, start in enumerate(range(0, table.num_rows, PART_ROWS)):
        pq.write_table(table.slice(start, PART_ROWS), directory / f"{prefix}-{index:05d}.parquet", compression="zstd")


def generate(directory: Path, messages: int, seed: int = 1) -> Path:
    """Write the run under `directory/synthetic-N/` and return that path."""
    rng = np.random.default_rng(seed)
    run_dir = Path(directory) / f"{RUN_ID}-{messages}"
    n = messages
    i = np.arange(n, dtype=np.int64)
    producer = (i % 2).astype(np.int32)
    seq = i // 2
    key = (i % 64).astype(np.int32)
    partition = (key % PARTITIONS).astype(np.int32)
    duration_ns = int(n / RATE * 1e9)
    intended = T0 + i * (10**9 // RATE)
    sent = intended + 30_000 + rng.integers(0, 10_000, n)  # a producer sends in its own order
    ack = sent + (rng.lognormal(np.log(3e6), 0.5, n)).astype(np.int64)
    fault_ns = T0 + int(duration_ns * FAULT_AT)
    back_ns = fault_ns + int(LEADERLESS_S * 1e9)
    in_fault = (partition == 0) & (sent >= fault_ns) & (sent < back_ns)
    ack[in_fault] = back_ns + rng.exponential(20e6, int(in_fault.sum())).astype(np.int64)
    outcome = np.full(n, "acked", dtype=object)
    indeterminate = in_fault & (rng.random(n) < 0.001)
    outcome[indeterminate] = "indeterminate"
    landed = indeterminate & (rng.random(n) < 0.5)
    # Acknowledged by the old leader in its last 20 ms, truncated by the new one: lost.
    lost = (partition == 0) & (ack < fault_ns) & (sent >= fault_ns - 20_000_000)
    in_log = (outcome == "acked") | landed
    # Offsets: each partition's log in send order (the landed timed-out sends included).
    order = np.lexsort((sent, partition))
    offset = np.empty(n, dtype=np.int64)
    for p in range(PARTITIONS):
        members = order[partition[order] == p]
        offset[members] = np.arange(members.size)
    # A few neighbours swapped in the log: reordered.
    swap = np.flatnonzero((rng.random(n) < 0.0001) & (partition != 0))
    members_of = {p: order[partition[order] == p] for p in range(PARTITIONS)}  # index by offset
    for a in swap:
        members = members_of[int(partition[a])]
        later = [b for b in members[offset[a] + 1:offset[a] + 10] if producer[b] == producer[a]]
        if later:  # the next message of the same producer in this partition goes first
            b = later[0]
            offset[a], offset[b] = offset[b], offset[a]
            members[offset[a]], members[offset[b]] = a, b
    acked = outcome == "acked"
    ack_col = np.where(outcome == "indeterminate", 0, ack)
    produce = pa.table({
        "run_id": pa.array(np.full(n, RUN_ID, dtype=object), pa.string()),
        "producer": producer, "seq": seq, "key": key, "intended_ns": intended, "sent_ns": sent,
        "ack_ns": pa.array(ack_col, mask=~acked, type=pa.int64()),
        "outcome": pa.array(outcome, pa.string()),
        "partition": pa.array(partition, mask=~acked, type=pa.int32()),
        "offset": pa.array(offset, mask=~acked, type=pa.int64()),
        "error": pa.array(["_MSG_TIMED_OUT" if o == "indeterminate" else None for o in outcome], pa.string()),
        "cause": pa.array(["NOT_ENOUGH_REPLICAS" if o == "indeterminate" else None for o in outcome], pa.string()),
    }, schema=ledger.PRODUCE_SCHEMA)
    _write_parts(run_dir / "ledger" / "produce", "produce", produce)

    read = in_log & ~lost
    dup = np.flatnonzero(read & (ack > back_ns) & (rng.random(n) < 0.0001))
    rows = np.concatenate([np.flatnonzero(read), dup])
    read_offset = offset[rows].copy()
    tail = {p: int(offset[partition == p].max()) + 1 for p in range(PARTITIONS)}
    for idx in range(read_offset.size - dup.size, read_offset.size):
        p = int(partition[rows[idx]])
        read_offset[idx] = tail[p]
        tail[p] += 1
    m = rows.size
    end_ns = T0 + duration_ns
    consume = pa.concat_tables([
        pa.table({"run_id": pa.array(np.full(m, RUN_ID, dtype=object), pa.string()),
                  "group": pa.array(np.full(m, name, dtype=object), pa.string()),
                  "consumer": pa.array(np.full(m, consumer, dtype=object), pa.string()),
                  "producer": producer[rows], "seq": seq[rows], "partition": partition[rows], "offset": read_offset,
                  "sent_ns": sent[rows], "consumed_ns": consumed},
                 schema=ledger.CONSUME_SCHEMA)
        for name, consumer, consumed in (("final-read", "final", np.full(m, end_ns + 30 * 10**9)),
                                         ("readers", "c0", ack[rows] + 2_000_000))])
    _write_parts(run_dir / "ledger" / "consume", "consume", consume)

    samples = []
    for t in range(T0, end_ns + 5 * 10**9, 500_000_000):
        for p in range(PARTITIONS):
            leader, isr = (1, "1,2,0") if p == 0 else (p + 1 if p < 2 else 0, "1,2,0")
            if p == 0 and fault_ns <= t < back_ns - 500_000_000:
                leader, isr = 1, "1,2,0"  # ZooKeeper has not expired the killed broker's session yet
            elif p == 0 and t >= back_ns - 500_000_000:
                leader, isr = 2, "2,0"
            samples.append((RUN_ID, t, 0, "0,1,2", p, leader, "1,2,0", isr, None))
    _write_parts(run_dir / "timeline", "timeline",
                 pa.Table.from_pylist([dict(zip(timeline_schema.TIMELINE_SCHEMA.names, s)) for s in samples],
                                      schema=timeline_schema.TIMELINE_SCHEMA))
    warmup_ns = int(duration_ns * 0.05)
    (run_dir / "summary.json").write_text(json.dumps({
        "run_id": RUN_ID, "scenario": f"synthetic-{n}", "description": "synthetic ledger for the analysis benchmark",
        "acks": "all", "replication_factor": 3, "min_insync_replicas": 2, "unclean_leader_election": False,
        "partitions": PARTITIONS, "message_size": 100, "fault": "broker-kill (leader of 0)",
        "fault_schedule": [{"kind": "broker-kill", "target": "leader of 0", "at_s": 0.5 * duration_ns / 1e9,
                            "heal_at_s": None}],
        "load_start_ns": T0, "measured_from_ns": T0 + warmup_ns, "load_end_ns": end_ns, "valid": True,
        "invalid_reasons": []}))
    with open(run_dir / "events.jsonl", "w", encoding="utf-8") as handle:
        for event in ({"run_id": RUN_ID, "t_ns": fault_ns - 10**9, "event": "fault-intent", "fault_id": "f1",
                       "kind": "broker-kill", "broker": 1, "reason": "leader of 0"},
                      {"run_id": RUN_ID, "t_ns": fault_ns, "event": "fault-injected", "fault_id": "f1", "at_ns": fault_ns}):
            handle.write(json.dumps(event) + "\n")
    return run_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--messages", type=int, default=1_000_000)
    args = parser.parse_args()
    print(generate(args.directory, args.messages))


if __name__ == "__main__":
    main()
