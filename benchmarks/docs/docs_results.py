"""Results in the documentation, from committed result files, never typed by hand.

`capture` copies a suite's summary (`summary.csv`, `suite.json`, as `kafka-bench run` wrote
them) into `docs/results/NAME/` with `source.json`: the command, the machine, the kafka-bench
commit, the date. A page shows them in a block

    <!-- results: NAME -->
    ...
    <!-- end results -->

whose body `make docs` writes again from those files (`refresh`); a test fails when a page's
block differs from what they give (`stale`). `capture-perf` does the same for the JSON `make perf`
writes (the load generator against Kafka's producer-perf-test and the C reference loop). A suite
whose report has a security-cost table (`security-cost.csv`: each client profile against
plaintext) is shown as that table.

    python -m benchmarks.docs.docs_results capture benchmarks/results/<time>-seeds seeds-zookeeper "make bench" [COMMIT]
    python -m benchmarks.docs.docs_results capture-perf benchmarks/results/perf-producer-<time>.json perf-zookeeper "make perf"
    python -m benchmarks.docs.docs_results          # refresh every block
"""

from __future__ import annotations

import csv
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.core import paths

RESULTS = paths.PROJECT_ROOT / "docs" / "results"
PAGES = (paths.PROJECT_ROOT / "README.md", *sorted((paths.PROJECT_ROOT / "docs").glob("*.md")))
BLOCK = re.compile(r"(<!-- results: (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- end results -->)", re.S)
COPIED = ("summary.csv", "suite.json")
SECURITY = "security-cost.csv"  # copied too where the report wrote it
PERF = "perf-producer.json"


def _machine() -> dict[str, Any]:
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        kib = int(next(line for line in meminfo if line.startswith("MemTotal:")).split()[1])
    return {"cores": os.cpu_count(), "memory_gib": round(kib / 2**20), "kernel": platform.release()}


def _source(out: Path, stamp: str, command: str, commit: str | None, checkout: Path) -> None:
    """source.json: the command, when it began (`stamp`, <YYYYmmddTHHMMSS>), the commit (default:
    HEAD of the checkout the result was written in), the machine."""
    head = subprocess.run(["git", "rev-parse", "--short", commit or "HEAD"], cwd=checkout, capture_output=True, text=True)
    source = {"command": command, "began": f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]}",
              "commit": head.stdout.strip() or None, "machine": _machine()}
    (out / "source.json").write_text(json.dumps(source, indent=2) + "\n")


def capture(suite_dir: Path, name: str, command: str, commit: str | None = None) -> Path:
    """Copy a suite's summary into docs/results/NAME with where it came from: `commit` the
    kafka-bench commit it ran on (default: the checkout's HEAD, for a suite captured as it ends)."""
    out = RESULTS / name
    out.mkdir(parents=True, exist_ok=True)
    for file in COPIED:
        shutil.copyfile(suite_dir / file, out / file)
    if (suite_dir / SECURITY).exists():
        shutil.copyfile(suite_dir / SECURITY, out / SECURITY)
    _source(out, suite_dir.name.split("-", 1)[0], command, commit, suite_dir)  # <YYYYmmddTHHMMSS>-<suite>
    return out


def capture_perf(result: Path, name: str, command: str, commit: str | None = None) -> Path:
    """Copy what `make perf` wrote (benchmarks/results/perf-producer-<YYYYmmddTHHMMSS>.json) into
    docs/results/NAME, with where it came from."""
    out = RESULTS / name
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(result, out / PERF)
    _source(out, result.stem.rsplit("-", 1)[1], command, commit, result.parent)
    return out


def _decimal(value: str, places: int, unit: str = "") -> str:
    """A CSV figure with `places` decimals (and its unit), or a dash where the cell is empty."""
    return "–" if value in ("", None) else f"{float(value):.{places}f}{unit}"


def _count(value: str) -> str:
    return "–" if value in ("", None) else f"{int(value):,}"


def _measured_by(source: dict[str, Any], versions: list[str]) -> str:
    machine = source["machine"]
    return (f"Measured by `{source['command']}` on {source['began']} UTC, {', '.join(versions)}, on a machine with "
            f"{machine['cores']} cores and {machine['memory_gib']} GiB (Linux {machine['kernel']}), kafka-bench "
            f"{source['commit'] or 'uncommitted'}")


