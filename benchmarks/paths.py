"""Where the project's playbooks, inventories and run artifacts are."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(os.environ.get("KAFKA_BENCH_ROOT", Path(__file__).resolve().parent.parent))
PLAYBOOKS = PROJECT_ROOT / "playbooks"
INVENTORIES = PROJECT_ROOT / "inventories"
DEFAULT_INVENTORY = INVENTORIES / "local"
ANSIBLE_CFG = PROJECT_ROOT / "ansible.cfg"
RUNNER_DIR = PROJECT_ROOT / ".runner"


def playbook(name: str | Path) -> Path:
    """A playbook of playbooks/ by name, or any playbook by absolute path."""
    path = Path(name) if Path(name).is_absolute() else PLAYBOOKS / name
    if not path.is_file():
        raise FileNotFoundError(f"playbook {path} does not exist")
    return path
