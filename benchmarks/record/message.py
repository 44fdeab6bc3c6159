"""The message contract: what every producer of a run writes and every reader decodes.

A message's value starts with a header (the run's tag, the producer's index, the message's
sequence number, its send time); its key, in a keyed workload, follows from the producer and
the sequence number. This module is the one definition: the librdkafka producers, the
consumers and the final read (`benchmarks.harness.load`) use it, the produce-path warm-up's messages
carry a tag no run has, and the Java producer (`benchmarks/java/LedgerProducer.java`) gets the
key rule and the header layout in its settings (`java_settings`) and refuses to start when the
layout it writes is not this one.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from benchmarks.record import ledger

# The header: run tag (8 bytes), producer (u32), sequence (u64), send time (ns since the epoch, i64).
HEADER_FORMAT = ">8sIQq"
HEADER = struct.Struct(HEADER_FORMAT)
TAG_SIZE = 8
# Message `seq` of producer `p` has key (p * KEY_STRIDE + seq) % keys: every producer walks all
# the keys, each from its own starting point. The key's bytes: KEY_PREFIX and the number in ASCII.
KEY_STRIDE = 7919
KEY_PREFIX = "k"
# The produce-path warm-up's messages (`benchmarks.harness.steady`) carry this tag, which no run id
# gives: the consumers, the final read and the checker take only messages tagged with their run.
WARMUP_TAG = b"kb-warm_"


def run_tag(run_id: str) -> bytes:
    """The tag of a run's messages: the first TAG_SIZE bytes of its id, padded with '_'."""
    return run_id.encode()[:TAG_SIZE].ljust(TAG_SIZE, b"_")


def key_of(producer: int, seq: int, keys: int) -> int:
    """The key number of message `seq` of `producer`; -1 for an unkeyed workload (keys 0)."""
    return (producer * KEY_STRIDE + seq) % keys if keys else -1


def key_bytes(key: int) -> bytes | None:
    """The key as sent: None for -1 (no key)."""
    return None if key < 0 else b"%s%d" % (KEY_PREFIX.encode(), key)


# Up to this many keys, a producer makes every key's bytes once (`bind_keys`); beyond, per message.
KEY_TABLE_MAX = 1 << 16


class ProducerKeys(NamedTuple):
    """The key rule bound to one producer, for its hot path: `number(seq)` is
    `key_of(producer, seq, keys)` and `encoded(seq)` is `key_bytes` of it."""

    number: Callable[[int], int]
    encoded: Callable[[int], bytes | None]


def bind_keys(producer: int, keys: int) -> ProducerKeys:
    """`key_of` and `key_bytes` of `producer`'s messages, with what does not depend on the
    sequence number worked out once (a message costs a modulo and, up to KEY_TABLE_MAX keys, a
    list lookup instead of two calls and a bytes format)."""
    if not keys:
        return ProducerKeys(lambda seq: -1, lambda seq: None)
    start = producer * KEY_STRIDE

    def number(seq: int) -> int:
        return (start + seq) % keys

    if keys > KEY_TABLE_MAX:
        return ProducerKeys(number, lambda seq: key_bytes(number(seq)))
    table = [key_bytes(key) for key in range(keys)]
    # `number` written out: this lambda runs once per message sent.
    return ProducerKeys(number, lambda seq: table[(start + seq) % keys])


def record_consumed(out: ledger.LedgerWriter, run_id: str, group: str, consumer: str, msg: Any) -> None:
    """One consumed message of the run (a librdkafka Message), decoded from its header, into the
    consume ledger as read by `consumer` of `group` now."""
    _, producer, seq, sent = HEADER.unpack_from(msg.value())
    out.append(run_id, group, consumer, producer, seq, msg.partition(), msg.offset(), sent, time.time_ns())


def java_settings() -> dict[str, str | int]:
    """The contract as the Java producer's settings file gives it (bench.message.*)."""
    return {"bench.message.header_format": HEADER_FORMAT, "bench.message.header_size": HEADER.size,
            "bench.message.key_stride": KEY_STRIDE, "bench.message.key_prefix": KEY_PREFIX}
