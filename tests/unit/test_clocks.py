"""Clock offsets: the ssh command Ansible would use, the NTP-style estimate, a real exchange
with a process answering with its clock, and fault times converted both ways."""

from __future__ import annotations

import sys

import pytest

from benchmarks.harness import faults
from benchmarks.hosts import clocks, ssh
from benchmarks.hosts.ansible import PlaybookResult
from tests.conftest import ROOT

LAB = ROOT / "inventories" / "lab"
LOCAL = ROOT / "inventories" / "local"


def test_the_ssh_command_is_the_one_ansible_would_use():
    from benchmarks.hosts import inventory

    _, resolver = inventory.read(LAB)
    command = ssh.ssh_command("lab2", resolver("lab2"), clocks.ECHO_CLOCK)
    assert command is not None
    assert command[-2:] == ["root@10.213.0.12", clocks.ECHO_CLOCK]
    key = command[command.index("-i") + 1]
    assert key.endswith(".state/lab/id_ed25519") and "{{" not in key  # templated, like Ansible does
    assert "BindAddress=10.213.0.254" in command  # the lab's management address, from its common args


def test_hosts_ansible_runs_locally_read_the_runners_clock():
    offsets = clocks.measure(LOCAL, ["broker0", "broker1", "zk0", "broker0"],
                             measure_one=lambda host, command: pytest.fail("nothing to measure"))
    assert list(offsets) == ["broker0", "broker1", "zk0"]
    assert {(o.offset_ns, o.uncertainty_ns, o.how) for o in offsets.values()} == {(0, 0, "local")}


def test_the_sample_with_the_shortest_round_trip_counts():
    # (sent, host's reading, received): a host 5 s ahead; the second exchange was quickest.
    samples = [(1_000, 5_000_000_600, 1_400), (2_000, 5_000_002_050, 2_100), (3_000, 5_000_003_900, 3_800)]
    offset = clocks.offset_of("h", samples)
    assert (offset.offset_ns, offset.uncertainty_ns) == (5_000_000_000, 50)
    assert offset.to_runner(5_000_002_050) == 2_050 and offset.to_host(2_050) == 5_000_002_050


def test_a_process_answering_with_its_clock_is_measured():
    """The same exchange ssh carries, with a local shell on the far end: the same clock."""
    offset = clocks.measure_host("here", ["sh", "-c", clocks.ECHO_CLOCK])
    assert offset.how == "ssh" and 0 < offset.uncertainty_ns < 50e6
    assert abs(offset.offset_ns) <= offset.uncertainty_ns + 5e6


def test_a_host_that_does_not_answer_is_named():
    with pytest.raises(clocks.ClockError, match=r"cannot read the clock of lab9 .*no route"):
        clocks.measure_host("lab9", [sys.executable, "-c", "import sys; sys.exit('ssh: no route to host')"])


class Stamping:
    """A playbook runner whose control script acted at host clock `at_ns` on each host of the limit."""

    def __init__(self, at_ns: int) -> None:
        self.at_ns = at_ns
        self.extravars: dict = {}

    def run(self, playbook, inventory, extravars=None, limit=None, **_):
        self.extravars = dict(extravars or {})
        return PlaybookResult(playbook, 0, "successful", {}, [], 1.0,
                              outputs=[(h, f"killed at_ns={self.at_ns}") for h in (limit or "").split(",")])


def test_fault_times_are_converted_between_the_hosts_and_the_runners_clock(tmp_path):
    ahead = {"broker1": clocks.Offset("broker1", 2_000_000_000, 1_000_000, "ssh")}
    runner = Stamping(at_ns=12_000_000_000)
    injector = faults.AnsibleFaultInjector(runner, LOCAL, faults.Journal(tmp_path / "j.jsonl"), offsets=ahead)
    record = injector.new_record("broker-kill", ["broker1"], 1, "broker 1")
    acted = injector.inject(record, not_before_ns=10_000_000_000)
    assert runner.extravars["fault_not_before_ns"] == "12000000000"  # the host waits on its own clock
    assert acted == pytest.approx(10.0)  # and its "acted" is on ours


def test_a_playbook_on_hosts_of_several_clocks_waits_for_the_latest():
    offsets = {"a": clocks.Offset("a", -300, 1, "ssh"), "b": clocks.Offset("b", 700, 1, "ssh")}
    assert clocks.latest_on_host(offsets, ["a", "b", "local-host"], 1_000) == 1_700
