"""The single-run checker: what became of every message of a run's ledgers; it imports only the
core."""
