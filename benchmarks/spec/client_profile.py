"""The clients' settings of a scenario (`client`): the producer library, raw librdkafka
properties of the producers and the consumers (each checked by librdkafka itself before any
run), exactly-once, how the clients connect; and the shared profiles scenarios name
(`client: safe` is benchmarks/clients/safe.yml) instead of copying them."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from benchmarks.core.paths import CLIENTS
from benchmarks.spec.scenario_file import ScenarioError, read_file
from benchmarks.spec.strict import Strict
from benchmarks.spec.workload import NAME


class Transactions(Strict):
    """Exactly-once: every producer writes in transactions (its own transactional.id), and every
    reader of the run reads committed. The producer commits or aborts each transaction by a
    ratio seeded from the run's seed; the ledger records each transaction's fate."""

    messages: Annotated[int, Field(ge=1, le=100_000)] = 10  # messages per transaction
    abort_ratio: Annotated[float, Field(ge=0, le=1)] = 0.1  # share of transactions aborted on purpose
    timeout_ms: Annotated[int, Field(ge=1000, le=900_000)] = 60_000  # transaction.timeout.ms


# Producer settings a transactional profile sets itself, or that contradict it.
_TRANSACTIONAL_OWNED = {"transactional.id": "set per producer from the run id",
                        "enable.idempotence": "a transactional producer is idempotent",
                        "transaction.timeout.ms": "set it with client.transactions.timeout_ms"}


# Producer settings with one meaning in librdkafka and in Kafka's Java producer: the only ones a
# profile on the Java producer may set, so the same profile runs on both clients (a comparison).
JAVA_PRODUCER_KEYS = frozenset({
    "acks", "batch.size", "client.id", "compression.type", "connections.max.idle.ms", "delivery.timeout.ms",
    "enable.idempotence", "linger.ms", "max.in.flight.requests.per.connection", "metadata.max.age.ms",
    "reconnect.backoff.max.ms", "reconnect.backoff.ms", "request.timeout.ms", "retries", "retry.backoff.max.ms",
    "retry.backoff.ms", "socket.connection.setup.timeout.ms"})


def _librdkafka_error(role: str, config: dict[str, Any]) -> str | None:
    """What librdkafka says of `config` for a producer or a consumer (None: it takes it). It checks
    every property's name, type and range when the client is made; with no bootstrap.servers the
    client connects to nothing."""
    import confluent_kafka

    try:
        if role == "producer":
            confluent_kafka.Producer({"log_level": 0, **config})
        else:
            confluent_kafka.Consumer({"log_level": 0, "group.id": "kafka-bench-validation", **config}).close()
    except (confluent_kafka.KafkaException, TypeError, ValueError) as exc:
        error = exc.args[0] if exc.args else exc
        return str(error.str() if hasattr(error, "str") else error).strip()
    return None


def librdkafka_refuses(role: str, config: dict[str, Any]) -> str | None:
    """Why librdkafka would refuse the client block `config` (role: producer or consumer), naming
    the key it refuses; None when it takes it. Checked before any run, since a refused property
    otherwise surfaces only when the run's producers start, after the topic was made."""
    if not config:
        return None
    whole = _librdkafka_error(role, config)
    if whole is None:
        return None
    for key, value in config.items():
        alone = _librdkafka_error(role, {key: value})
        if alone is not None:
            return f"{key}: librdkafka refuses {value!r}: {alone}"
    return f"librdkafka refuses these settings together: {whole}"


