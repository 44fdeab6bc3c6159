"""Checksum parsing and verified downloads of the collection's module_utils."""

from __future__ import annotations

import hashlib
import os
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.kafka_bench.cluster.plugins.module_utils import download

DATA = b"kafka-bench" * 1000
SHA512 = hashlib.sha512(DATA).hexdigest()


def test_parse_checksum_accepts_algo_and_hex():
    assert download.parse_checksum(f"SHA512: {SHA512.upper()}") == ("sha512", SHA512)


@pytest.mark.parametrize("spec, error", [
    ("nocolon", "must look like"),
    ("md5:" + "0" * 32, "not one of"),
    ("sha256:abc", "not a sha256 hex digest"),
])
def test_parse_checksum_rejects_bad_specs(spec, error):
    with pytest.raises(ValueError, match=error):
        download.parse_checksum(spec)


def test_checksum_file_in_coreutils_format():
    text = f"{SHA512}  other.tgz\n{SHA512}  kafka_2.13-3.9.2.tgz\n"
    assert download.parse_checksum_file(text, "kafka_2.13-3.9.2.tgz", "sha512") == SHA512


def test_checksum_file_in_apache_gpg_format():
    groups = [SHA512[i:i + 8].upper() for i in range(0, 128, 8)]
    text = "kafka_2.13-3.9.2.tgz: " + " ".join(groups[:8]) + "\n                      " + " ".join(groups[8:]) + "\n"
    assert download.parse_checksum_file(text, "kafka_2.13-3.9.2.tgz", "sha512") == SHA512


def test_checksum_file_for_another_file_is_refused():
    with pytest.raises(ValueError, match="no sha512 digest"):
        download.parse_checksum_file(f"{SHA512}  other.tgz\n", "kafka.tgz", "sha512")


def test_fetch_verified_writes_only_matching_content(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(DATA)
    dest = tmp_path / "out" / "dest.bin"
    dest.parent.mkdir()
    download.fetch_verified(f"file://{src}", str(dest), "sha512", SHA512, 5)
    assert dest.read_bytes() == DATA

    bad = tmp_path / "out" / "bad.bin"
    with pytest.raises(download.ChecksumError):
        download.fetch_verified(f"file://{src}", str(bad), "sha512", "0" * 128, 5)
    assert not bad.exists()
    assert sorted(p.name for p in dest.parent.iterdir()) == ["dest.bin"], "a partial file was left behind"


def test_copy_verified_refuses_a_corrupt_cache_entry(tmp_path):
    cached = tmp_path / "cached.jar"
    cached.write_bytes(b"corrupt")
    assert not download.copy_verified(str(cached), str(tmp_path / "x.jar"), "sha512", SHA512)
    assert not (tmp_path / "x.jar").exists()


def test_copy_verified_keeps_the_sources_time(tmp_path):
    """A jar installed again from the cache keeps the cached file's time: the class-data sharing
    archive of a service that loaded it (which checks size and time) stays valid."""
    cached = tmp_path / "cached.jar"
    cached.write_bytes(b"jar")
    os.utime(cached, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    target = tmp_path / "installed.jar"
    assert download.copy_verified(str(cached), str(target), "sha256", hashlib.sha256(b"jar").hexdigest())
    assert target.stat().st_mtime_ns == 1_600_000_000_000_000_000
