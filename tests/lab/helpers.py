"""What the lab tests share: a lab built for a module and torn down after it, the cluster
site.yml deploys on it, and a command run on a lab host over SSH as Ansible reaches it."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.hosts import inventory as inventory_lib
from benchmarks.hosts import lab as lab_lib
from benchmarks.hosts import lab_spec
from benchmarks.hosts.ansible import AnsibleRunner
from tests.conftest import assert_ok


@contextlib.contextmanager
def built_lab(inventory: Path) -> Iterator[lab_lib.Lab]:
    """The lab of `inventory`, up (an earlier one torn down first), torn down on the way out."""
    the_lab = lab_lib.Lab(lab_spec.load_spec(inventory))
    assert the_lab.down() == [], "an earlier lab could not be torn down"
    try:
        started = time.monotonic()
        the_lab.up()
        print(f"\nlab up: {len(the_lab.spec.hosts)} hosts in {time.monotonic() - started:.1f} s")
        yield the_lab
    finally:
        left = the_lab.down()
    assert left == [], f"lab teardown left {left}"


def ssh_run(lab: lab_lib.Lab, host: str, command: str) -> subprocess.CompletedProcess[str]:
    """`command` on a lab host over SSH, as Ansible reaches it; its exit status is the caller's to judge."""
    return subprocess.run(["ssh", "-F", str(lab.spec.state_dir / "ssh_config"), host, command],
                          capture_output=True, text=True, timeout=60)


def ssh(lab: lab_lib.Lab, host: str, command: str) -> str:
    done = ssh_run(lab, host, command)
    assert done.returncode == 0, f"{host}: {command}: {done.stderr}"
    return done.stdout


def deployed(runner: AnsibleRunner, inventory: Path, what: str) -> inventory_lib.ClusterInventory:
    """The cluster of `inventory` deployed by site.yml over SSH, with the time it took."""
    started = time.monotonic()
    result = assert_ok(runner.run("site.yml", inventory))
    print(f"\nsite.yml deployed {what} on 3 lab hosts over SSH in {time.monotonic() - started:.0f} s "
          f"(changed={result.count('changed')})")
    return inventory_lib.load(inventory)
