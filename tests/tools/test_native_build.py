"""The perf benchmark's C reference loop compiles against librdkafka (the Debian package
librdkafka-dev, which `make test-deps` installs) and checks its arguments."""

from __future__ import annotations

import os
import subprocess

from benchmarks.perf import native_loop


def test_build_compiles_once_and_the_loop_checks_its_arguments(tmp_path):
    binary = native_loop.build(build_dir=tmp_path)
    assert os.access(binary, os.X_OK)
    assert native_loop.build(build_dir=tmp_path) == binary  # cached: same source, same library
    assert binary.stat().st_mtime_ns == native_loop.build(build_dir=tmp_path).stat().st_mtime_ns
    usage = subprocess.run([str(binary)], capture_output=True, text=True, check=False)
    assert usage.returncode == 2 and "usage" in usage.stderr
    bad = subprocess.run([str(binary), "127.0.0.1:1", "t", "10", "1", "0", "0", "100", "0", str(tmp_path / "d"),
                          "no.such.property=1"], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "no.such.property" in bad.stderr
