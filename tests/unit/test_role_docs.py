"""Every role variable is documented in its role's README, and defaults are role-prefixed."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.conftest import ROOT

ROLES = sorted(p.parents[1].name for p in (ROOT / "roles").glob("*/tasks/main.yml"))


def role_variables(role: str, kind: str) -> list[str]:
    path = ROOT / "roles" / role / kind / "main.yml"
    return list((yaml.safe_load(path.read_text()) or {}).keys()) if path.exists() else []


@pytest.mark.parametrize("role", ROLES)
def test_every_variable_is_in_the_role_readme(role):
    readme = (ROOT / "roles" / role / "README.md").read_text()
    documented = set(re.findall(r"`([a-z][a-z0-9_]*)`", readme))
    missing = [v for kind in ("defaults", "vars") for v in role_variables(role, kind) if v not in documented]
    assert not missing, f"roles/{role}/README.md does not document {missing}"


@pytest.mark.parametrize("role", ROLES)
def test_variables_carry_the_role_prefix(role):
    names = role_variables(role, "defaults") + role_variables(role, "vars")
    assert names, f"roles/{role} defines no variables"
    assert [n for n in names if not n.startswith(role + "_")] == []


@pytest.mark.parametrize("role", ROLES)
def test_every_default_has_a_comment(role):
    lines = (ROOT / "roles" / role / "defaults" / "main.yml").read_text().splitlines()
    uncommented, commented = [], False
    for line in lines:
        if line.startswith("#"):
            commented = True
        elif not line.strip():
            commented = False
        elif re.match(r"^[a-z_0-9]+:", line) and not commented:
            uncommented.append(line.split(":")[0])
    assert uncommented == [], f"roles/{role}/defaults/main.yml: no comment above {uncommented}"
