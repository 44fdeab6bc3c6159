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


def misplaced_comments(role: str, text: str) -> list[str]:
    """Variables of a defaults file whose comment is not about them: each variable needs the
    comment block above it (the one right above its group of variables) to name it by a word
    of its name ("# Installation root; each release has its home in ..." for `kafka_home`).
    A comment that slid under the wrong variable, or a variable added under another's comment,
    fails; so does a variable with no comment at all."""
    block: list[str] = []
    after_variable = False
    wrong = []
    for line in text.splitlines():
        if line.startswith("#"):
            if after_variable:  # a comment after variables starts the next group's block
                block = []
            after_variable = False
            block.append(line.lower())
        elif not line.strip():
            block, after_variable = [], False
        elif match := re.match(r"^([a-z_0-9]+):", line):
            after_variable = True
            name = match.group(1)
            words = [w for w in name.removeprefix(role + "_").split("_") if len(w) > 1]
            if not any(w in " ".join(block) for w in words):
                wrong.append(name)
    return wrong


@pytest.mark.parametrize("role", ROLES)
def test_the_comment_above_every_default_is_about_it(role):
    text = (ROOT / "roles" / role / "defaults" / "main.yml").read_text()
    assert misplaced_comments(role, text) == [], f"roles/{role}/defaults/main.yml: no comment about these right above them"


def test_a_comment_under_the_wrong_variable_is_found():
    assert misplaced_comments("kafka", "# Installation root.\nkafka_install_root: /opt\n") == []
    assert misplaced_comments("kafka", "# Installation root.\nkafka_install_root: /opt\nkafka_port: 9092\n") == \
        ["kafka_port"]
    assert misplaced_comments("kafka", "# The port.\n# Installation root.\nkafka_port: 9092\n\nkafka_home: /x\n") == \
        ["kafka_home"]
    assert misplaced_comments("kafka", "# Port.\nkafka_port: 9092\n# Wait.\nkafka_wait: true\nkafka_stop_timeout: 9\n") \
        == ["kafka_stop_timeout"]


TYPES = {bool: "bool", int: "int", float: "float", list: "list", dict: "dict"}


@pytest.mark.parametrize("role", ROLES)
def test_argument_specs_declare_every_default_with_its_type_and_description(role):
    """meta/argument_specs.yml (Ansible checks types and choices when the role starts) agrees
    with defaults/main.yml: the same options in the same order, each described, each typed as
    its default is (a templated default is raw: its type is known only once templated)."""
    defaults = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    options = specs["main"]["options"]
    assert list(options) == list(defaults), f"roles/{role}: argument_specs and defaults list different options"
    for name, value in defaults.items():
        spec = options[name]
        assert spec.get("description"), f"roles/{role}: {name} has no description"
        templated = isinstance(value, str) and ("{{" in value or "{%" in value)
        assert spec["type"] == ("raw" if templated else TYPES.get(type(value), "str")), name
        if "choices" in spec:
            assert value in spec["choices"], f"roles/{role}: the default of {name} is not one of its choices"
    for entry, spec in specs.items():
        assert spec["options"] == options, f"roles/{role}: entry point {entry} checks other options than main"
