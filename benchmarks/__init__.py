"""kafka-bench: measured answers to what Kafka durability settings cost and save."""

__version__ = "0.1.0"
