"""--conf passthrough to Spark."""

from __future__ import annotations

import pytest

from benchmarks.analysis.session import CODEGEN_MODE, INTERPRETED_BELOW, fit_codegen, parse_conf


def test_spark_conf_pairs_are_parsed_and_bad_ones_named():
    assert parse_conf(["spark.executor.memory=4g", "spark.x= a=b"]) == {"spark.executor.memory": "4g", "spark.x": " a=b"}
    with pytest.raises(ValueError, match="'spark.executor.memory': expected KEY=VALUE"):
        parse_conf(["spark.executor.memory"])


def test_a_small_input_is_analysed_with_interpreted_expressions_and_a_large_one_compiled(spark):
    try:
        assert fit_codegen(spark, INTERPRETED_BELOW - 1) == spark.conf.get(CODEGEN_MODE) == "NO_CODEGEN"
        assert fit_codegen(spark, INTERPRETED_BELOW) == spark.conf.get(CODEGEN_MODE) == "FALLBACK"
        # A mode given with --conf is the user's: left as it is.
        assert fit_codegen(spark, 10, {CODEGEN_MODE: "CODEGEN_ONLY"}) == "CODEGEN_ONLY"
        assert spark.conf.get(CODEGEN_MODE) == "FALLBACK"
    finally:
        spark.conf.set(CODEGEN_MODE, "NO_CODEGEN")
