"""The command line: `kafka-bench` and its commands, a thin layer over the harness, the analysis
and the report; it may import every layer."""
