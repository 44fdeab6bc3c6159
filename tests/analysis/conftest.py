"""One SparkSession for every analysis test (local[2], quiet)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from benchmarks.analysis.session import spark_session

    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2"}, app_name="kafka-bench-tests")
    yield session
    session.stop()
