"""The Spark session of an analysis: local[*] by default, any cluster by --master and --conf."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

LOG4J = Path(__file__).with_name("log4j2.properties")

# Small data by Spark's standards: few shuffle partitions keep a 2-core laptop busy, not queued.
DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.adaptive.enabled": "true",
    "spark.driver.memory": "4g",
    "spark.sql.execution.arrow.pyspark.enabled": "false",
    # A batch job wants throughput, not short pauses: the parallel collector does the same
    # analysis in ~12% less time than the default G1 (10M messages, 2 cores). In local mode
    # the driver is the executor; on a cluster set spark.executor.extraJavaOptions likewise.
    # Errors only in the log (log4j2.properties beside this file); the JVM's notice of an
    # incubator module Spark loads is not for a reader of the report either.
    "spark.driver.extraJavaOptions": f"-XX:+UseParallelGC -Dlog4j2.configurationFile={LOG4J.as_uri()}",
    # The per-message status is cached once and read twice: compressing it costs more CPU
    # (~1.6 s of 18 at 10M messages) than it saves; it spills to disk if memory runs short.
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
}


# Spark compiles generated Java (Janino) for the expressions of every plan it runs. The analysis
# runs ~200 small jobs, so for a small input the compiles outweigh what they save. Measured here
# (2 cores; read, analyse and collect, fresh session then warm): the tests' three hand-built runs
# 68 s / 50 s compiled, 62 s / 42 s interpreted; a synthetic run of 1M messages 134 s / 57 s
# compiled, 184 s / 66 s interpreted.
CODEGEN_MODE = "spark.sql.codegen.factoryMode"
INTERPRETED_BELOW = 200_000  # messages in the produce ledgers


def fit_codegen(spark, messages: int, conf: dict[str, str] | None = None) -> str:
    """Interpreted expressions for an input of fewer than INTERPRETED_BELOW messages, compiled
    ones (Spark's default, FALLBACK) otherwise; a mode given by --conf is left as it is."""
    if CODEGEN_MODE in (conf or {}):
        return (conf or {})[CODEGEN_MODE]
    mode = "NO_CODEGEN" if messages < INTERPRETED_BELOW else "FALLBACK"
    spark.conf.set(CODEGEN_MODE, mode)
    return mode


def parse_conf(pairs: Iterable[str]) -> dict[str, str]:
    """`KEY=VALUE` strings (as given to --conf) as a dict; a string without `=` is an error naming it."""
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf {pair!r}: expected KEY=VALUE, e.g. spark.executor.memory=4g")
        conf[key.strip()] = value
    return conf


def spark_session(master: str = "local[*]", conf: dict[str, str] | None = None, app_name: str = "kafka-bench-analysis"):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = dict(DEFAULTS)
    if master.startswith("local"):
        # A local session listens on loopback only, not on whatever the host name resolves to.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
