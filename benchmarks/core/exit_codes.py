"""Process exit codes of kafka-bench, one meaning each."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    FAILURE = 1
    USAGE = 2  # click's own code for bad command-line usage
    INVALID_INPUT = 3  # an inventory, scenario or option failed validation; nothing was touched
    PLAYBOOK_FAILED = 4  # Ansible reported a failed or unreachable host
    UNHEALTHY = 5  # the cluster is reachable but not healthy (down brokers, under-replicated partitions)
    UNREACHABLE = 6  # no broker answered
    BLIND = 7  # a negative control did not lose what it was built to lose: the harness cannot be trusted to see loss
    INVALID_RUNS = 8  # the suite ran to its end and was reported, but some runs are invalid (a step failed, ...)
    INTERRUPTED = 130
