"""Benchmark scenarios: a workload x a client profile x a fault schedule, validated once.

A scenario file is YAML. Unknown keys and bad values are errors that name the file, the
field's path and the allowed values, raised before anything touches a cluster. A `sweep`
section expands lists of values into runs (their cross product); points that cannot run
(min ISR above RF, RF above the number of brokers) are skipped with a stated reason.
"""

from __future__ import annotations

import copy
import itertools
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from benchmarks.core.codes import TOPIC_PREFIX
from benchmarks.spec.client_profile import ClientProfile, named_client
from benchmarks.spec.fault_kinds import KINDS, Fault
from benchmarks.spec.fault_spec import Injection
from benchmarks.spec.procedures import NAMES as PROCEDURES
from benchmarks.spec.procedures import Procedure
from benchmarks.spec.scenario_file import ScenarioError, read_file
from benchmarks.spec.shape import ClusterShape
from benchmarks.spec.strict import Strict
from benchmarks.spec.workload import NAME, Workload

MAX_TRIALS = 1000

class Scenario(Strict):
    """One measured run (or, with a sweep, one per point): a workload, a client profile, and the
    faults and procedures scheduled on the clock of its load."""

    name: Annotated[str, Field(pattern=NAME)]  # names the run's directory and its row in the report
    description: str = ""  # what the run shows, on the report
    workload: Workload = Workload()
    # Its own, or a shared profile by name (`client: safe`: benchmarks/clients/safe.yml), or one
    # extended (`client: {profile: safe, consumer: {...}}`: producer and consumer merged key by key).
    client: ClientProfile = ClientProfile()
    faults: list[Fault] = []  # injected and healed at their times (seconds into the measured phase)
    # Operational procedures (playbooks) run under the load at their time; see benchmarks/spec/procedures.py.
    procedures: list[Procedure] = []
    # Whether --quick may shorten this scenario; false where the faults need real time (a killed
    # broker's ZooKeeper session must expire before it can come back, 18 s by default).
    quick: bool = True
    # Each run (each point of a sweep) is repeated this many times, each trial on a fresh topic: the
    # report gives per configuration the trials that lost an acknowledged write, with a 95% interval.
    trials: Annotated[int, Field(ge=1, le=MAX_TRIALS)] = 1
    # At most this many brokers under a fault at once: an injection due while as many are down is
    # skipped (recorded as such), not delayed. None: no bound.
    max_brokers_down: Annotated[int, Field(ge=1)] | None = None
    # A negative control: built to lose acknowledged writes. The report flags the harness blind
    # when one loses in fewer than 90% of its trials.
    expect_loss: bool = False

    @model_validator(mode="after")
    def _coherent(self) -> Scenario:
        w = self.workload
        if w.min_insync_replicas > w.replication_factor:
            raise ValueError(f"workload.min_insync_replicas ({w.min_insync_replicas}) must not exceed "
                             f"workload.replication_factor ({w.replication_factor})")
        for index, fault in enumerate(self.faults):
            if fault.first_s >= w.duration_s:
                field = "at_s" if fault.at_s is not None else "every_s"
                raise ValueError(f"faults[{index}].{field} ({fault.first_s:g}): the first injection must fall inside "
                                 f"workload.duration_s ({w.duration_s:g})")
            if fault.until_s is not None and fault.until_s > w.duration_s:
                raise ValueError(f"faults[{index}].until_s ({fault.until_s:g}) must not pass workload.duration_s "
                                 f"({w.duration_s:g})")
            for field, message in fault.workload_errors(w.partitions):
                raise ValueError(f"faults[{index}].{field} {message}")
            target = getattr(fault, "target", None)
            if getattr(target, "transaction_coordinator", False) and self.client.transactions is None:
                raise ValueError(f"faults[{index}].target.transaction_coordinator: needs a transactional producer "
                                 "(client.transactions)")
        if self.client.producer_library == "java" and not w.rate:
            raise ValueError("client.producer_library: java runs on an open-loop schedule; set workload.rate "
                             "(or use librdkafka)")
        for index, procedure in enumerate(self.procedures):
            if procedure.at_s >= w.duration_s:
                raise ValueError(f"procedures[{index}].at_s ({procedure.at_s}) must fall inside workload.duration_s "
                                 f"({w.duration_s})")
            for field, message in procedure.workload_errors(w):
                raise ValueError(f"procedures[{index}].{field}: {message}")
        return self

    @property
    def topic(self) -> str:
        return self.workload.topic or f"{TOPIC_PREFIX}{self.name}"

    def injections(self) -> list[Injection]:
        """Every injection of the run as a one-off fault, in the order of their times, each named by
        its entry ("faults[0]", a recurring one's "faults[0] #3")."""
        out = []
        for index, fault in enumerate(self.faults):
            entry, numbered = f"faults[{index}]", fault.every_s is not None
            counted = fault if fault.count is not None else None
            out += [Injection(one, entry + (f" #{n}" if numbered else ""), fault.every_s, entry, counted)
                    for n, one in enumerate(fault.occurrences(self.workload.duration_s), 1)]
        return sorted(out, key=lambda injection: injection.fault.first_s)

    @property
    def fault_label(self) -> str:
        return "; ".join(f.label for f in self.faults) or "none"


