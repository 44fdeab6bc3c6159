"""The timeline's Parquet tables (a run's timeline/ directory): one row per partition of the run's
topic per sample (leader, replicas, ISR, high watermark; in KRaft the quorum's epoch, fenced
brokers and ELR too) and, in KRaft, one row per controller per sample (`quorum`). Written by
`benchmarks.harness.timeline`, read by the analysis."""

from __future__ import annotations

import pyarrow as pa

TIMELINE_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("t_ns", pa.int64()),
    ("controller", pa.int32()),       # null when no broker answered
    ("brokers_alive", pa.string()),   # comma-separated broker ids registered
    ("partition", pa.int32()),
    ("leader", pa.int32()),           # null: no leader
    ("replicas", pa.string()),
    ("isr", pa.string()),
    ("error", pa.string()),           # why the sample is empty, if it is
])
#: Columns of KRaft clusters (null in ZooKeeper mode, and absent from runs of older versions).
TIMELINE_KRAFT_FIELDS = [
    pa.field("controller_epoch", pa.int32()),  # the quorum leader's epoch; null: no leader
    pa.field("fenced", pa.string()),           # comma-separated broker ids registered but fenced
    pa.field("elr", pa.string()),              # the partition's Eligible Leader Replicas; null: ELR off
    pa.field("last_known_elr", pa.string()),
]
#: The partition's high watermark (ListOffsets latest, read uncommitted): the offset below which
#: consumers may read. Null when its leader did not answer in time; absent from runs of older versions.
TIMELINE_HW_FIELDS = [pa.field("high_watermark", pa.int64())]
#: The partition's last stable offset (ListOffsets latest, read committed): what read_committed
#: consumers may read; below the high watermark while a transaction is open. Sampled in
#: transactional runs only (null otherwise, and absent from runs of older versions).
TIMELINE_TXN_FIELDS = [pa.field("last_stable_offset", pa.int64())]
TIMELINE_SCHEMA = pa.schema(list(TIMELINE_SCHEMA) + TIMELINE_KRAFT_FIELDS + TIMELINE_HW_FIELDS + TIMELINE_TXN_FIELDS)

#: One row per controller per sample (KRaft): where the quorum stands.
QUORUM_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("t_ns", pa.int64()),
    ("leader", pa.int32()),           # null: no leader, the quorum did not answer
    ("epoch", pa.int32()),
    ("high_watermark", pa.int64()),
    ("node", pa.int32()),             # null with the error when nothing answered
    ("voter", pa.bool_()),
    ("lag", pa.int64()),              # metadata records behind the high watermark
    ("error", pa.string()),
])
