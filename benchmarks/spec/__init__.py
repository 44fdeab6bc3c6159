"""What a scenario file says, validated once: the scenario, its workload, client profile, fault
kinds and procedures; it imports the record, kafka, hosts and core layers."""
