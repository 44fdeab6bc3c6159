"""A synthetic run directory of any size, laid out and typed exactly as `kafka-bench run`
writes it, for measuring the analysis (10 million messages would take the local cluster
hours to produce with a ledger). The run has what the analysis looks for: a leader kill of
partition 0 with a 10 s leaderless window, acknowledged writes truncated away (lost),
timed-out sends of which half landed, duplicates and reordered pairs.

    python -m benchmarks.perf.ledger_synth DIR --messages 1000000
"""

from __future__ import annotations

import argparse
import dataclasses
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


@dataclasses.dataclass(frozen=True)
class Messages:
    """Every message of the synthetic run, one array per column, and the fault's window."""

    producer: np.ndarray
    seq: np.ndarray
    key: np.ndarray
    partition: np.ndarray
    intended: np.ndarray
    sent: np.ndarray
    ack: np.ndarray
    outcome: np.ndarray
    offset: np.ndarray
    in_log: np.ndarray   # in the partition's log: acknowledged, or timed out and landed
    lost: np.ndarray     # acknowledged by the killed leader, truncated by the new one
    duration_ns: int
    fault_ns: int
    back_ns: int         # partition 0 has a leader again

    @property
    def size(self) -> int:
        return int(self.producer.size)


def _messages(rng: np.random.Generator, n: int) -> Messages:
    """Two producers at RATE; partition 0 leaderless for LEADERLESS_S from FAULT_AT of the load."""
    i = np.arange(n, dtype=np.int64)
    producer = (i % 2).astype(np.int32)
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
    return Messages(producer, i // 2, key, partition, intended, sent, ack, outcome,
                    _offsets(rng, partition, producer, sent), in_log, lost, duration_ns, fault_ns, back_ns)


def _offsets(rng: np.random.Generator, partition: np.ndarray, producer: np.ndarray, sent: np.ndarray) -> np.ndarray:
    """Each partition's log in send order (the landed timed-out sends included), with a few
    neighbours of the same producer swapped: reordered."""
    order = np.lexsort((sent, partition))
    offset = np.empty(partition.size, dtype=np.int64)
    for p in range(PARTITIONS):
        members = order[partition[order] == p]
        offset[members] = np.arange(members.size)
    swap = np.flatnonzero((rng.random(partition.size) < 0.0001) & (partition != 0))
    members_of = {p: order[partition[order] == p] for p in range(PARTITIONS)}  # index by offset
    for a in swap:
        members = members_of[int(partition[a])]
        later = [b for b in members[offset[a] + 1:offset[a] + 10] if producer[b] == producer[a]]
        if later:  # the next message of the same producer in this partition goes first
            b = later[0]
            offset[a], offset[b] = offset[b], offset[a]
            members[offset[a]], members[offset[b]] = a, b
    return offset


def _produce_table(m: Messages) -> pa.Table:
    acked = m.outcome == "acked"
    timed_out = m.outcome == "indeterminate"
    return pa.table({
        "run_id": pa.array(np.full(m.size, RUN_ID, dtype=object), pa.string()),
        "producer": m.producer, "seq": m.seq, "key": m.key, "intended_ns": m.intended, "sent_ns": m.sent,
        "ack_ns": pa.array(np.where(timed_out, 0, m.ack), mask=~acked, type=pa.int64()),
        "outcome": pa.array(m.outcome, pa.string()),
        "partition": pa.array(m.partition, mask=~acked, type=pa.int32()),
        "offset": pa.array(m.offset, mask=~acked, type=pa.int64()),
        "error": pa.array(["_MSG_TIMED_OUT" if o == "indeterminate" else None for o in m.outcome], pa.string()),
        "cause": pa.array(["NOT_ENOUGH_REPLICAS" if o == "indeterminate" else None for o in m.outcome], pa.string()),
    }, schema=ledger.PRODUCE_SCHEMA)


