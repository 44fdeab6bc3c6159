"""A capacity search as a scenario asks for it: the objective a probe's steady state must meet,
and the range and precision of the search (benchmarks/harness/capacity.py runs it). An
impossible range is refused here, before anything runs."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from benchmarks.spec.strict import Strict


class Objective(Strict):
    """What a probe's steady state must meet for its offered rate to count as carried."""

    # The p99 of the acks, from each message's intended send time, at most this.
    p99_ms: Annotated[float, Field(gt=0)] = 50.0
    # Sends that failed or were never confirmed (timed out), at most this many.
    max_failed: Annotated[int, Field(ge=0)] = 0
    # Acknowledged messages a second, at least this share of the offered rate.
    achieved_share: Annotated[float, Field(gt=0, le=1)] = 0.99
    # Every consumer group read what was acknowledged by the end of the probe.
    consumers_keep_up: bool = True


class CapacitySearch(Strict):
    """Grow the offered rate from `start_rate` by `growth` while probes meet the objective, then
    bisect between the last rate met and the first missed until they are within `precision` of
    each other. A first probe that misses halves the rate down to `min_rate` first."""

    objective: Objective = Objective()
    start_rate: Annotated[float, Field(gt=0)] = 1000.0  # msg/s of the first probe
    min_rate: Annotated[float, Field(gt=0)] = 100.0  # the lowest rate probed before giving up
    max_rate: Annotated[float, Field(gt=0)] = 1_000_000.0  # no probe offers more
    growth: Annotated[float, Field(gt=1, le=10)] = 2.0  # factor between probes while they meet it
    # The search ends when (missed - met) / met is at most this.
    precision: Annotated[float, Field(gt=0, le=0.5)] = 0.05

    @model_validator(mode="after")
    def _ordered_range(self) -> CapacitySearch:
        if not self.min_rate <= self.start_rate <= self.max_rate:
            raise ValueError(f"the rates must be ordered min_rate <= start_rate <= max_rate, got {self.min_rate:g} "
                             f"<= {self.start_rate:g} <= {self.max_rate:g}")
        return self
