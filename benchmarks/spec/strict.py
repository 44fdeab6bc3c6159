"""The base of every model of a scenario file (the scenario, its workload, its faults and
procedures): unknown keys are errors naming their path, values are frozen once read."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A model of the scenario file: unknown keys are errors, values are frozen once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)
