"""The scenario and fault-kind references (docs/reference/), generated from the pydantic models
that validate a scenario: every field with its type, default and allowed values, described by
the comment the model gives it; the catalogue of the built-in suites, generated from their
scenario files and the Makefile targets that run them; and the package's layers (`layers`). A
test fails when a committed page differs from what this module generates; `make docs`
(python -m benchmarks.docs.reference) writes them again."""

from __future__ import annotations

import inspect
import re
import sys
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from benchmarks.core import paths
from benchmarks.docs import layers
from benchmarks.spec import client_profile, fault_kinds, fault_spec, fault_targets, procedures, scenario, workload

DOCS = paths.PROJECT_ROOT / "docs" / "reference"
_FIELD = re.compile(r"^\s+(\w+)\s*:")
_SCALARS = {int: "integer", float: "number", str: "string", bool: "boolean"}
_BOUNDS = (("ge", "≥ {}"), ("gt", "> {}"), ("le", "≤ {}"), ("lt", "< {}"), ("min_length", "at least {} items"),
           ("max_length", "at most {} items"), ("pattern", "matches `{}`"))


def _comments(model: type[BaseModel]) -> dict[str, str]:
    """Each field's comment in the class that declares it: the comment lines just above the field
    and the one at the end of its line, joined."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        above: list[str] = []
        for line in inspect.getsource(cls).splitlines()[1:]:
            stripped = line.strip()
            if stripped.startswith("#"):
                above.append(stripped.lstrip("# "))
                continue
            match = _FIELD.match(line)
            if match and match.group(1) in cls.__annotations__:
                trailing = line.split("  # ", 1)[1].strip() if "  # " in line else ""
                found[match.group(1)] = " ".join([*above, trailing]).strip()
            above = []
    return found


def _bounds(meta: list[Any]) -> list[str]:
    out: list[str] = []
    for item in meta:
        if isinstance(item, FieldInfo):
            out += _bounds(item.metadata)
            continue
        out += [text.format(getattr(item, name)) for name, text in _BOUNDS if getattr(item, name, None) is not None]
    return out


def _tagged_union(annotation: Any) -> str | None:
    """A link to where the kinds of a union keyed on a tag are described (None: not one)."""
    members = set(get_args(annotation))
    if members and members <= set(fault_kinds.SPECS):
        return "[fault](faults.md)"
    if members and members <= set(procedures.SPECS):
        return "[procedure](#procedure)"
    return None


def _type(annotation: Any) -> tuple[str, list[str]]:
    """(the type in words, its allowed values or bounds)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated and _tagged_union(args[0]) is not None:
        return _tagged_union(args[0]) or "", []
    if origin is Annotated:
        name, allowed = _type(args[0])
        return name, allowed + _bounds(list(args[1:]))
    if origin in (Union, types.UnionType):
        parts = [_type(a) for a in args if a is not type(None)]
        name = " or ".join(p[0] for p in parts) + (" or null" if type(None) in args else "")
        return name, [bound for p in parts for bound in p[1]]
    if origin is Literal:
        return "string", [" · ".join(f"`{a}`" for a in args)]
    if origin is list:
        name, allowed = _type(args[0])
        return f"list of {name}", allowed
    if origin is dict:
        return f"map of {_type(args[0])[0]} to {_type(args[1])[0]}", []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})", []
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation))), []


def _value(value: Any) -> str:
    if isinstance(value, BaseModel):
        return _value(value.model_dump(exclude_defaults=True))
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    if value == "":
        return '""'
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def _default(field: FieldInfo) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
    return f"`{_value(value)}`"


def fields_table(model: type[BaseModel], skip: tuple[str, ...] = (), only_own_of: type[BaseModel] | None = None) -> str:
    """A markdown table of the model's fields (those `only_own_of` lacks, when given)."""
    comments = _comments(model)
    rows = ["| field | type | default | allowed | what |", "| --- | --- | --- | --- | --- |"]
    for name, field in model.model_fields.items():
        if name in skip or (only_own_of is not None and name in only_own_of.model_fields):
            continue
        kind, allowed = _type(field.annotation)
        allowed += _bounds(field.metadata)
        cell = "; ".join(allowed).replace("|", "\\|")
        rows.append(f"| `{name}` | {kind} | {_default(field)} | {cell} | {comments.get(name, '')} |")
    return "\n".join(rows) if len(rows) > 2 else "No fields of its own."