def _consume_table(rng: np.random.Generator, m: Messages) -> pa.Table:
    """What the final read and a consumer group read: every message in the log but the lost,
    and a few duplicates after the fault, at the partitions' tails."""
    read = m.in_log & ~m.lost
    dup = np.flatnonzero(read & (m.ack > m.back_ns) & (rng.random(m.size) < 0.0001))
    rows = np.concatenate([np.flatnonzero(read), dup])
    read_offset = m.offset[rows].copy()
    tail = {p: int(m.offset[m.partition == p].max()) + 1 for p in range(PARTITIONS)}
    for idx in range(read_offset.size - dup.size, read_offset.size):
        p = int(m.partition[rows[idx]])
        read_offset[idx] = tail[p]
        tail[p] += 1
    count, end_ns = rows.size, T0 + m.duration_ns
    return pa.concat_tables([
        pa.table({"run_id": pa.array(np.full(count, RUN_ID, dtype=object), pa.string()),
                  "group": pa.array(np.full(count, name, dtype=object), pa.string()),
                  "consumer": pa.array(np.full(count, consumer, dtype=object), pa.string()),
                  "producer": m.producer[rows], "seq": m.seq[rows], "partition": m.partition[rows],
                  "offset": read_offset, "sent_ns": m.sent[rows], "consumed_ns": consumed},
                 schema=ledger.CONSUME_SCHEMA)
        for name, consumer, consumed in (("final-read", "final", np.full(count, end_ns + 30 * 10**9)),
                                         ("readers", "c0", m.ack[rows] + 2_000_000))])


def _timeline_table(m: Messages) -> pa.Table:
    """A sample every 500 ms per partition: partition 0's leader changes once the killed broker's
    ZooKeeper session has expired, half a second before it has a leader again."""
    samples = []
    for t in range(T0, T0 + m.duration_ns + 5 * 10**9, 500_000_000):
        for p in range(PARTITIONS):
            leader, isr = (1, "1,2,0") if p == 0 else (p + 1 if p < 2 else 0, "1,2,0")
            if p == 0 and t >= m.back_ns - 500_000_000:
                leader, isr = 2, "2,0"
            samples.append((RUN_ID, t, 0, "0,1,2", p, leader, "1,2,0", isr, None))
    return pa.Table.from_pylist([dict(zip(timeline_schema.TIMELINE_SCHEMA.names, s)) for s in samples],
                                schema=timeline_schema.TIMELINE_SCHEMA)


def _write_summary_and_events(run_dir: Path, m: Messages) -> None:
    warmup_ns = int(m.duration_ns * 0.05)
    (run_dir / "summary.json").write_text(json.dumps({
        "run_id": RUN_ID, "scenario": f"synthetic-{m.size}", "description": "synthetic ledger for the analysis benchmark",
        "acks": "all", "replication_factor": 3, "min_insync_replicas": 2, "unclean_leader_election": False,
        "partitions": PARTITIONS, "message_size": 100, "fault": "broker-kill (leader of 0)",
        "fault_schedule": [{"kind": "broker-kill", "target": "leader of 0", "at_s": 0.5 * m.duration_ns / 1e9,
                            "heal_at_s": None}],
        "load_start_ns": T0, "measured_from_ns": T0 + warmup_ns, "load_end_ns": T0 + m.duration_ns, "valid": True,
        "invalid_reasons": []}))
    with open(run_dir / "events.jsonl", "w", encoding="utf-8") as handle:
        for event in ({"run_id": RUN_ID, "t_ns": m.fault_ns - 10**9, "event": "fault-intent", "fault_id": "f1",
                       "kind": "broker-kill", "broker": 1, "reason": "leader of 0"},
                      {"run_id": RUN_ID, "t_ns": m.fault_ns, "event": "fault-injected", "fault_id": "f1",
                       "at_ns": m.fault_ns}):
            handle.write(json.dumps(event) + "\n")


def generate(directory: Path, messages: int, seed: int = 1) -> Path:
    """Write the run under `directory/synthetic-N/` and return that path."""
    rng = np.random.default_rng(seed)
    run_dir = Path(directory) / f"{RUN_ID}-{messages}"
    m = _messages(rng, messages)
    _write_parts(run_dir / "ledger" / "produce", "produce", _produce_table(m))
    _write_parts(run_dir / "ledger" / "consume", "consume", _consume_table(rng, m))
    _write_parts(run_dir / "timeline", "timeline", _timeline_table(m))
    _write_summary_and_events(run_dir, m)
    return run_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--messages", type=int, default=1_000_000)
    args = parser.parse_args()
    print(generate(args.directory, args.messages))


if __name__ == "__main__":
    main()
