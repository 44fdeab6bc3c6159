"""What the wheel holds: every subpackage of the harness, not its self-benchmarks."""

import tomllib

from benchmarks.core.paths import PROJECT_ROOT

# Run from the checkout only (`make perf*`): the harness measuring itself, no part of the product.
NOT_SHIPPED = {"benchmarks.perf"}


def test_the_wheel_lists_every_subpackage_but_the_self_benchmarks():
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(PROJECT_ROOT).parts)
             for init in (PROJECT_ROOT / "benchmarks").rglob("__init__.py") if "results" not in init.parts}

    assert listed == found - NOT_SHIPPED
