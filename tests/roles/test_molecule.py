"""Each role's Molecule scenario (delegated, on this machine): converge, idempotence, verify, destroy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

MOLECULE = str(Path(sys.executable).parent / "molecule")
ROLES = sorted(p.parents[2].name for p in (ROOT / "roles").glob("*/molecule/default/molecule.yml"))

pytestmark = pytest.mark.slow


# Each role on its own, apart from the playbooks (its own ports and state directory, so it runs
# beside nothing else): `make test` and `make test-roles`.
@pytest.mark.parametrize("role", ROLES)
def test_molecule_scenario(role):
    # Molecule runs ansible-config and ansible-playbook from PATH: put this environment's first.
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
           "PY_COLORS": "0", "ANSIBLE_FORCE_COLOR": "0"}
    proc = subprocess.run([MOLECULE, "test"], cwd=ROOT / "roles" / role, capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]
    for step in ("converge", "idempotence", "verify"):
        assert f"{step}: Executed: Successful" in proc.stdout + proc.stderr, f"{step} did not run"
