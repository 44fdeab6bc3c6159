"""What every layer shares: the project's paths, waiting, the exit codes, the outcome words, how
clients reach a cluster; it imports nothing of the project."""
