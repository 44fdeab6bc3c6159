"""Small Spark expressions the analysis jobs share."""

from __future__ import annotations

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

UNBOUNDED = Window.unboundedPreceding


def sum_if(condition: Column) -> Column:
    """How many rows meet `condition` (a long)."""
    return F.sum(F.when(condition, 1).otherwise(0)).cast("long")
