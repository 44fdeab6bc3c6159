"""The capacity search: the highest offered rate whose steady state meets an objective
(benchmarks/spec/capacity.py), found by growing the rate while probes meet it and bisecting
between the last rate met and the first missed. Each probe is a run; `probe` is injected (a
function from an offered rate to what that run measured), so the search is tested on fake runs
(tests/unit/test_capacity.py). Every probe is kept, in order, with what it missed: the search's
path is part of its result.

A probe whose generator fell behind its schedule measured the generator, not the cluster: the
search stops there, and the rate met before it is a lower bound, never the cluster's capacity.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Literal

from benchmarks.spec.capacity import CapacitySearch, Objective

Phase = Literal["grow", "descend", "bisect"]
# found: bisected to the precision asked; max_rate: the highest rate allowed was met;
# generator_bound: the generator fell behind first (the capacity is at least the rate met, if any);
# none_met: not even min_rate met the objective.
Outcome = Literal["found", "max_rate", "generator_bound", "none_met"]


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    """What one probe (a run at one offered rate) measured in its steady state."""

    offered_rate: float  # msg/s asked of the generator
    acked_rate: float  # acknowledged msg/s
    p99_ms: float | None  # acks from the intended send time; None: no ack
    failed: int  # sends failed or never confirmed
    consumers_caught_up: bool  # every group read what was acknowledged
    steady: bool | None  # the run's steadiness verdict (None: too short to judge)
    generator_bound: bool  # the generator fell behind its schedule
    run_id: str = ""


def missed(result: ProbeResult, objective: Objective) -> list[str]:
    """What of `objective` the probe missed, in words; empty when it met it all."""
    reasons = []
    if result.p99_ms is None or result.p99_ms > objective.p99_ms:
        got = "no ack" if result.p99_ms is None else f"{result.p99_ms:.1f} ms"
        reasons.append(f"p99 {got} > {objective.p99_ms:g} ms")
    if result.failed > objective.max_failed:
        reasons.append(f"{result.failed} failed or unconfirmed sends > {objective.max_failed}")
    if result.acked_rate < objective.achieved_share * result.offered_rate:
        reasons.append(f"acked {result.acked_rate:.0f} msg/s < {objective.achieved_share:.0%} of "
                       f"{result.offered_rate:.0f} offered")
    if objective.consumers_keep_up and not result.consumers_caught_up:
        reasons.append("consumers fell behind")
    if result.steady is False:
        reasons.append("not steady")
    return reasons


@dataclasses.dataclass(frozen=True)
class Step:
    """One probe of the search: why it ran, what it measured, what it missed."""

    phase: Phase
    result: ProbeResult
    missed: list[str]

    @property
    def met(self) -> bool:
        return not self.missed and not self.result.generator_bound


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """The capacity (the highest rate met; None when none was) and the path that found it."""

    outcome: Outcome
    capacity: float | None
    steps: list[Step]

    @property
    def summary(self) -> str:
        if self.outcome == "none_met":
            lowest = min(self.steps, key=lambda s: s.result.offered_rate)
            return (f"no rate met the objective: the lowest probed, {lowest.result.offered_rate:.0f} msg/s, "
                    f"missed it ({'; '.join(lowest.missed)})")
        if self.outcome == "generator_bound":
            bound = next(s for s in self.steps if s.result.generator_bound)
            at_least = f"at least {self.capacity:.0f} msg/s" if self.capacity is not None else "unknown"
            return (f"{at_least}: the generator fell behind at {bound.result.offered_rate:.0f} msg/s, so that probe "
                    "measured the generator, not the cluster")
        assert self.capacity is not None
        if self.outcome == "max_rate":
            return f"at least {self.capacity:.0f} msg/s: the highest rate the search may offer met the objective"
        return f"{self.capacity:.0f} msg/s (bisected to within {self._spread():.1%} of the first rate missed)"

    def _spread(self) -> float:
        assert self.capacity is not None
        above = [s.result.offered_rate for s in self.steps if not s.met and s.result.offered_rate > self.capacity]
        return (min(above) - self.capacity) / self.capacity if above else 0.0


def search(spec: CapacitySearch, probe: Callable[[float], ProbeResult]) -> SearchResult:
    """Run probes as `spec` says until the capacity is bracketed to its precision."""
    steps: list[Step] = []

    def run(phase: Phase, rate: float) -> Step:
        result = probe(rate)
        step = Step(phase, result, missed(result, spec.objective))
        steps.append(step)
        return step

    met: float | None = None  # the highest rate met so far
    missed_at: float | None = None  # the lowest rate missed so far
    rate = spec.start_rate
    phase: Phase = "grow"
    while True:  # grow while met; or, when the first probe missed, descend until one is met
        step = run(phase, rate)
        if step.result.generator_bound:
            return SearchResult("generator_bound", met, steps)
        if step.met:
            met = rate
            if phase == "descend":
                break
            if rate >= spec.max_rate:
                return SearchResult("max_rate", met, steps)
            rate = min(rate * spec.growth, spec.max_rate)
            continue
        missed_at = rate
        if met is not None:
            break
        if rate <= spec.min_rate:
            return SearchResult("none_met", None, steps)
        phase, rate = "descend", max(rate / spec.growth, spec.min_rate)
    assert missed_at is not None
    while (missed_at - met) / met > spec.precision:
        rate = (met + missed_at) / 2
        step = run("bisect", rate)
        if step.result.generator_bound:
            return SearchResult("generator_bound", met, steps)
        if step.met:
            met = rate
        else:
            missed_at = rate
    return SearchResult("found", met, steps)
