"""ruff, mypy, yamllint, ansible-lint (production profile) and the import contracts pass on the whole repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("command", [
    [str(BIN / "ruff"), "check", "."],
    [str(BIN / "mypy")],
    [str(BIN / "yamllint"), "-s", "."],
    [str(BIN / "ansible-lint"), "--offline", "--nocolor", "-f", "pep8"],
    [str(BIN / "lint-imports"), "--no-cache"],
], ids=["ruff", "mypy", "yamllint", "ansible-lint", "import-linter"])
def test_linter_passes(command):
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
