"""One polling loop for everything that waits on the cluster."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(TimeoutError):
    """The condition did not hold in time; `last` is the probe's last answer."""

    def __init__(self, message: str, last: object) -> None:
        super().__init__(message)
        self.last = last


def wait_until(probe: Callable[[], T], timeout_s: float, interval_s: float = 0.5, what: str = "a condition",
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> T:
    """Call `probe` until it returns something truthy, and return that; WaitTimeout after
    `timeout_s` seconds (the probe is always called at least once)."""
    deadline = clock() + timeout_s
    while True:
        last = probe()
        if last:
            return last
        if clock() >= deadline:
            raise WaitTimeout(f"timed out after {timeout_s:.0f} s waiting for {what}", last)
        sleep(interval_s)
