"""The C reference loop (`native/sendloop.c`): built on first use with the C compiler against
the librdkafka that confluent-kafka ships (the generator's own), run as producer processes on
the same schedule as the generator's. It answers: at this rate, on this machine, what send
delay does a sending loop with no Python and no ledger get?"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

from benchmarks.core import paths

SOURCE = Path(__file__).parent / "native" / "sendloop.c"
BUILD_DIR = paths.PROJECT_ROOT / ".state" / "perf"
HEADERS_HINT = "librdkafka's C headers (Debian: apt-get install librdkafka-dev; `make perf` installs them)"


class NativeUnavailable(RuntimeError):
    """The reference loop cannot be built here; the message says what is missing."""


def _librdkafka() -> list[str]:
    """Linker arguments for the librdkafka confluent-kafka loads: its bundled copy if it has
    one (wheels do), else the system's."""
    import confluent_kafka

    bundled = sorted(Path(confluent_kafka.__file__).parent.parent.glob("confluent_kafka.libs/librdkafka*.so*"))
    if bundled:
        return [str(bundled[0]), f"-Wl,-rpath,{bundled[0].parent}"]
    return ["-lrdkafka"]


def build(cc: str = "cc", build_dir: Path = BUILD_DIR) -> Path:
    """The compiled loop, built once per source and library (cached in `build_dir`)."""
    compiler = shutil.which(cc)
    if compiler is None:
        raise NativeUnavailable(f"no C compiler: `{cc}` is not on PATH")
    link = _librdkafka()
    digest = hashlib.sha256(SOURCE.read_bytes() + "\0".join(link).encode()).hexdigest()[:16]
    binary = build_dir / f"sendloop-{digest}"
    if binary.exists():
        return binary
    build_dir.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_suffix(".tmp")
    result = subprocess.run([compiler, "-O2", "-Wall", "-o", str(tmp), str(SOURCE), *link],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        if "rdkafka.h" in result.stderr:
            raise NativeUnavailable(f"{SOURCE.name} needs {HEADERS_HINT}")
        raise NativeUnavailable(f"building {SOURCE} failed:\n{result.stderr[-2000:]}")
    tmp.replace(binary)
    return binary


@dataclasses.dataclass(frozen=True)
class NativeResult:
    sent: int
    acked: int
    failed: int
    elapsed_s: float    # from start_ns until every process is done (flush included), as the generator's
    delays_ms: np.ndarray  # send delays of the measured (post-warm-up) messages; empty unthrottled


def run(binary: Path, bootstrap: str, topic: str, props: dict[str, str], producers: int, rate: float | None,
        start_ns: int, seconds: float, warmup_s: float, size: int, keys: int, workdir: Path) -> NativeResult:
    """`producers` loop processes sharing `rate` (None: unthrottled) from `start_ns` for
    `seconds` (warm-up included); waits for them and gathers what they report."""
    procs = []
    for index in range(producers):
        delays = workdir / f"native-{index}.bin"
        args = [str(binary), bootstrap, topic, repr(rate / producers) if rate else "0", repr(seconds), str(start_ns),
                str(int(warmup_s * 1e9)), str(size), str(keys), str(delays), *[f"{k}={v}" for k, v in props.items()]]
        procs.append((subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), delays))
    reports, arrays = [], []
    try:
        for proc, delays in procs:
            out, err = proc.communicate(timeout=seconds + 120)
            if proc.returncode != 0:
                raise RuntimeError(f"{binary.name} exited {proc.returncode}: {err.strip()[-2000:]}")
            reports.append(json.loads(out.strip().splitlines()[-1]))
            arrays.append(np.fromfile(delays, dtype=np.int64))
    finally:  # one failed or timed out: none of the others is left running
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return NativeResult(sent=sum(r["sent"] for r in reports), acked=sum(r["acked"] for r in reports),
                        failed=sum(r["failed"] for r in reports), elapsed_s=(time.time_ns() - start_ns) / 1e9,
                        delays_ms=np.concatenate(arrays) / 1e6)