def _doc(obj: Any) -> str:
    return inspect.cleandoc(obj.__doc__ or "")


def _section(title: str, model: type[BaseModel], **table: Any) -> list[str]:
    doc = _doc(model)
    return [f"## {title}", "", *([doc, ""] if doc else []), fields_table(model, **table), ""]


def scenario_page() -> str:
    out = ["# Scenario reference", "",
           "Generated from the models of `benchmarks/spec/scenario.py`, `workload.py`, `client_profile.py` and `procedures.py`",
           "by `make docs`; a test fails when this page is stale. Unknown keys are errors naming their path.", "",
           "A scenario file holds `scenario` (below), optionally `sweep` and `kraft`:", "", _doc(scenario.ScenarioFile), ""]
    out += _section("Scenario", scenario.Scenario)
    out += _section("Workload", workload.Workload)
    out += _section("ConsumerGroup", workload.ConsumerGroup)
    out += _section("ClientProfile", client_profile.ClientProfile)
    out += _section("Transactions", client_profile.Transactions)
    out += ["## Fault", "", "One of the kinds of the [fault-kind reference](faults.md), by its `kind`.", ""]
    out += ["## Procedure", "", _doc(procedures.ProcedureSpec), "", fields_table(procedures.ProcedureSpec), ""]
    for name, spec in procedures.NAMES.items():
        out += [f"### `playbook: {name}`", "", _doc(spec), "",
                f"Runs `playbooks/{spec.playbook_file}` on {' or '.join(sorted(spec.modes))} clusters.", "",
                fields_table(spec, only_own_of=procedures.ProcedureSpec), ""]
    return "\n".join(out).rstrip() + "\n"


def _needs(spec: type[fault_spec.FaultSpec]) -> str:
    needs = [text for flag, text in (("needs_own_addresses", "brokers on hosts with addresses of their own"),
                                     ("needs_netem", "tc netem in the hosts' kernel"),
                                     ("needs_data_disk", "a filesystem of the brokers' data of its own"))
             if getattr(spec, flag)]
    return f" Needs {' and '.join(needs)}." if needs else ""


def faults_page() -> str:
    out = ["# Fault-kind reference", "",
           "Generated from the spec classes of `benchmarks/spec/fault_kinds.py` (what every kind has:",
           "`fault_spec.py`; the targets: `fault_targets.py`) by `make docs`; a test fails when this page is stale.",
           "", _doc(fault_kinds), "",
           "## Fields every kind has", "", _doc(fault_spec.FaultSpec), "",
           fields_table(fault_spec.FaultSpec, skip=("kind",)), ""]
    for kind, spec in fault_kinds.KINDS.items():
        out += [f"## `kind: {kind}`", "", _doc(spec), "",
                f"Injected and reverted by `playbooks/{spec.playbook}` on {' or '.join(sorted(spec.modes))} clusters."
                + _needs(spec), "", fields_table(spec, skip=("kind",), only_own_of=fault_spec.FaultSpec), ""]
    out += _section("FaultTarget", fault_targets.FaultTarget)
    out += _section("ControllerTarget", fault_targets.ControllerTarget)
    return "\n".join(out).rstrip() + "\n"


def _leading_comment(path: Path) -> str:
    """The comment block a scenario file opens with (after `---`), as one paragraph."""
    lines: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() == "---" and not lines:
            continue
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(lines)


