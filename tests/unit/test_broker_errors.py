"""The broker error behind a message the client gave up on, from librdkafka's debug log."""

from __future__ import annotations

from benchmarks.kafka import broker_errors


def say(said: broker_errors.BrokerErrorLog, line: str) -> None:
    """One line of the client's log, given as confluent-kafka gives it to its logger."""
    said.log(7, "%s [%s] %s", "MSGSET", "rdkafka#producer-1", line)


def test_the_last_broker_error_per_partition_of_the_topic_is_kept():
    said = broker_errors.BrokerErrorLog("bench-1")
    for line in (
        "[thrd:127.0.0.1:9093/1]: 127.0.0.1:9093/1: bench-1 [0]: MessageSet with 3 message(s) (MsgId 12, BaseSeq -1) "
        "encountered error: Broker: Not leader for partition (actions Refresh,MsgNotPersisted)",
        "[thrd:127.0.0.1:9093/1]: 127.0.0.1:9093/1: bench-1 [0]: MessageSet with 2 message(s) (MsgId 15, BaseSeq -1) "
        "encountered error: Broker: Not enough in-sync replicas (actions Retry,MsgNotPersisted)",
        "[thrd:127.0.0.1:9092/0]: 127.0.0.1:9092/0: other-topic [1]: MessageSet with 1 message(s) (MsgId 3, BaseSeq -1) "
        "encountered error: Broker: Not enough in-sync replicas (actions Retry,MsgNotPersisted)",
        "[thrd:127.0.0.1:9092/0]: 127.0.0.1:9092/0: bench-1 [2]: Produce MessageSet with 9 message(s) (900 bytes)",
    ):
        say(said, line)
    assert said.last(0) == "NOT_ENOUGH_REPLICAS"
    assert said.last(1) is None  # another topic's partition 1
    assert said.last(2) is None  # a request that did not fail
    assert said.last(None) is None and said.last(-1) is None  # a message never given a partition


def test_an_error_librdkafka_has_no_name_for_is_kept_in_its_words():
    said = broker_errors.BrokerErrorLog("t")
    say(said, "t [4]: MessageSet with 1 message(s) (MsgId 1, BaseSeq 0) encountered error: Something new (actions Retry)")
    assert said.last(4) == "Something new"


def test_the_debug_context_is_added_to_the_users_own():
    assert broker_errors.producer_config({"acks": "all"}) == {"acks": "all", "debug": "msg"}
    assert broker_errors.producer_config({"debug": "broker,msg"})["debug"] == "broker,msg"
    assert broker_errors.producer_config({"debug": "protocol"})["debug"] == "protocol,msg"


def test_a_real_client_calls_it_as_its_logger_and_it_prints_nothing(capsys):
    """confluent-kafka's own call shape: the client logs its first line when it is created
    (no broker needed); an error line given the same way is kept."""
    from confluent_kafka import Producer

    class Recording(broker_errors.BrokerErrorLog):
        def log(self, *args):
            calls.append(args)
            super().log(*args)

    calls: list[tuple] = []
    said = Recording("t")
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", "debug": "msg", "logger": said})
    producer.poll(0)
    assert {args[1] for args in calls} == {"%s [%s] %s"}
    assert any(args[2] == "INIT" and "librdkafka" in args[-1] for args in calls)
    say(said, "t [0]: MessageSet with 1 message(s) (MsgId 1, BaseSeq 0) encountered error: "
              "Broker: Not enough in-sync replicas (actions Retry)")
    assert said.last(0) == "NOT_ENOUGH_REPLICAS"
    del producer
    assert capsys.readouterr() == ("", "")