def render_perf(name: str, directory: Path = RESULTS) -> str:
    """The block's body for a `make perf` result: the generator against producer-perf-test, the
    ledger's cost, the schedule's accuracy and CPU per message, the C reference loop beside them."""
    source = json.loads((directory / name / "source.json").read_text())
    result = json.loads((directory / name / PERF).read_text())
    m, ratio, cluster, settings = result["medians"], result["ratios"], result["cluster"], result["settings"]
    lines = [_measured_by(source, [f"Kafka {cluster['kafka_version']} ({cluster['metadata_mode']}, "
                                   f"{cluster['brokers']} brokers on the same cores)"])
             + f"; {settings['size']} B messages, acks={settings['acks']}, linger.ms {settings['linger.ms']}, "
             f"{settings['producers']} producer processes, medians of {settings['repeat']} rounds (a ratio: the "
             f"median of the rounds' own ratios); from `docs/results/{name}/{PERF}`.", "",
             "| measured | figure | target |", "| --- | --- | --- |",
             f"| generator (ledger on) / producer-perf-test | {ratio['generator_over_perf_test']:.2f} "
             f"({m['ledger_on_per_s']:,.0f} and {m['perf_test_per_s']:,.0f} msg/s) | ≥ 1.0 |",
             f"| ledger on / ledger off | {ratio['ledger_on_over_off']:.2f} | ≥ 0.9 |",
             f"| achieved / target rate at half the maximum | {m['half_rate_achieved_over_target']:.4f} | ≥ 0.99 |",
             f"| send delay p99 at half the maximum (¼, ⅛) | {m['half_rate_send_delay_p99_ms']:.1f} ms "
             f"({m['rate_1_4_send_delay_p99_ms']:.1f} ms, {m['rate_1_8_send_delay_p99_ms']:.1f} ms) | ≤ 1 ms |",
             f"| CPU per message at half the maximum (¼, ⅛) | {m['half_rate_cpu_us_per_msg']:.1f} µs "
             f"({m['rate_1_4_cpu_us_per_msg']:.1f} µs, {m['rate_1_8_cpu_us_per_msg']:.1f} µs) | — |"]
    if "native_max_per_s" in m:
        lines += [f"| C loop at the generator's half rate: send delay p99; CPU per message | "
                  f"{m['native_same_rate_send_delay_p99_ms']:.1f} ms; {m['native_same_rate_cpu_us_per_msg']:.1f} µs | — |",
                  f"| C loop: maximum rate; send delay p99 at half of it | {m['native_max_per_s']:,.0f} msg/s; "
                  f"{m['native_half_own_send_delay_p99_ms']:.1f} ms | — |"]
    rounds = result["raw"]["rounds"]
    if len(rounds) > 1:  # the rounds behind the medians: their spread is the noise
        def each(ratio_name: str) -> str:
            return ", ".join(f"{r[ratio_name]:.2f} ({r['order']})" for r in rounds)
        lines += ["", "Round by round (the unthrottled measurements forward: perf-test, ledger on, ledger off; or "
                  f"reversed): generator / producer-perf-test {each('generator_over_perf_test')}; ledger on / off "
                  f"{each('ledger_on_over_off')}."]
    return "\n".join(lines) + "\n"


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _lost(run: dict[str, str]) -> int:
    """Acknowledged writes the checker found lost or never saw again, in one summary row."""
    return int(run["lost"] or 0) + int(run["unseen"] or 0)


