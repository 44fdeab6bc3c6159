"""What scenario validation knows of the cluster a scenario will run on, read from its inventory
(or from the brokers of a cluster given by its bootstrap address): the fault kinds, targets,
procedures and client profiles a scenario names are judged against it before anything runs."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClusterShape:
    """What scenario validation needs to know of the inventory it will run on (fields by name)."""

    broker_ids: tuple[int, ...]
    hosts: int  # distinct broker addresses
    metadata_mode: str = "zookeeper"  # kraft | zookeeper: which fault kinds the cluster can have
    controller_ids: tuple[int, ...] = ()  # KRaft controllers' node ids
    migration_controllers: int = 0  # controllers waiting for a ZooKeeper -> KRaft migration
    kafka_version: str = ""  # the release the inventory runs (empty: unknown)
    # Why its hosts' kernel has no sch_netem (tc netem), when known (the lab's hosts share this
    # machine's kernel); empty: it may have it (real hosts, Vagrant: the fault's playbook checks).
    no_netem: str = ""
    # Brokers whose data has no filesystem of its own to fill (no kafka_bench_fault_disk_mount).
    no_data_disk: tuple[str, ...] = ()
    # The client profiles (client.security) the cluster has listeners and settings for; None: any.
    client_profiles: tuple[str, ...] | None = None
    # Why no host of the cluster can be acted on, when none can (a run given only --bootstrap):
    # faults, procedures and feature levels are refused. Empty: an inventory names the hosts.
    no_hosts: str = ""
    # Why this project's roles may not act on the hosts, when they may not (a cluster deployed by
    # something else): faults act on the hosts' own units; procedures and feature levels are refused.
    not_deployed: str = ""
