"""Where the project's playbooks, inventories and run artifacts are."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(os.environ.get("KAFKA_BENCH_ROOT", Path(__file__).resolve().parents[2]))
PLAYBOOKS = PROJECT_ROOT / "playbooks"
INVENTORIES = PROJECT_ROOT / "inventories"
DEFAULT_INVENTORY = INVENTORIES / "local"
ANSIBLE_CFG = PROJECT_ROOT / "ansible.cfg"
RUNNER_DIR = PROJECT_ROOT / ".runner"
STATE_DIR = PROJECT_ROOT / ".state"
# Built-in suites: one directory of scenario files each, run in file-name order.
SUITES = PROJECT_ROOT / "benchmarks" / "suites"
# Client profiles scenarios share by name (`client: safe` is clients/safe.yml).
CLIENTS = PROJECT_ROOT / "benchmarks" / "clients"
# Written before every fault injection, so `kafka-bench heal` can revert faults of a runner
# that was itself killed.
FAULT_JOURNAL = STATE_DIR / "fault-journal.jsonl"


def playbook(name: str | Path) -> Path:
    """A playbook of playbooks/ by name, or any playbook by absolute path."""
    path = Path(name) if Path(name).is_absolute() else PLAYBOOKS / name
    if not path.is_file():
        raise FileNotFoundError(f"playbook {path} does not exist")
    return path