def render_security(name: str, directory: Path = RESULTS) -> str:
    """The block's body for a suite with a security-cost table: per scenario, each client profile's
    acked/s, p50 / p99 and broker CPU per 1,000 messages, each beside its ratio to plaintext's
    (the report's definition: medians of the profile's valid runs), and whether its runs were steady."""
    source = json.loads((directory / name / "source.json").read_text())
    runs = _csv(directory / name / "summary.csv")
    versions = sorted({f"Kafka {r['kafka_version']} ({r['metadata_mode']})" for r in runs})
    lines = [_measured_by(source, versions) + f"; from `docs/results/{name}/{SECURITY}`, "
             f"{len(runs)} runs, {sum(_lost(r) for r in runs):,} acknowledged writes lost.", "",
             "| scenario | profile | acked msg/s | vs plaintext | p50 / p99 ms | p99 vs plaintext "
             "| broker CPU ms per 1,000 msgs | vs plaintext |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in _csv(directory / name / SECURITY):
        unsteady = [r for r in runs if r["scenario"] == row["scenario"] and r["steady"] == "False"]
        share = "" if row["runs"] == "1" else f" in {len(unsteady)} of {row['runs']}"
        note = f" (not steady{share})" if unsteady else ""
        lines.append(f"| `{row['sweep_of']}` | {row['security']} | {float(row['throughput_msgs_s']):,.0f} | "
                     f"{_decimal(row['throughput_ratio'], 2)} | {float(row['latency_p50_ms']):,.0f} / "
                     f"{float(row['latency_p99_ms']):,.0f}{note} | {_decimal(row['p99_ratio'], 2)} | "
                     f"{_decimal(row['broker_cpu_ms_per_1k'], 1)} | {_decimal(row['cpu_ratio'], 2)} |")
    return "\n".join(lines) + "\n"


def render(name: str, directory: Path = RESULTS) -> str:
    """The block's body: where the figures come from, then one row per run (or, for a `make perf`
    result, `render_perf`; for a suite with a security-cost table, `render_security`)."""
    if (directory / name / PERF).exists():
        return render_perf(name, directory)
    if (directory / name / SECURITY).exists():
        return render_security(name, directory)
    source = json.loads((directory / name / "source.json").read_text())
    rows = _csv(directory / name / "summary.csv")
    planned = [run["scenario"] for run in json.loads((directory / name / "suite.json").read_text())["runs"]]
    rows.sort(key=lambda r: (planned.index(r["scenario"]) if r["scenario"] in planned else len(planned), r["trial"]))
    versions = sorted({f"Kafka {r['kafka_version']} ({r['metadata_mode']})" for r in rows})
    lines = [_measured_by(source, versions) + f"; from `docs/results/{name}/summary.csv`"
             + (", every run valid." if all(r["valid"] == "True" for r in rows) else ", SOME RUNS INVALID."), "",
             "| run | faults | acked / sent | lost | worst partition without acks | new leader after | verdict |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        lost = "not checked" if r["checked"] != "True" else f"{_lost(r):,}"
        lines.append(f"| `{r['scenario']}` | {r['fault']} | {_count(r['acked'])} / {_count(r['sent'])} | {lost} | "
                     f"{_decimal(r['unavailable_in_fault_s'], 1, ' s')} | {_decimal(r['new_leader_s'], 1, ' s')} | "
                     f"{r['verdict'].replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def refresh(text: str, directory: Path = RESULTS) -> str:
    """`text` with every results block's body written again from its files."""
    return BLOCK.sub(lambda m: m.group(1) + render(m.group("name"), directory) + m.group(4), text)


def stale(pages: tuple[Path, ...] = PAGES, directory: Path = RESULTS) -> list[str]:
    """The pages whose results blocks differ from what their files give."""
    return [str(p.relative_to(paths.PROJECT_ROOT)) for p in pages
            if BLOCK.search(text := p.read_text(encoding="utf-8")) and refresh(text, directory) != text]


def main(argv: list[str]) -> int:
    if argv[:1] in (["capture"], ["capture-perf"]):
        what = "SUITE_DIR" if argv[0] == "capture" else "PERF_JSON"
        if len(argv) not in (4, 5):
            print(f"usage: python -m benchmarks.docs.docs_results {argv[0]} {what} NAME COMMAND [COMMIT]", file=sys.stderr)
            return 2
        keep = capture if argv[0] == "capture" else capture_perf
        print(f"wrote {keep(Path(argv[1]), argv[2], argv[3], argv[4] if len(argv) == 5 else None)}")
        return 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        if BLOCK.search(text) and (new := refresh(text)) != text:
            page.write_text(new, encoding="utf-8")
            print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
