"""The effective configuration of a run: what effective-config.json holds, and the differences
from the scenario that make a run invalid (no cluster: the record is built as the cluster reports it)."""

from benchmarks.harness import effective
from benchmarks.spec import scenario


def _scenario(**client):
    return scenario.parse({"scenario": {"name": "s", "workload": {"partitions": 3, "replication_factor": 3,
                                                                  "min_insync_replicas": 2},
                                        "client": client or {"producer": {"acks": "all"}}}})[0].scenario


def _found(topic=None, partitions=3, rf=(3,), producer=None, features=None):
    return effective.EffectiveConfig(
        client=effective.Clients("confluent-kafka", "2.6.0", "2.6.0", producer or {"acks": "all"}, "librdkafka 2.6.0", {}),
        topic={"min.insync.replicas": "2", "unclean.leader.election.enable": "false", **(topic or {})},
        brokers={"0": {"broker.id": "0"}}, topic_layout=effective.TopicLayout(partitions, list(rf)),
        connection={"bootstrap": "127.0.0.1:9092"},
        cluster=effective.ClusterIdentity("kraft", "4.3.1", features or {"eligible.leader.replicas.version": "1"}))


def test_a_cluster_that_does_what_the_scenario_asks_differs_in_nothing():
    assert effective.differences(_found(), _scenario()) == []


def test_each_difference_from_the_scenario_is_named():
    found = _found(topic={"min.insync.replicas": "1", "unclean.leader.election.enable": "true"}, partitions=2, rf=(2, 3))
    assert effective.differences(found, _scenario()) == [
        "topic min.insync.replicas is 1, scenario says 2",
        "topic unclean.leader.election.enable is true",
        "topic has 2 partitions with RF [2, 3], scenario says 3 with RF 3"]


def test_an_idempotent_producer_without_acks_all_is_a_difference():
    """librdkafka refuses the pair when the scenario is read; the Java producer is idempotent by default."""
    s = _scenario(producer={"acks": "1"}, producer_library="java")
    found = _found(producer=effective.resolved_producer(s))
    assert effective.differences(found, s) == ["enable.idempotence=true needs acks=all, scenario says acks=1"]


def test_each_clients_defaults_fill_in_what_the_analysis_depends_on():
    assert effective.resolved_producer(_scenario(producer={"linger.ms": 5})) == {
        "acks": "all", "enable.idempotence": False, "linger.ms": 5}
    java = _scenario(producer={"linger.ms": 5}, producer_library="java")
    assert effective.resolved_producer(java)["enable.idempotence"] is True  # the Java producer's default


def test_eligible_leader_replicas_are_read_from_the_finalized_level_and_unknown_when_unread():
    assert _found().cluster.eligible_leader_replicas is True
    assert _found(features={"metadata.version": "4.3-IV0"}).cluster.eligible_leader_replicas is False
    assert _found(features={"error": "no answer"}).cluster.eligible_leader_replicas is None


def test_the_file_keeps_its_layout():
    """effective-config.json as the runs before this record wrote it: tests and people read these keys."""
    written = _found().to_dict()
    assert list(written) == ["client", "topic", "brokers", "topic_layout", "connection", "cluster"]
    assert list(written["client"]) == ["library", "version", "librdkafka", "producer", "producer_library", "consumer"]
    assert written["topic_layout"] == {"partitions": 3, "replication_factor": [3]}
    assert list(written["cluster"]) == ["metadata_mode", "kafka_version", "finalized_features"]