def _make_targets(suite_name: str) -> list[str]:
    """The Makefile targets whose recipe runs `suite_name` or one of its files, with the inventories
    they run it on (variables expanded; `$(call run-on-lab,INVENTORY,WHAT)` read as a run)."""
    variables: dict[str, str] = {}
    found: dict[str, list[str]] = {}
    target = ""
    suite_dir = f"benchmarks/suites/{suite_name}"
    for line in (paths.PROJECT_ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if assigned := re.match(r"^(\w+)\s*[:?]?=\s*(\S+)", line):
            variables[assigned.group(1)] = assigned.group(2)
            continue
        if re.match(r"^[\w-]+:", line):
            target = line.split(":", 1)[0]
            continue
        line = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), line)
        ran = re.search(r"kafka-bench run (\S+).*--inventory (\S+)", line)
        called = re.search(r"\$\(call run-on-lab,([^,]+),([^)]+)\)", line)
        what, inventory = (ran.group(1), ran.group(2)) if ran else (called.group(2), called.group(1)) if called else ("", "")
        if what == suite_name or what.startswith(suite_dir + "/"):
            inventory += " --quick" if "--quick" in line else ""
            inventories = found.setdefault(target, [])
            inventories += [] if inventory in inventories else [inventory]
    return [f"`make {name}` (on {', '.join(f'`{i}`' for i in inventories)})" for name, inventories in found.items()]


def _file_entry(suite_dir: Path, path: Path) -> list[str]:
    runs = scenario.load(path, in_suite=True)
    ran = [r.scenario for r in runs if r.scenario is not None]
    first = ran[0] if ran else None
    title = f"### `{path.name}`" + (f": {first.name if len(ran) == 1 else runs[0].sweep_of}" if first else "")
    if path.is_symlink():
        return [title, "", f"The same file as `{path.resolve().relative_to(suite_dir.parent)}`.", ""]
    facts = [f"{len(ran)} run{'s' if len(ran) != 1 else ''}"
             + (f" (a sweep; {len(runs) - len(ran)} points skipped)" if len(runs) > len(ran) else "")]
    if first is not None:
        w = first.workload
        facts += [f"{first.trials} trial{'s' if first.trials != 1 else ''} each" if first.trials > 1 else "",
                  f"{w.warmup_s:g} + {w.duration_s:g} s of load", "negative control" if first.expect_loss else "",
                  "; ".join([f.label for f in first.faults] + [f"{p.playbook} at {p.at_s:g} s" for p in first.procedures])]
    lines = [title, "", *([f"*{first.description}*", ""] if first and first.description else [])]
    comment = _leading_comment(path)
    return [*lines, *([comment, ""] if comment else []), "; ".join(f for f in facts if f) + ".", ""]


def suites_page() -> str:
    out = ["# Built-in suites", "",
           "Generated from the scenario files of `benchmarks/suites/` and the Makefile by `make docs`; a test",
           "fails when this page is stale. A suite is a directory of scenario files run in file-name order",
           "(`kafka-bench run NAME`); each file's opening comment says what it asks. Run counts are before the",
           "inventory is known: a point a cluster cannot run (ELR on ZooKeeper, a fault its hosts cannot carry",
           "out) is skipped with its reason when the suite runs.", ""]
    for suite_dir in sorted(d for d in paths.SUITES.iterdir() if d.is_dir()):
        targets = _make_targets(suite_dir.name)
        out += [f"## `{suite_dir.name}`", "",
                f"Run by {', '.join(targets)}." if targets else f"Run by `kafka-bench run {suite_dir.name}`.", ""]
        for path in sorted(suite_dir.glob("*.yml")):
            out += _file_entry(suite_dir, path)
    return "\n".join(out).rstrip() + "\n"


PAGES = {"scenario.md": scenario_page, "faults.md": faults_page, "suites.md": suites_page,
         "layers.md": layers.layers_page}


def stale(directory: Path = DOCS) -> list[str]:
    """The pages of `directory` that differ from what is generated now."""
    return [name for name, page in PAGES.items()
            if not (directory / name).is_file() or (directory / name).read_text(encoding="utf-8") != page()]


def main() -> int:
    DOCS.mkdir(parents=True, exist_ok=True)
    for name, page in PAGES.items():
        (DOCS / name).write_text(page(), encoding="utf-8")
        print(f"wrote {DOCS / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
