"""One module per command group of the CLI."""
