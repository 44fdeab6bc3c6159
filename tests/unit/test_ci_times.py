"""Where the tests' time goes, from the JUnit XML pytest writes (benchmarks/perf/ci_times.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.perf import ci_times


def _junit(root: Path) -> Path:
    """A JUnit XML file written by pytest itself, of a tree laid out as tests/<tier>/<module>."""
    (root / "tests" / "unit").mkdir(parents=True)
    (root / "tests" / "integration").mkdir()
    (root / "tests" / "unit" / "test_fast.py").write_text(
        "import pytest\n\ndef test_quick():\n    pass\n\n@pytest.mark.skip\ndef test_left():\n    pass\n")
    (root / "tests" / "integration" / "test_slow.py").write_text(
        "import time\n\nclass TestCluster:\n    def test_waits(self):\n        time.sleep(0.3)\n\n"
        "def test_breaks():\n    assert False\n")
    out = root / "times.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir",
                    str(root), f"--junitxml={out}", "tests"], cwd=root, capture_output=True, check=False)
    return out


def test_each_case_is_named_by_its_module_under_tests_and_summed_by_tier(tmp_path):
    cases = ci_times.read(_junit(tmp_path))
    by_name = {c.name: c for c in cases}
    assert set(by_name) == {"test_quick", "test_left", "test_waits", "test_breaks"}
    assert by_name["test_waits"].module == "integration/test_slow.py" and by_name["test_waits"].tier == "integration"
    assert by_name["test_quick"].module == "unit/test_fast.py"
    assert [by_name[n].outcome for n in ("test_quick", "test_left", "test_breaks")] == ["passed", "skipped", "failed"]
    assert by_name["test_waits"].seconds >= 0.3
    text = ci_times.report(cases, top=1)
    assert "4 tests" in text and "1 failed, 2 passed, 1 skipped" in text
    tiers = text.split("by tier:\n")[1].split("\n\n")[0].splitlines()
    assert tiers[0].endswith("tests/integration") and tiers[1].endswith("tests/unit"), "slowest tier first"
    assert text.rstrip().endswith("tests/integration/test_slow.py::test_waits"), "the slowest test"
