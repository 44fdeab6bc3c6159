"""The layers page (docs/reference/layers.md): the package's subpackages in the order of the
import contract that checks them (pyproject.toml), each with what its __init__ says it holds and
may import, and each module with the first paragraph of its docstring. Read from the source, never
imported: the analysis' modules load PySpark."""

from __future__ import annotations

import ast

import tomllib

from benchmarks.core import paths

PACKAGE = paths.PROJECT_ROOT / "benchmarks"


def layer_order() -> list[str]:
    """The subpackages of the layers contract, top to bottom (`benchmarks.__main__` left out)."""
    config = tomllib.loads((paths.PROJECT_ROOT / "pyproject.toml").read_text())
    [layers] = [c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith("The layers")]
    return [name.split(".", 1)[1] for name in layers if name != "benchmarks.__main__"]


def _summary(source: str) -> str:
    """The first paragraph of a module's docstring, on one line, as a table cell."""
    doc = ast.get_docstring(ast.parse(source)) or ""
    return " ".join(doc.split("\n\n", 1)[0].split()).replace("|", "\\|")


def layers_page() -> str:
    out = ["# The package's layers", "",
           "Generated from the source by `make docs`; a test fails when this page is stale. Each subpackage",
           "imports only those below it; `lint-imports` (part of `make lint`) checks the order, and that no",
           "module imports one that imports it back.", ""]
    for layer in layer_order():
        package = PACKAGE / layer
        doc = " ".join((ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or "").split())
        out += [f"## `benchmarks.{layer}`", "", doc, "", "| module | what it holds |", "| --- | --- |"]
        for module in sorted(package.rglob("*.py")):
            if module.name == "__init__.py" and module.parent == package:
                continue
            name = module.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
            out.append(f"| `{name}` | {_summary(module.read_text())} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
