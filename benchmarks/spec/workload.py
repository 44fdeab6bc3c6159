"""The workload of a scenario: the topic a run creates and the load it drives on it. Apart from
the scenario (benchmarks/spec/scenario.py) so that what judges a workload (a procedure's checks)
needs no scenario."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from benchmarks.spec.strict import Strict

NAME = r"^[a-z0-9][a-z0-9._-]*$"  # names of scenarios, topics, groups and client profiles


class ConsumerGroup(Strict):
    """A consumer group reading the run's topic: its members, each a process of its own."""

    name: Annotated[str, Field(pattern=NAME)]  # its group.id is kafka-bench-<run id>-<name>
    consumers: Annotated[int, Field(ge=1, le=64)] = 1  # members, each a consumer process
    # Kill one member this many seconds into the measured phase (seed 001's consumer failover).
    kill_one_at_s: Annotated[float, Field(ge=0)] | None = None


class Workload(Strict):
    """The topic a run creates and the load it drives: open-loop, on intended send times."""

    topic: Annotated[str, Field(pattern=NAME)] | None = None  # each run's topic is this, suffixed; null: kb-<scenario name>
    partitions: Annotated[int, Field(ge=1, le=1000)] = 3
    replication_factor: Annotated[int, Field(ge=1, le=15)] = 3
    min_insync_replicas: Annotated[int, Field(ge=1, le=15)] = 1  # the topic's min.insync.replicas
    unclean_leader_election: bool = False  # the topic's unclean.leader.election.enable
    # Eligible Leader Replicas (KIP-966, KRaft): true/false finalizes eligible.leader.replicas.version
    # 1/0 on the cluster before the run; null leaves the cluster as it is. Either way the run records it.
    eligible_leader_replicas: bool | None = None
    topic_config: dict[str, str] = {}  # other topic configs, as kafka-configs names them
    message_size: Annotated[int, Field(ge=16, le=1_000_000)] = 100  # bytes of each message's value
    keys: Annotated[int, Field(ge=0)] = 64  # distinct keys spread over the partitions; 0 sends no key
    producers: Annotated[int, Field(ge=1, le=64)] = 2  # producer processes
    rate: Annotated[float, Field(gt=0)] | None = 1000.0  # messages/s over all producers; null = unthrottled
    warmup_s: Annotated[float, Field(ge=0)] = 2.0  # load before the measured phase (left out of its figures)
    duration_s: Annotated[float, Field(gt=0)] = 20.0  # the measured phase; fault and procedure times fall inside it
    consumer_groups: list[ConsumerGroup] = []  # groups reading the topic as it is written

    @field_validator("topic_config")
    @classmethod
    def _no_duplicated_settings(cls, value: dict[str, str]) -> dict[str, str]:
        owned = {"min.insync.replicas": "min_insync_replicas", "unclean.leader.election.enable": "unclean_leader_election"}
        for key, field in owned.items():
            if key in value:
                raise ValueError(f"set {key} with workload.{field}, not in topic_config")
        return value

    @model_validator(mode="after")
    def _unique_groups(self) -> Workload:
        names = [g.name for g in self.consumer_groups]
        if len(names) != len(set(names)):
            raise ValueError(f"consumer group names must be unique, got {names}")
        return self
