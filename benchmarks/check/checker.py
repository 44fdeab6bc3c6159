"""The single-run checker: what became of every message of one run, from its ledgers.

The same definitions as the Spark jobs (`benchmarks.core.codes.STATUSES`; `analysis/metrics.py`
computes them for many runs at once): the runner's end-of-run counts and `cluster smoke` use
this one, and tests/analysis/test_checker.py proves that both give the same answers on the
same ledgers. Vectorised with numpy over Arrow columns: a run of a few million messages is
checked in seconds.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.core.codes import FINAL_READ, OUTCOMES

_SEQ_BITS = 40  # a message id is (producer << 40) | seq


@dataclasses.dataclass(frozen=True)
class Verdict:
    sent: int
    acked: int
    failed: int
    indeterminate: int
    lost: int
    unseen: int
    duplicates: int
    reordered: int
    failed_delivered: int
    indeterminate_delivered: int
    unledgered: int
    final_read: int                # distinct messages the final read found
    missing_ids: list[str]         # the first `show` acknowledged and gone (lost or unseen), "producer:seq"

    @property
    def acked_lost(self) -> int:
        """Acknowledged and not in the log: lost or unseen."""
        return self.lost + self.unseen

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _ids(table: pa.Table) -> np.ndarray:
    producer = table.column("producer").to_numpy(zero_copy_only=False).astype(np.int64)
    return (producer << _SEQ_BITS) | table.column("seq").to_numpy(zero_copy_only=False).astype(np.int64)


def _ints(table: pa.Table, name: str, null: int = -1) -> np.ndarray:
    return pc.fill_null(table.column(name), null).to_numpy(zero_copy_only=False).astype(np.int64)


def check(produce: pa.Table, final_read: pa.Table, show: int = 20) -> Verdict:
    """`produce`: the run's produce ledger (producer, seq, outcome, partition, offset);
    `final_read`: what the final read found (producer, seq, partition, offset), every copy.
    The ids of the first `show` acknowledged messages that are gone are listed."""
    sent_ids = _ids(produce)
    outcome = pc.index_in(produce.column("outcome"), value_set=pa.array(OUTCOMES)).to_numpy(zero_copy_only=False)
    ack_partition, ack_offset = _ints(produce, "partition"), _ints(produce, "offset")
    read_ids, read_partition, read_offset = _ids(final_read), _ints(final_read, "partition"), _ints(final_read, "offset")

    # Copies per message, and each read message's first copy (its place in the log).
    order = np.lexsort((read_offset, read_ids))
    ids_sorted = read_ids[order]
    first = np.ones(len(ids_sorted), dtype=bool)
    first[1:] = ids_sorted[1:] != ids_sorted[:-1]
    distinct = ids_sorted[first]
    copies = np.diff(np.append(np.flatnonzero(first), len(ids_sorted)))
    first_partition, first_offset = read_partition[order][first], read_offset[order][first]

    read_any = np.isin(sent_ids, distinct)
    # The highest offset the final read found per partition; an ack without a partition or
    # offset (acks=0) has no later message to compare with.
    highest = np.full(int(max(read_partition.max(initial=-1), ack_partition.max(initial=-1))) + 2, -1, np.int64)
    np.maximum.at(highest, read_partition + 1, read_offset)
    later_read = (ack_offset >= 0) & (highest[ack_partition + 1] > ack_offset)
    acked, failed, indeterminate = (outcome == i for i in range(3))
    gone = acked & ~read_any
    lost, unseen = gone & later_read, gone & ~later_read
    missing = [f"{i >> _SEQ_BITS}:{i & ((1 << _SEQ_BITS) - 1)}" for i in np.sort(sent_ids[gone])[:show]]
    return Verdict(
        sent=len(sent_ids), acked=int(acked.sum()), failed=int(failed.sum()), indeterminate=int(indeterminate.sum()),
        lost=int(lost.sum()), unseen=int(unseen.sum()), duplicates=int((copies - 1).sum()),
        reordered=_reordered(distinct, first_partition, first_offset),
        failed_delivered=int((failed & read_any).sum()), indeterminate_delivered=int((indeterminate & read_any).sum()),
        unledgered=int((~np.isin(distinct, sent_ids)).sum()), final_read=len(distinct), missing_ids=missing)


def _reordered(ids: np.ndarray, partition: np.ndarray, offset: np.ndarray) -> int:
    """First copies in the log that follow a later message of the same producer in the same partition."""
    if not len(ids):
        return 0
    producer, seq = ids >> _SEQ_BITS, ids & ((1 << _SEQ_BITS) - 1)
    order = np.lexsort((offset, producer, partition))
    producer, partition, seq = producer[order], partition[order], seq[order]
    group = np.cumsum(np.r_[True, (producer[1:] != producer[:-1]) | (partition[1:] != partition[:-1])]) - 1
    # Within a group, the highest seq before each message: a running maximum of (group, seq)
    # packed into one integer, since groups come in ascending order.
    packed = (group.astype(np.int64) << _SEQ_BITS) | seq
    before = np.r_[-1, np.maximum.accumulate(packed)[:-1]]
    return int((packed < before).sum())


def check_run(produce: pa.Table, consume: pa.Table) -> tuple[Verdict, dict[str, int]]:
    """A run's verdict from its two ledgers, and the distinct messages each consumer group read."""
    final = consume.filter(pc.equal(consume.column("group"), FINAL_READ))
    groups: dict[str, int] = {}
    for group in sorted(set(consume.column("group").to_pylist()) - {FINAL_READ}):
        groups[group] = len(np.unique(_ids(consume.filter(pc.equal(consume.column("group"), group)))))
    return check(produce, final), groups
