"""Results in the documentation, from committed result files, never typed by hand.

`capture` copies a suite's summary (`summary.csv`, `suite.json`, as `kafka-bench run` wrote
them) into `docs/results/NAME/` with `source.json`: the command, the machine, the kafka-bench
commit, the date. A page shows them in a block

    <!-- results: NAME -->
    ...
    <!-- end results -->

whose body `make docs` writes again from those files (`refresh`); a test fails when a page's
block differs from what they give (`stale`).

    python -m benchmarks.docs.docs_results capture benchmarks/results/<time>-seeds seeds-zookeeper "make bench" [COMMIT]
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


def _machine() -> dict[str, Any]:
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        kib = int(next(line for line in meminfo if line.startswith("MemTotal:")).split()[1])
    return {"cores": os.cpu_count(), "memory_gib": round(kib / 2**20), "kernel": platform.release()}


def capture(suite_dir: Path, name: str, command: str, commit: str | None = None) -> Path:
    """Copy a suite's summary into docs/results/NAME with where it came from: `commit` the
    kafka-bench commit it ran on (default: the checkout's HEAD, for a suite captured as it ends)."""
    out = RESULTS / name
    out.mkdir(parents=True, exist_ok=True)
    for file in COPIED:
        shutil.copyfile(suite_dir / file, out / file)
    head = subprocess.run(["git", "rev-parse", "--short", commit or "HEAD"], cwd=suite_dir, capture_output=True,
                          text=True)
    stamp = suite_dir.name.split("-", 1)[0]  # <YYYYmmddTHHMMSS>-<suite>: when the suite began
    source = {"command": command, "began": f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]}",
              "commit": head.stdout.strip() or None, "machine": _machine()}
    (out / "source.json").write_text(json.dumps(source, indent=2) + "\n")
    return out


def _seconds(value: str) -> str:
    return "–" if value in ("", None) else f"{float(value):.1f} s"


def _count(value: str) -> str:
    return "–" if value in ("", None) else f"{int(value):,}"


def render(name: str, directory: Path = RESULTS) -> str:
    """The block's body: where the figures come from, then one row per run."""
    source = json.loads((directory / name / "source.json").read_text())
    with open(directory / name / "summary.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    planned = [run["scenario"] for run in json.loads((directory / name / "suite.json").read_text())["runs"]]
    rows.sort(key=lambda r: (planned.index(r["scenario"]) if r["scenario"] in planned else len(planned), r["trial"]))
    machine = source["machine"]
    versions = sorted({f"Kafka {r['kafka_version']} ({r['metadata_mode']})" for r in rows})
    lines = [f"Measured by `{source['command']}` on {source['began']} UTC, {', '.join(versions)}, on a machine with "
             f"{machine['cores']} cores and {machine['memory_gib']} GiB (Linux {machine['kernel']}), kafka-bench "
             f"{source['commit'] or 'uncommitted'}; from `docs/results/{name}/summary.csv`"
             + (", every run valid." if all(r["valid"] == "True" for r in rows) else ", SOME RUNS INVALID."), "",
             "| run | faults | acked / sent | lost | worst partition without acks | new leader after | verdict |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        lost = "not checked" if r["checked"] != "True" else _count(str(int(r["lost"] or 0) + int(r["unseen"] or 0)))
        lines.append(f"| `{r['scenario']}` | {r['fault']} | {_count(r['acked'])} / {_count(r['sent'])} | {lost} | "
                     f"{_seconds(r['unavailable_in_fault_s'])} | {_seconds(r['new_leader_s'])} | "
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
    if argv[:1] == ["capture"]:
        if len(argv) not in (4, 5):
            print("usage: python -m benchmarks.docs.docs_results capture SUITE_DIR NAME COMMAND [COMMIT]", file=sys.stderr)
            return 2
        print(f"wrote {capture(Path(argv[1]), argv[2], argv[3], argv[4] if len(argv) == 5 else None)}")
        return 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        if BLOCK.search(text) and (new := refresh(text)) != text:
            page.write_text(new, encoding="utf-8")
            print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
