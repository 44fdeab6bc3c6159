"""Kafka as the harness sees it: the cluster's status, topics, the few wire-protocol requests
librdkafka lacks, the brokers' errors; it imports the hosts and the core."""
