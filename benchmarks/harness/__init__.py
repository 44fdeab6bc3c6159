"""The harness: a run from heal to summary, the load processes, the faults and procedures on their
schedule, the timeline; it imports the check, spec, record, kafka, hosts and core layers."""
