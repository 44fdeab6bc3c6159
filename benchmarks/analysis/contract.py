"""What callers of the analysis need before it runs, without loading PySpark: the errors it raises
on bad input and the default thresholds of its metrics. The CLI imports this module; Spark is
loaded only by a command that analyses."""

from __future__ import annotations

GAP_THRESHOLD_S = 1.0  # seconds without an ack to a partition that count as unavailability
EXPECTED_ACKS = 5.0  # a gap must also be as long as 5 acks take at the partition's average rate


class InputError(ValueError):
    """The directory holds no run, or a run lacks what the analysis needs; the message names it."""


class SchemaError(ValueError):
    """An input lacks a column or has one of the wrong type; the message names both."""
