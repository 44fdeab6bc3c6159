"""The run directory's typed records: summary and events, the ledgers, the message contract, the
timeline's tables, a suite's plan; it imports only the core."""
