"""The message contract (benchmarks/record/message.py): one definition for every producer and reader."""

import re

import pytest

from benchmarks.core.paths import PROJECT_ROOT
from benchmarks.record import message

JAVA = PROJECT_ROOT / "benchmarks" / "java" / "LedgerProducer.java"


def test_a_header_packs_and_unpacks_the_run_tag_producer_sequence_and_send_time():
    tag = message.run_tag("20261128T133049-1c358e")
    value = message.HEADER.pack(tag, 3, 2**40, 1_795_872_649_840_343_256) + b"\0" * 72

    assert tag == b"20261128"
    assert message.HEADER.size == 28
    assert message.HEADER.unpack_from(value) == (tag, 3, 2**40, 1_795_872_649_840_343_256)


def test_a_short_run_id_is_padded_to_the_tag_size_and_no_run_gets_the_warm_up_tag():
    assert message.run_tag("r1") == b"r1______"
    assert len(message.WARMUP_TAG) == message.TAG_SIZE
    assert message.run_tag("20261128T133049-1c358e") != message.WARMUP_TAG


def test_each_producer_walks_every_key_from_its_own_starting_point():
    keys = 16
    first = [message.key_of(0, seq, keys) for seq in range(keys)]
    second = [message.key_of(1, seq, keys) for seq in range(keys)]

    assert sorted(first) == sorted(second) == list(range(keys))
    assert first[0] == 0 and second[0] == 7919 % keys
    assert message.key_bytes(message.key_of(2, 5, 100)) == b"k43"  # (2 * 7919 + 5) % 100
    assert message.key_of(2, 5, 0) == -1 and message.key_bytes(-1) is None


@pytest.mark.parametrize("keys", [0, 1, 100, message.KEY_TABLE_MAX, message.KEY_TABLE_MAX + 1])
def test_a_producers_bound_keys_are_the_rule_whether_tabled_or_not(keys):
    bound = message.bind_keys(3, keys)
    for seq in (0, 1, 99, 100, 12_345, 10**9 + 7):
        assert bound.number(seq) == message.key_of(3, seq, keys)
        assert bound.encoded(seq) == message.key_bytes(message.key_of(3, seq, keys))


def test_the_java_producer_writes_the_header_the_contract_defines():
    """The Java program checks the layout it is given against its own at start; its own must be this one."""
    source = JAVA.read_text()
    header_format = re.search(r'HEADER_FORMAT = "([^"]+)"', source)
    header_size = re.search(r"HEADER_SIZE = (\d+);", source)

    assert header_format and header_format.group(1) == message.HEADER_FORMAT
    assert header_size and int(header_size.group(1)) == message.HEADER.size
    assert "7919" not in source  # the key rule comes from the settings, not a copy
    assert "putInt(index).putLong(seq).putLong(sentNs)" in source  # the order HEADER_FORMAT gives
