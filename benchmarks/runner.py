"""Execute one benchmark run end to end.

heal -> fresh topic -> effective config -> timeline -> consumers -> open-loop producers with
faults on schedule -> heal -> drain consumers -> final read -> summary from the ledgers.
Faults are always healed: at their heal time, at the end of the run, on Ctrl-C, and (should
this process die) by the next run or `kafka-bench heal`, from the journal.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import random
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import pyarrow.compute as pc
import yaml

from benchmarks import cluster, faults, ledger, load, topics
from benchmarks.ansible import AnsibleRunner, PlaybookRunner
from benchmarks.inventory import ClusterInventory
from benchmarks.scenario import Scenario
from benchmarks.timeline import EventLog, TimelineSampler

# --quick shortens the load of every run to this (the fault playbooks alone take a few seconds).
QUICK_SECONDS = 20.0


@dataclasses.dataclass
class Snapshot:
    """What the progress display shows, twice a second."""

    run_id: str
    phase: str
    elapsed_s: float
    total_s: float
    sent: int
    acked: int
    failed: int
    indeterminate: int
    consumed: dict[str, int]
    active_faults: list[str]


@dataclasses.dataclass
class RunSummary:
    run_id: str
    scenario: str
    description: str
    run_dir: str
    topic: str
    acks: str
    replication_factor: int
    min_insync_replicas: int
    unclean_leader_election: bool
    partitions: int
    message_size: int
    fault: str                 # the scenario's fault schedule in words; "none"
    load_start_ns: int         # first intended send (wall clock, ns)
    measured_from_ns: int      # end of the warm-up
    load_end_ns: int           # last intended send
    sent: int
    acked: int
    failed: int
    indeterminate: int
    acked_lost: int            # acked, absent from the final read of the whole topic
    acked_lost_ids: list[str]  # up to 20 "producer:seq"
    final_read: int            # distinct messages of this run found by the final read
    consumed: dict[str, int]   # distinct messages per consumer group
    throughput_msgs_s: float   # acked messages per second over the whole load phase (warm-up included)
    faults: list[dict[str, Any]]
    valid: bool
    invalid_reasons: list[str]
    live_counters: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _scaled(scenario: Scenario, quick: bool) -> tuple[float, float, float]:
    """(warm-up, duration, factor for fault times) of the run."""
    w = scenario.workload
    if not quick or not scenario.quick or w.duration_s <= QUICK_SECONDS:
        return w.warmup_s, w.duration_s, 1.0
    factor = QUICK_SECONDS / w.duration_s
    return min(w.warmup_s, 1.0), QUICK_SECONDS, factor


def _effective_config(bootstrap: str, topic: str, scenario: Scenario) -> tuple[dict[str, Any], list[str]]:
    """The topic's config as the cluster reports it and the client's, and how they differ from the scenario."""
    import confluent_kafka
    from confluent_kafka.admin import ConfigResource

    admin = cluster.admin_client(bootstrap)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    topic_config = {name: entry.value for name, entry in entries.items()}
    brokers = {}
    for broker_id in sorted(admin.list_topics(timeout=30).brokers):
        res = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
        brokers[str(broker_id)] = {n: e.value for n, e in admin.describe_configs([res])[res].result(timeout=30).items()
                                   if not e.is_sensitive}
    # A just-created topic reaches every broker's metadata cache a little later: ask until the
    # answering broker knows it, or the comparison below would report a difference that is not.
    deadline = time.monotonic() + 30
    while True:
        md = admin.list_topics(topic, timeout=30).topics[topic]
        if (md.partitions and not md.error) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    rf = {len(p.replicas) for p in md.partitions.values()}
    w = scenario.workload
    reasons = []
    if topic_config.get("min.insync.replicas") != str(w.min_insync_replicas):
        reasons.append(f"topic min.insync.replicas is {topic_config.get('min.insync.replicas')}, scenario says {w.min_insync_replicas}")
    if topic_config.get("unclean.leader.election.enable") != str(w.unclean_leader_election).lower():
        reasons.append(f"topic unclean.leader.election.enable is {topic_config.get('unclean.leader.election.enable')}")
    if rf != {w.replication_factor} or len(md.partitions) != w.partitions:
        reasons.append(f"topic has {len(md.partitions)} partitions with RF {sorted(rf)}, scenario says "
                       f"{w.partitions} with RF {w.replication_factor}")
    producer = dict(scenario.client.producer)
    # librdkafka's defaults for what the analysis depends on; the Java client's differ.
    resolved = {"acks": "all", "enable.idempotence": False, **producer}
    if str(resolved.get("enable.idempotence")).lower() == "true" and scenario.client.acks != "all":
        reasons.append(f"enable.idempotence=true needs acks=all, scenario says acks={scenario.client.acks}")
    return {
        "client": {"library": "confluent-kafka", "version": confluent_kafka.version()[0],
                   "librdkafka": confluent_kafka.libversion()[0], "producer": resolved,
                   "consumer": dict(scenario.client.consumer)},
        "topic": topic_config,
        "brokers": brokers,
        "topic_layout": {"partitions": len(md.partitions), "replication_factor": sorted(rf)},
    }, reasons


def _ledger_summary(run_dir: Path) -> dict[str, Any]:
    produced = ledger.read(run_dir / "ledger" / "produce", ledger.PRODUCE_SCHEMA)
    consumed = ledger.read(run_dir / "ledger" / "consume", ledger.CONSUME_SCHEMA)
    outcomes = {o: 0 for o in ("acked", "failed", "indeterminate")}
    for value, count in zip(*pc.value_counts(produced.column("outcome")).flatten()):
        outcomes[value.as_py()] = count.as_py()

    def ids(table, mask=None):
        if mask is not None:
            table = table.filter(mask)
        return set(zip(table.column("producer").to_pylist(), table.column("seq").to_pylist()))

    acked = ids(produced, pc.equal(produced.column("outcome"), "acked"))
    final = ids(consumed, pc.equal(consumed.column("group"), "final-read"))
    groups = {}
    for group in set(consumed.column("group").to_pylist()) - {"final-read"}:
        groups[group] = len(ids(consumed, pc.equal(consumed.column("group"), group)))
    lost = sorted(acked - final)
    return {"sent": produced.num_rows, **outcomes, "acked_lost": len(lost),
            "acked_lost_ids": [f"{p}:{s}" for p, s in lost[:20]], "final_read": len(final), "consumed": groups}


def execute(scenario: Scenario, inventory: ClusterInventory, inventory_path: Path, runner: PlaybookRunner,
            results_root: Path, quick: bool = False, ledger_enabled: bool = True, seed: int | None = None,
            progress: Callable[[Snapshot], None] | None = None) -> RunSummary:
    run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    run_dir = Path(results_root) / f"{run_id}-{scenario.name}"
    run_dir.mkdir(parents=True, exist_ok=False)  # a run never overwrites another
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump(scenario.model_dump(mode="json"), sort_keys=False))
    events = EventLog(run_dir / "events.jsonl", run_id)
    seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    warmup_s, duration_s, factor = _scaled(scenario, quick)
    w = scenario.workload
    bootstrap = inventory.bootstrap_servers
    topic = f"{scenario.topic}-{run_id[-6:]}"
    events.write("run-start", run_id=run_id, scenario=scenario.name, topic=topic, seed=seed, quick=quick,
                 warmup_s=warmup_s, duration_s=duration_s, inventory=str(inventory_path))

    def show(phase: str, elapsed: float = 0.0) -> None:
        if progress:
            progress(Snapshot(run_id, phase, elapsed, warmup_s + duration_s, *_totals(), consumed_now(), active_names()))

    # The run's playbooks keep their ansible-runner artifacts in the run directory.
    if isinstance(runner, AnsibleRunner):
        runner = AnsibleRunner(artifact_root=run_dir / "ansible", verbosity=runner.verbosity)
    ctx = multiprocessing.get_context("spawn")
    counters = ctx.Array("q", load.COUNTERS * (w.producers + sum(g.consumers for g in w.consumer_groups)), lock=False)
    consumers: list[tuple[str, Any, Any, int]] = []  # (group, process, stop event, slot)
    producers: list[Any] = []
    injector = faults.AnsibleFaultInjector(runner, inventory_path)
    active: dict[str, faults.FaultRecord] = {}
    fault_log: list[dict[str, Any]] = []
    worker: list[threading.Thread] = []

    def _totals() -> tuple[int, int, int, int]:
        sums = [0, 0, 0, 0]
        for slot in range(w.producers):
            for i in range(load.COUNTERS):
                sums[i] += counters[slot * load.COUNTERS + i]
        return tuple(sums)  # type: ignore[return-value]

    def consumed_now() -> dict[str, int]:
        out: dict[str, int] = {}
        for group, _, _, slot in consumers:
            out[group] = out.get(group, 0) + counters[slot * load.COUNTERS]
        return out

    def active_names() -> list[str]:
        return [f"{r.kind} {r.reason}" for r in active.values()]

    timeline = None
    start_ns = end_ns = 0
    try:
        show("healing")
        events.write("heal-before-run")
        faults.heal(runner, inventory_path)
        show("creating topic")
        config = {"min.insync.replicas": str(w.min_insync_replicas),
                  "unclean.leader.election.enable": str(w.unclean_leader_election).lower(), **w.topic_config}
        topics.ensure_topic(bootstrap, topic, w.partitions, w.replication_factor, config)
        _wait_for_leaders(inventory, topic, w.partitions)
        effective, invalid = _effective_config(bootstrap, topic, scenario)
        (run_dir / "effective-config.json").write_text(json.dumps(effective, indent=2))

        timeline = TimelineSampler(bootstrap, topic, run_dir / "timeline", run_id=run_id)
        timeline.start()
        slot = w.producers
        for group in w.consumer_groups:
            for member in range(group.consumers):
                stop = ctx.Event()
                args = load.ConsumerArgs(f"c{member}", run_id, group.name, bootstrap, topic,
                                         dict(scenario.client.consumer), str(run_dir / "ledger" / "consume"))
                proc = ctx.Process(target=load.consumer_main, args=(args, counters, slot, stop), daemon=True)
                proc.start()
                consumers.append((group.name, proc, stop, slot))
                slot += 1
        start_ns = time.time_ns() + int(3e9)  # time for the spawned processes to import and connect
        end_ns = start_ns + int((warmup_s + duration_s) * 1e9)
        rate = w.rate / w.producers if w.rate else None
        for index in range(w.producers):
            args = load.ProducerArgs(index, run_id, bootstrap, topic, dict(scenario.client.producer), rate, start_ns,
                                     end_ns, w.message_size, w.keys, str(run_dir / "ledger" / "produce"), ledger_enabled)
            proc = ctx.Process(target=load.producer_main, args=(args, counters, index), daemon=True)
            proc.start()
            producers.append(proc)
        events.write("load-start", start_ns=start_ns, end_ns=end_ns, measured_from_ns=start_ns + int(warmup_s * 1e9))

        schedule = []  # (seconds after start_ns, action, fault index)
        for i, fault in enumerate(scenario.faults):
            schedule.append((warmup_s + fault.at_s * factor, "inject", i))
            if fault.heal_at_s is not None:
                schedule.append((warmup_s + fault.heal_at_s * factor, "heal", i))
        for group in w.consumer_groups:
            if group.kill_one_at_s is not None:
                schedule.append((warmup_s + group.kill_one_at_s * factor, "kill-consumer", group.name))
        schedule.sort(key=lambda item: item[0])
        records: dict[int, faults.FaultRecord] = {}

        def do(action: str, what: Any) -> None:
            if action == "inject":
                fault = scenario.faults[what]
                status = cluster.describe(inventory) if fault.kind != "zookeeper-stop" else None
                busy = frozenset(r.broker_id for r in active.values() if r.broker_id is not None)
                hosts, broker_id, reason = faults.resolve_target(fault.kind, fault.target, inventory, status, topic,
                                                                 rng, exclude=busy)
                record = injector.new_record(fault.kind, hosts, broker_id, reason,
                                             {"fault_ports": fault.ports} if fault.ports else None)
                records[what] = record
                events.write("fault-intent", fault_id=record.fault_id, kind=fault.kind, hosts=list(hosts),
                             broker=broker_id, reason=reason)
                active[record.fault_id] = record
                at = injector.inject(record)
                events.write("fault-injected", fault_id=record.fault_id, at_ns=int(at * 1e9))
                fault_log.append({"fault_id": record.fault_id, "kind": fault.kind, "target": reason, "hosts": list(hosts)})
            elif action == "heal" and what in records:
                record = records[what]
                events.write("fault-heal-start", fault_id=record.fault_id)
                at = injector.revert(record)
                active.pop(record.fault_id, None)
                events.write("fault-healed", fault_id=record.fault_id, at_ns=int(at * 1e9))
            elif action == "kill-consumer":
                victim = next((c for c in consumers if c[0] == what and c[1].is_alive()), None)
                if victim:
                    victim[1].terminate()  # SIGTERM: the member leaves the group, its partitions move
                    events.write("consumer-killed", group=what, pid=victim[1].pid)

        while any(p.is_alive() for p in producers):
            elapsed = (time.time_ns() - start_ns) / 1e9
            if schedule and elapsed >= schedule[0][0] and not (worker and worker[-1].is_alive()):
                _, action, what = schedule.pop(0)
                thread = threading.Thread(target=do, args=(action, what), name=f"fault-{action}", daemon=True)
                thread.start()
                worker.append(thread)
            phase = "warm-up" if elapsed < warmup_s else "measuring" if elapsed < warmup_s + duration_s else "flushing"
            show(phase if elapsed >= 0 else "starting", max(0.0, elapsed))
            time.sleep(0.25)
        for thread in worker:
            thread.join()
        for proc in producers:
            proc.join(5)
        for index, proc in enumerate(producers):
            if proc.exitcode:  # a crashed producer's messages are missing from the ledger: say so
                how = f"signal {-proc.exitcode}" if proc.exitcode < 0 else f"code {proc.exitcode}"
                invalid.append(f"producer {index} exited with {how}")
        events.write("load-end", producers=load.producer_meta(run_dir / "ledger" / "produce"))
    finally:
        for thread in worker:
            thread.join(300)
        for proc in producers:
            if proc.is_alive():
                proc.kill()
        show("healing")
        events.write("heal-after-run")
        faults.heal(runner, inventory_path)
        active.clear()
        events.write("healed")

    try:
        acked = _totals()[1]
        deadline = time.monotonic() + 30
        while consumers and time.monotonic() < deadline and min(consumed_now().values(), default=acked) < acked:
            show("draining consumers")
            time.sleep(0.5)
        show("final read")
        events.write("final-read-start")
        ends = load.final_read(bootstrap, topic, run_id, run_dir / "ledger" / "consume")
        events.write("final-read-end", end_offsets=ends)
    finally:
        for _, proc, stop, _ in consumers:
            stop.set()
        for _, proc, _, _ in consumers:
            proc.join(15)
            if proc.is_alive():
                proc.kill()
        if timeline:
            timeline.stop()

    runner.run("collect-logs.yml", inventory_path, extravars={"collect_logs_dest": str(run_dir / "logs")})
    ids = {f["fault_id"] for f in fault_log}
    with open(run_dir / "fault-journal.jsonl", "w", encoding="utf-8") as handle:
        for entry in injector.journal.entries():
            if entry["fault_id"] in ids:
                handle.write(json.dumps(entry) + "\n")
    counts = _ledger_summary(run_dir)
    sent, acked_live, failed, indeterminate = _totals()
    summary = RunSummary(
        run_id=run_id, scenario=scenario.name, description=scenario.description, run_dir=str(run_dir), topic=topic, acks=scenario.client.acks,
        replication_factor=w.replication_factor, min_insync_replicas=w.min_insync_replicas,
        unclean_leader_election=w.unclean_leader_election, partitions=w.partitions, message_size=w.message_size,
        fault=scenario.fault_label, load_start_ns=start_ns, measured_from_ns=start_ns + int(warmup_s * 1e9),
        load_end_ns=end_ns, sent=counts["sent"], acked=counts["acked"], failed=counts["failed"], indeterminate=counts["indeterminate"],
        acked_lost=counts["acked_lost"], acked_lost_ids=counts["acked_lost_ids"], final_read=counts["final_read"],
        consumed=counts["consumed"], throughput_msgs_s=counts["acked"] / (warmup_s + duration_s),
        faults=fault_log, valid=not invalid, invalid_reasons=invalid,
        live_counters={"sent": sent, "acked": acked_live, "failed": failed, "indeterminate": indeterminate},
    )
    (run_dir / "summary.json").write_text(json.dumps(summary.to_dict(), indent=2))
    return summary


def _wait_for_leaders(inventory: ClusterInventory, topic: str, partitions: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        parts = cluster.describe(inventory).topic(topic)
        if len(parts) == partitions and all(p.leader is not None for p in parts):
            return
        time.sleep(0.5)
    raise RuntimeError(f"topic {topic} has partitions without a leader after {timeout:.0f} s")
