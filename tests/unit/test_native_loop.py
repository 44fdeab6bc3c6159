"""The perf benchmark's C reference loop: how it is built, and what it says when it cannot be."""

from __future__ import annotations

import subprocess

import pyarrow as pa
import pytest

from benchmarks.perf import native_loop
from benchmarks.perf.producer_throughput import delay_quantiles


def test_build_without_a_compiler_names_it(tmp_path):
    with pytest.raises(native_loop.NativeUnavailable, match="no C compiler: `no-such-cc` is not on PATH"):
        native_loop.build(cc="no-such-cc", build_dir=tmp_path)
    assert not any(tmp_path.iterdir())


def test_build_without_librdkafka_headers_says_how_to_get_them(tmp_path):
    # A compiler that fails as gcc does when the header is missing.
    cc = tmp_path / "fake-cc"
    cc.write_text("#!/bin/sh\necho 'sendloop.c:16:10: fatal error: librdkafka/rdkafka.h: No such file' >&2\nexit 1\n")
    cc.chmod(0o755)
    with pytest.raises(native_loop.NativeUnavailable, match="apt-get install librdkafka-dev"):
        native_loop.build(cc=str(cc), build_dir=tmp_path / "build")
    assert not list((tmp_path / "build").glob("sendloop-*"))


def test_delay_quantiles_interpolate_as_the_generator_does():
    got = delay_quantiles(pa.array([float(v) for v in range(1, 1001)]))
    assert got == pytest.approx({"send_delay_p50_ms": 500.5, "send_delay_p99_ms": 990.01, "send_delay_p999_ms": 999.001})


def test_a_failing_loop_process_stops_its_siblings(tmp_path, monkeypatch):
    """One process of the loop fails: the error names it, and no other is left running."""
    fake = tmp_path / "sendloop-fake"
    # The first process (its delays file ends in -0.bin) fails at once; the others would sleep.
    fake.write_text('#!/bin/sh\ncase "$9" in *-0.bin) echo "broken" >&2; exit 3;; esac\nexec sleep 60\n')
    fake.chmod(0o755)
    started = []
    real_popen = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(subprocess, "Popen", popen)
    with pytest.raises(RuntimeError, match="exited 3: broken"):
        native_loop.run(fake, "127.0.0.1:1", "t", {}, 3, 100.0, 0, 1.0, 0.0, 100, 0, tmp_path)
    assert len(started) == 3
    assert [proc.returncode for proc in started][0] == 3
    assert all(proc.poll() is not None for proc in started)  # killed and reaped, not left sleeping