class Run(BaseModel):
    """One point of a sweep: the resolved scenario, or the reason it is skipped."""

    model_config = ConfigDict(frozen=True)
    index: int
    point: dict[str, Any]
    scenario: Scenario | None
    skipped: str | None = None
    sweep_of: str | None = None  # the scenario's name before its point's suffix (None: no sweep)

    def sweep(self) -> tuple[str, dict[str, Any]] | None:
        """(the scenario swept, this point), for the run's summary; None when there is no sweep."""
        return (self.sweep_of, self.point) if self.sweep_of is not None and self.point else None


class ScenarioFile(Strict):
    """The top level of a scenario file: a scenario, an optional sweep, and optionally what the
    scenario becomes on a KRaft cluster (`kraft`: scenario keys that replace the scenario's there,
    e.g. the faults of a ZooKeeper fault's KRaft equivalent, and a description that says so)."""

    scenario: dict[str, Any]
    sweep: dict[str, list[Any]] = {}
    kraft: dict[str, Any] = {}

    @field_validator("sweep")
    @classmethod
    def _sweep_paths(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for path, values in value.items():
            if not re.fullmatch(r"(workload|client\.producer|client\.consumer|client|faults)(\.[A-Za-z0-9_.]+)?", path):
                raise ValueError(f"sweep key {path!r} must start with workload., client.producer., "
                                 f"client.consumer. or be faults")
            if not values:
                raise ValueError(f"sweep.{path} needs at least one value")
        return value


def _one_of(names: list[str]) -> str:
    quoted = [repr(n) for n in names]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else "".join(quoted)


def _format(exc: ValidationError, source: str, prefix: str = "") -> str:
    lines = []
    for error in exc.errors():
        # A fault's or a procedure's path holds its tag (kind, playbook) after its index: not a key of the file.
        parts = [str(p) for p in error["loc"]
                 if not str(p).startswith("function-") and str(p) not in KINDS and str(p) not in PROCEDURES]
        tag = str(error.get("ctx", {}).get("discriminator", "")).strip("'")
        tags = list(PROCEDURES if tag == "playbook" else KINDS)
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            parts.append(tag)
        loc = re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", ".".join(parts))
        field = f"{prefix}{loc}" if loc else prefix.rstrip(".") or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        elif error["type"] == "literal_error":
            message = f"must be one of {error['ctx']['expected']} (got {error['input']!r})"
        elif error["type"] == "union_tag_invalid":
            message = f"must be one of {_one_of(tags)} (got {error['ctx']['tag']!r})"
        elif error["type"] == "union_tag_not_found":
            message = f"required: one of {_one_of(tags)}"
        lines.append(f"{source}: {field}: {message}")
    return "\n".join(lines)


def _set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    head, _, rest = path.partition(".")
    if head == "client" and rest in ("producer", "consumer"):
        doc.setdefault("client", {})[rest] = value
    elif head == "client" and rest.startswith(("producer.", "consumer.")):
        section, _, key = rest.partition(".")
        doc.setdefault("client", {}).setdefault(section, {})[key] = value  # librdkafka keys contain dots
    elif head == "client" and rest:  # client.security, client.transactions.messages, ...
        _set_path(doc.setdefault("client", {}), rest, value)
    elif rest:
        _set_path(doc.setdefault(head, {}), rest, value)
    else:
        doc[head] = value


def _impossible(raw: dict[str, Any], cluster: ClusterShape | None) -> tuple[str, str] | None:
    """(field, reason) when the point cannot run at all on this cluster, else None."""
    workload = raw.get("workload", {}) if isinstance(raw.get("workload"), dict) else {}
    rf = workload.get("replication_factor", Workload().replication_factor)
    min_isr = workload.get("min_insync_replicas", Workload().min_insync_replicas)
    if isinstance(rf, int) and isinstance(min_isr, int) and min_isr > rf:
        return ("workload.min_insync_replicas",
                f"min.insync.replicas {min_isr} > replication factor {rf}: every acks=all write would fail")
    if workload.get("eligible_leader_replicas") is True and cluster is not None and cluster.metadata_mode != "kraft":
        return ("workload.eligible_leader_replicas",
                f"Eligible Leader Replicas need a KRaft cluster (Kafka 4.x); this inventory runs {cluster.metadata_mode}, "
                "which has none (allowed here: false or null)")
    client = raw.get("client", {}) if isinstance(raw.get("client"), dict) else {}
    consumer = client.get("consumer", {}) if isinstance(client.get("consumer"), dict) else {}
    if str(consumer.get("group.protocol", "classic")) == "consumer" and cluster is not None \
            and cluster.metadata_mode != "kraft":
        return ("client.consumer.group.protocol",
                f"the consumer group protocol (KIP-848) needs a KRaft cluster (Kafka 4.x); this inventory runs "
                f"{cluster.metadata_mode} (allowed here: classic)")
    security = client.get("security")
    if isinstance(security, str) and cluster is not None and cluster.client_profiles is not None \
            and security not in cluster.client_profiles:
        return ("client.security",
                f"the cluster has no {security} listener (allowed here: {', '.join(cluster.client_profiles)}; "
                f"inventories/local-security-cost has them all)")
    brokers = len(cluster.broker_ids) if cluster else None
    if brokers is not None and isinstance(rf, int) and rf > brokers:
        return ("workload.replication_factor",
                f"replication factor {rf} > {brokers} brokers in the inventory (allowed: 1 to {brokers})")
    return None


def _allowed_here(cluster: ClusterShape, need: str) -> str:
    """The fault kinds this cluster's metadata mode has that do not need `need` (a FaultSpec flag)."""
    return ", ".join(kind for kind, spec in KINDS.items() if not getattr(spec, need) and cluster.metadata_mode in spec.modes)


def hostless_errors(scenario: Scenario, field: str, why: str) -> list[str]:
    """What a scenario asks of the cluster's hosts, on a cluster whose hosts nothing names."""
    need = f"needs an inventory naming the cluster's hosts (--inventory), and {why}"
    errors = [f"{field}faults[{i}].kind: {fault.kind} {need}; allowed here: no faults"
              for i, fault in enumerate(scenario.faults)]
    errors += [f"{field}procedures[{i}].playbook: {procedure.name} {need}; allowed here: no procedures"
               for i, procedure in enumerate(scenario.procedures)]
    if scenario.workload.eligible_leader_replicas is not None:
        errors.append(f"{field}workload.eligible_leader_replicas: setting a feature level {need}; "
                      "allowed here: null (the cluster's level as it is)")
    return errors


def _cluster_errors(run: Run, source: str, cluster: ClusterShape) -> list[str]:
    """Faults this inventory cannot carry out: targets it has no server for, faults that need
    hosts of their own on an inventory that runs every broker on one address."""
    errors = []
    where = f" (sweep point {run.point})" if run.point else ""
    if cluster.no_hosts and run.scenario:
        errors += hostless_errors(run.scenario, f"{source}{where}: scenario.", cluster.no_hosts)
    for index, fault in enumerate(run.scenario.faults if run.scenario and not cluster.no_hosts else []):
        field = f"{source}{where}: scenario.faults[{index}]"
        if cluster.metadata_mode not in fault.modes:
            errors.append(f"{field}.kind: {fault.kind} needs a {' or '.join(sorted(fault.modes))} cluster; this "
                          f"inventory runs {cluster.metadata_mode}, so allowed here: "
                          + ", ".join(kind for kind, spec in KINDS.items() if cluster.metadata_mode in spec.modes))
            continue
        errors += [f"{field}.{name}: {message}" for name, message in fault.inventory_errors(cluster.broker_ids)]
        errors += [f"{field}.{name}: {message}" for name, message in fault.controller_errors(cluster.controller_ids)]
        if fault.needs_netem and cluster.no_netem:
            errors.append(f"{field}.kind: {fault.kind} needs tc netem (the sch_netem kernel module), and "
                          f"{cluster.no_netem}: run it on real hosts or Vagrant VMs; allowed here: "
                          + _allowed_here(cluster, "needs_netem"))
            continue
        if fault.needs_data_disk and cluster.no_data_disk:
            errors.append(f"{field}.kind: {fault.kind} fills a filesystem that holds only Kafka's data, and brokers "
                          f"{', '.join(cluster.no_data_disk)} name none (kafka_bench_fault_disk_mount: its mount point; "
                          "the lab mounts one per host at /var/lib/kafka); allowed here: "
                          + _allowed_here(cluster, "needs_data_disk"))
            continue
        if cluster.hosts < 2 and fault.needs_own_addresses:
            errors.append(f"{field}.kind: {fault.kind} needs brokers on hosts with "
                          "addresses of their own (inventories/lab, Vagrant or real hosts); this inventory "
                          "runs every broker on one address, so allowed here: "
                          + _allowed_here(cluster, "needs_own_addresses"))
    for index, procedure in enumerate(run.scenario.procedures if run.scenario and not cluster.no_hosts else []):
        field = f"{source}{where}: scenario.procedures[{index}]"
        if cluster.not_deployed:
            errors.append(f"{field}.playbook: {procedure.name} runs this project's roles on the hosts, and "
                          f"{cluster.not_deployed}; allowed here: no procedures")
            continue
        errors += [f"{field}.{name}: {message}" for name, message in procedure.cluster_errors(cluster)]
    if run.scenario and cluster.not_deployed and run.scenario.workload.eligible_leader_replicas is not None:
        errors.append(f"{source}{where}: scenario.workload.eligible_leader_replicas: setting a feature level runs "
                      f"this project's roles on the hosts, and {cluster.not_deployed}; allowed here: null")
    return errors

def _with_client(raw: dict[str, Any], source: str) -> dict[str, Any]:
    return {**raw, "client": named_client(raw["client"], source)} if "client" in raw else raw


def parse(doc: Any, source: str = "<scenario>", cluster: ClusterShape | None = None,
          in_suite: bool = False) -> list[Run]:
    """Validate a scenario document and expand its sweep into runs. `cluster` (from the inventory,
    when known) lets targets and replication factors be checked against the brokers there are.
    A sweep point that cannot run is skipped with its reason; a scenario without a sweep that
    cannot run, or a sweep none of whose points can, is an error. `in_suite`: the file is one of a
    suite's, and a procedure that needs another cluster (a migration on a KRaft cluster, an upgrade
    to the release the cluster runs) skips the run with its reason instead."""
    if not isinstance(doc, dict):
        raise ScenarioError(f"{source}: a scenario file must be a mapping with a 'scenario' key")
    try:
        top = ScenarioFile.model_validate(doc)
    except ValidationError as exc:
        raise ScenarioError(_format(exc, source)) from None
    paths = list(top.sweep)
    runs: list[Run] = []
    errors: list[str] = []
    base = {**top.scenario, **top.kraft} if cluster is not None and cluster.metadata_mode == "kraft" else top.scenario
    base = _with_client(base, source)
    if top.kraft:  # the KRaft variant is checked wherever the file is read, not only on a KRaft cluster
        try:
            Scenario.model_validate(_with_client({**top.scenario, **top.kraft}, source))
        except ValidationError as exc:
            errors.append(_format(exc, source + " (its kraft variant)", "scenario."))
    # A client swept over shared profiles is recorded as the clients they stand for.
    sweep = {p: [named_client(v, source, f"sweep.{p}") for v in vs] if p == "client" else vs for p, vs in top.sweep.items()}
    for index, values in enumerate(itertools.product(*(sweep[p] for p in paths))):
        point = dict(zip(paths, values))
        raw = copy.deepcopy(base)
        for path, value in point.items():
            _set_path(raw, path, value)
        swept = str(raw.get("name", "scenario")) if point else None
        if point:
            raw["name"] = f"{swept}-{index:03d}"
        impossible = _impossible(raw, cluster)
        if impossible and not point:
            errors.append(f"{source}: scenario.{impossible[0]}: {impossible[1]}")
            continue
        if impossible:
            runs.append(Run(index=index, point=point, scenario=None, skipped=impossible[1], sweep_of=swept))
            continue
        try:
            runs.append(Run(index=index, point=point, scenario=Scenario.model_validate(raw), sweep_of=swept))
        except ValidationError as exc:
            where = f" (sweep point {point})" if point else ""
            errors.append(_format(exc, source + where, "scenario."))
    if paths and runs and all(r.scenario is None for r in runs):
        reasons = "; ".join(dict.fromkeys(r.skipped or "" for r in runs))
        errors.append(f"{source}: sweep ({', '.join(paths)}): every point is impossible: {reasons}")
    if cluster is not None:
        for position, run in enumerate(runs):
            elsewhere = [f"procedures[{i}].{field}: {message}" for i, procedure in
                         enumerate(run.scenario.procedures if run.scenario else []) for field, message
                         in procedure.cluster_errors(cluster)]
            if in_suite and elsewhere:
                runs[position] = Run(index=run.index, point=run.point, scenario=None, sweep_of=run.sweep_of,
                                     skipped=f"{source}: needs another cluster: {'; '.join(elsewhere)}")
                continue
            errors += _cluster_errors(run, source, cluster)
    if errors:
        raise ScenarioError("\n".join(dict.fromkeys(errors)))
    return runs

def load(path: Path | str, cluster: ClusterShape | None = None, in_suite: bool = False) -> list[Run]:
    path = Path(path)
    return parse(read_file(path), str(path), cluster, in_suite)
