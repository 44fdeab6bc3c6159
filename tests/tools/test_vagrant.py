"""The Vagrantfile parses (ruby) and validates (vagrant) in each of its layouts. Both tools are
Debian packages `make test-deps` installs: a missing one fails the test and names its package."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import ROOT


def required_tool(name: str, package: str) -> str:
    """The tool's path; a missing tool fails the test (`make test` installs it), never skips it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed (Debian package {package}); `make test-deps` installs it")
    return path


def test_the_vagrantfile_parses():
    ruby = subprocess.run([required_tool("ruby", "ruby"), "-c", str(ROOT / "Vagrantfile")], capture_output=True,
                          text=True)
    assert ruby.returncode == 0 and "Syntax OK" in ruby.stdout, ruby.stderr


def vagrant_validate(layout: str) -> subprocess.CompletedProcess:
    return subprocess.run([required_tool("vagrant", "vagrant"), "validate"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "KAFKA_BENCH_LAYOUT": layout})


@pytest.mark.parametrize("layout", ["colocated", "separate", "kraft"])
def test_vagrant_validates_the_vagrantfile(layout):
    done = vagrant_validate(layout)
    assert done.returncode == 0 and "validated successfully" in done.stdout, done.stdout + done.stderr


def test_vagrant_refuses_an_unknown_layout():
    done = vagrant_validate("bogus")
    assert done.returncode != 0 and "KAFKA_BENCH_LAYOUT=bogus: unknown layout; use one of colocated, separate" in \
        done.stdout + done.stderr


def test_a_missing_tool_fails_the_test_and_names_its_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.fail.Exception, match=r"ruby is not installed \(Debian package ruby\); "
                                                    r"`make test-deps` installs it"):
        required_tool("ruby", "ruby")
