"""--conf passthrough to Spark."""

from __future__ import annotations

import pytest

from benchmarks.analysis.session import parse_conf


def test_spark_conf_pairs_are_parsed_and_bad_ones_named():
    assert parse_conf(["spark.executor.memory=4g", "spark.x= a=b"]) == {"spark.executor.memory": "4g", "spark.x": " a=b"}
    with pytest.raises(ValueError, match="'spark.executor.memory': expected KEY=VALUE"):
        parse_conf(["spark.executor.memory"])
