"""What a client security profile costs against plaintext, from a hand-built summary."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from benchmarks.analysis import costs

pytestmark = pytest.mark.spark

SUMMARY = ("scenario string, sweep_of string, sweep_point array<struct<path:string,value:string>>, "
           "metadata_mode string, kafka_version string, security string, valid boolean, throughput_msgs_s double, "
           "latency_p50_ms double, latency_p99_ms double, broker_cpu_ms_per_1k double")


def point(security, rate=None):
    return [{"path": "client.security", "value": f'"{security}"'}] + (
        [{"path": "workload.rate", "value": str(rate)}] if rate else [])


def test_each_profile_is_compared_with_plaintext_on_the_same_point(spark):
    """Two rates swept with the profiles: each compared within its rate; tls's two trials give
    their median; an invalid run and a sweep of another field are left out; a point whose
    plaintext run was invalid has nothing to compare with."""
    summary = spark.createDataFrame([
        ("cost-000", "cost", point("plaintext", 1000), "kraft", "4.3.1", "plaintext", True, 1000.0, 10.0, 100.0, 20.0),
        ("cost-001", "cost", point("tls", 1000), "kraft", "4.3.1", "tls", True, 800.0, 20.0, 150.0, 30.0),
        ("cost-001", "cost", point("tls", 1000), "kraft", "4.3.1", "tls", True, 600.0, 40.0, 250.0, 50.0),
        ("cost-001", "cost", point("tls", 1000), "kraft", "4.3.1", "tls", False, 1.0, 1.0, 1.0, 1.0),
        ("cost-002", "cost", point("plaintext", 2000), "kraft", "4.3.1", "plaintext", True, 2000.0, 5.0, 50.0, 10.0),
        ("cost-003", "cost", point("sasl_ssl", 2000), "kraft", "4.3.1", "sasl_ssl", True, 1000.0, 10.0, 200.0, None),
        ("lone-000", "lone", point("plaintext"), "kraft", "4.3.1", "plaintext", False, 9.0, 9.0, 9.0, 9.0),
        ("lone-001", "lone", point("tls"), "kraft", "4.3.1", "tls", True, 9.0, 9.0, 9.0, 9.0),
        ("acks-000", "acks", [{"path": "client.producer.acks", "value": '"1"'}], "kraft", "4.3.1", "plaintext", True,
         9.0, 9.0, 9.0, 9.0),
    ], SUMMARY)
    got = costs.security_cost(summary).select("scenario", "security", "runs", "throughput_ratio", "p50_ratio",
                                              "p99_ratio", "cpu_ratio", "latency_p50_ms")
    expected = spark.createDataFrame([
        ("cost-000", "plaintext", 1, 1.0, 1.0, 1.0, 1.0, 10.0),
        ("cost-001", "tls", 2, 0.7, 3.0, 2.0, 2.0, 30.0),
        ("cost-002", "plaintext", 1, 1.0, 1.0, 1.0, 1.0, 5.0),
        ("cost-003", "sasl_ssl", 1, 0.5, 2.0, 4.0, None, 10.0),
    ], "scenario string, security string, runs long, throughput_ratio double, p50_ratio double, p99_ratio double, "
       "cpu_ratio double, latency_p50_ms double")
    assertDataFrameEqual(got, expected, checkRowOrder=True)
