"""The capacity search on fake runs: bracketing, bisection, a first probe that misses, no rate
that meets the objective, a generator that falls behind, and the range refused before any probe."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchmarks.harness import capacity
from benchmarks.harness.capacity import ProbeResult
from benchmarks.spec.capacity import CapacitySearch, Objective


class FakeCluster:
    """A cluster that carries up to `limit` msg/s: p99 5 ms far below it, rising to the 50 ms
    objective at `limit`, and acks falling behind above it; a generator that keeps up to
    `generator_max` msg/s. Records the rates probed."""

    def __init__(self, limit: float, generator_max: float = float("inf")) -> None:
        self.limit, self.generator_max, self.probed = limit, generator_max, []

    def __call__(self, rate: float) -> ProbeResult:
        self.probed.append(rate)
        load = rate / self.limit
        p99 = 5 + 45 * load ** 4 if load <= 1 else 50 + 2000 * (load - 1)
        acked = min(rate, self.limit * 1.05)
        return ProbeResult(rate, acked, p99, failed=0, consumers_caught_up=True, steady=True,
                           generator_bound=rate > self.generator_max, run_id=f"probe-{len(self.probed)}")


def test_it_grows_until_a_probe_misses_then_bisects_to_the_precision():
    cluster = FakeCluster(limit=11_000)
    result = capacity.search(CapacitySearch(start_rate=1000, precision=0.05), cluster)
    assert result.outcome == "found"
    assert cluster.probed[:5] == [1000, 2000, 4000, 8000, 16000]  # grow x2 while met
    assert [s.phase for s in result.steps[:5]] == ["grow"] * 5 and {s.phase for s in result.steps[5:]} == {"bisect"}
    assert 11_000 * 0.95 <= result.capacity <= 11_000
    above = min(s.result.offered_rate for s in result.steps if not s.met)
    assert (above - result.capacity) / result.capacity <= 0.05
    assert all(s.met == (s.result.offered_rate <= 11_000) for s in result.steps)
    assert result.summary.startswith(f"{result.capacity:.0f} msg/s (bisected to within")


def test_a_first_probe_that_misses_descends_until_one_is_met():
    cluster = FakeCluster(limit=300)
    result = capacity.search(CapacitySearch(start_rate=1000, min_rate=100, precision=0.1), cluster)
    assert cluster.probed[:3] == [1000, 500, 250]
    assert [s.phase for s in result.steps[:3]] == ["grow", "descend", "descend"]
    assert result.outcome == "found" and 300 * 0.9 <= result.capacity <= 300


def test_no_rate_meets_an_objective_nothing_can_meet():
    """p99 at most 0.01 ms: the search ends at min_rate, with the lowest probe's figures."""
    cluster = FakeCluster(limit=10_000)
    spec = CapacitySearch(objective=Objective(p99_ms=0.01), start_rate=1000, min_rate=150)
    result = capacity.search(spec, cluster)
    assert result.outcome == "none_met" and result.capacity is None
    assert cluster.probed == [1000, 500, 250, 150]  # the last halving stops at min_rate, probed once
    assert result.summary == "no rate met the objective: the lowest probed, 150 msg/s, missed it (p99 5.0 ms > 0.01 ms)"


def test_a_generator_that_falls_behind_ends_the_search_with_a_lower_bound_only():
    cluster = FakeCluster(limit=50_000, generator_max=5000)
    result = capacity.search(CapacitySearch(start_rate=1000), cluster)
    assert result.outcome == "generator_bound" and result.capacity == 4000
    assert cluster.probed == [1000, 2000, 4000, 8000]
    assert not result.steps[-1].met and result.steps[-1].missed == []  # the cluster met it; the generator did not
    assert result.summary == ("at least 4000 msg/s: the generator fell behind at 8000 msg/s, so that probe measured "
                              "the generator, not the cluster")


def test_the_highest_rate_allowed_met_is_a_lower_bound():
    result = capacity.search(CapacitySearch(start_rate=1000, max_rate=3000), FakeCluster(limit=1e9))
    assert result.outcome == "max_rate" and result.capacity == 3000
    assert [s.result.offered_rate for s in result.steps] == [1000, 2000, 3000]


@pytest.mark.parametrize(("result", "reasons"), [
    (ProbeResult(1000, 1000, 12.0, 0, True, True, False), []),
    (ProbeResult(1000, 1000, None, 0, True, None, False), ["p99 no ack > 50 ms"]),
    (ProbeResult(1000, 980, 60.0, 3, False, False, False),
     ["p99 60.0 ms > 50 ms", "3 failed or unconfirmed sends > 0", "acked 980 msg/s < 99% of 1000 offered",
      "consumers fell behind", "not steady"]),
])
def test_what_a_probe_missed_is_said_field_by_field(result, reasons):
    assert capacity.missed(result, Objective()) == reasons


def test_an_impossible_range_is_refused_before_any_probe():
    with pytest.raises(ValidationError, match=r"min_rate <= start_rate <= max_rate, got 100 <= 5000 <= 2000"):
        CapacitySearch(start_rate=5000, max_rate=2000)
    with pytest.raises(ValidationError, match="growth"):
        CapacitySearch(growth=1.0)
    with pytest.raises(ValidationError, match="precision"):
        CapacitySearch(precision=0)
    with pytest.raises(ValidationError, match="unknown_key|Extra inputs"):
        CapacitySearch.model_validate({"unknown_key": 1})