class ClientProfile(Strict):
    """The clients' settings: the workload apart from how its clients are configured."""

    name: Annotated[str, Field(pattern=NAME)] = "default"  # the profile's name in the report
    # The producers' client: librdkafka (confluent-kafka) or Kafka's own Java producer
    # (kafka-clients 4.3.1, with KIP-890's transaction verification; playbooks/java-client.yml
    # installs it). The consumers, the warm-up and the final read stay on librdkafka.
    producer_library: Literal["librdkafka", "java"] = "librdkafka"
    # Raw librdkafka properties. Everything that matters is recorded as resolved by the client.
    producer: dict[str, str | int | float | bool] = {}
    consumer: dict[str, str | int | float | bool] = {}  # raw librdkafka properties of every consumer group's members
    # Exactly-once (librdkafka's transactional producer); None: plain sends.
    transactions: Transactions | None = None
    # How the clients connect: the client settings the cluster's inventory has for this profile
    # (plaintext, tls, mtls, sasl_ssl); None: the cluster's own (its broker listener's protocol).
    security: Literal["plaintext", "tls", "mtls", "sasl_ssl"] | None = None

    @model_validator(mode="after")
    def _java_keys(self) -> ClientProfile:
        unknown = sorted(set(self.producer) - JAVA_PRODUCER_KEYS)
        if self.producer_library == "java" and unknown:
            raise ValueError(f"producer.{unknown[0]}: not a setting both producer libraries share; with "
                             f"producer_library java the allowed keys are {', '.join(sorted(JAVA_PRODUCER_KEYS))}")
        return self

    @model_validator(mode="after")
    def _transactional(self) -> ClientProfile:
        if self.transactions is None:
            return self
        for key, why in _TRANSACTIONAL_OWNED.items():
            if key in self.producer:
                raise ValueError(f"producer.{key}: remove it with transactions ({why})")
        if self.acks != "all":
            raise ValueError(f"producer.acks: a transactional producer needs acks all (got {self.acks!r})")
        if str(self.consumer.get("isolation.level", "read_committed")) != "read_committed":
            raise ValueError("consumer.isolation.level: with transactions every reader reads "
                             f"committed (allowed: read_committed; got {self.consumer['isolation.level']!r})")
        return self

    @field_validator("producer")
    @classmethod
    def _acks(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in ("acks", "request.required.acks"):
            if key in value and str(value[key]) not in ("0", "1", "all", "-1"):
                raise ValueError(f"{key} must be one of 0, 1, all, -1 (got {value[key]!r})")
        return value

    @field_validator("producer", "consumer")
    @classmethod
    def _no_connection_settings(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "bootstrap.servers" in value:
            raise ValueError("bootstrap.servers comes from the inventory (or --bootstrap); remove it from the client profile")
        owned = sorted(k for k in value if k == "security.protocol" or k.startswith(("ssl.", "sasl.")))
        if owned:
            raise ValueError(f"{', '.join(owned)}: connection settings come from client.security (plaintext, tls, mtls, "
                             f"sasl_ssl) and the cluster's client settings, or from --client-config; remove them here")
        return value

    @field_validator("producer", "consumer")
    @classmethod
    def _librdkafka_accepts(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        problem = librdkafka_refuses(str(info.field_name), value)
        if problem:
            raise ValueError(problem)
        return value

    @property
    def acks(self) -> str:
        acks = str(self.producer.get("acks", self.producer.get("request.required.acks", "all")))
        return "all" if acks == "-1" else acks


def client_profiles() -> list[str]:
    """The names of the shared client profiles (benchmarks/clients/*.yml)."""
    return sorted(p.stem for p in CLIENTS.glob("*.yml"))


def named_client(value: Any, source: str, field: str = "scenario.client") -> Any:
    """A client given by a shared profile's name, or extending one (`{profile: NAME, ...}`), as
    the mapping it stands for; any other value as it is (the model judges it)."""
    if isinstance(value, str):
        name, extra = value, {}
    elif isinstance(value, dict) and "profile" in value:
        name, extra = value["profile"], {k: v for k, v in value.items() if k != "profile"}
    else:
        return value
    path = CLIENTS / f"{name}.yml"
    if not isinstance(name, str) or not re.fullmatch(NAME, name) or not path.is_file():
        raise ScenarioError(f"{source}: {field}: no client profile {name!r}; the profiles are "
                            f"{', '.join(client_profiles())} (files in {CLIENTS})")
    profile = read_file(path)
    if not isinstance(profile, dict):
        raise ScenarioError(f"{path}: a client profile must be a mapping (the keys of a scenario's client)")
    merged = {**profile, **extra}
    for section in ("producer", "consumer"):
        if isinstance(profile.get(section), dict) and isinstance(extra.get(section), dict):
            merged[section] = {**profile[section], **extra[section]}
    return merged
