"""Performance measurements of the harness itself (scripts, not tests)."""
