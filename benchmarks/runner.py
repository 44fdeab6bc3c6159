"""Execute one benchmark run end to end.

heal -> fresh topic -> effective config -> timeline -> consumers -> open-loop producers with
faults on schedule -> heal -> drain consumers -> final read -> summary from the ledgers.
Faults are always healed: at their heal time, at the end of the run, on Ctrl-C, and (should
this process die) by the next run or `kafka-bench heal`, from the journal.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import multiprocessing
import random
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import yaml

from benchmarks import cluster, faults, ledger, load, steady, topics
from benchmarks.ansible import AnsibleRunner, PlaybookRunner
from benchmarks.inventory import ClusterInventory
from benchmarks.scenario import Scenario
from benchmarks.timeline import EventLog, TimelineSampler
from benchmarks.wait import WaitTimeout, wait_until

# --quick shortens the load of every run to this (the fault playbooks alone take a few seconds).
QUICK_SECONDS = 20.0
# After the last scheduled step (a fault injected or healed, a consumer killed) has acted, the
# load goes on at least this long, so what the step did is seen under load: a fault that acts
# late is not cut off by the end of the load, also in --quick runs.
OBSERVE_S = 10.0
# Fault playbooks start this long before their scheduled time and the host waits for the
# moment itself: Ansible's start-up (seconds on a loaded machine) would otherwise delay them.
FAULT_LEAD_S = 10.0


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
    fault_schedule: list[dict[str, Any]]  # the same as data: kind, target (words), at_s, heal_at_s
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
    def known() -> Any:
        md = admin.list_topics(topic, timeout=30).topics[topic]
        return md if md.partitions and not md.error else None

    try:
        md = wait_until(known, 30, interval_s=0.2, what=f"the brokers to know {topic}")
    except WaitTimeout:  # compare with whatever the cluster says: the reasons below name it
        md = admin.list_topics(topic, timeout=30).topics[topic]
    rf = {len(p.replicas) for p in md.partitions.values()}
    w = scenario.workload
    reasons = []
    if topic_config.get("min.insync.replicas") != str(w.min_insync_replicas):
        reasons.append(f"topic min.insync.replicas is {topic_config.get('min.insync.replicas')}, "
                       f"scenario says {w.min_insync_replicas}")
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
            total_s = max(warmup_s + duration_s, (load_end.value - start_ns) / 1e9 if load_end.value else 0.0)
            progress(Snapshot(run_id, phase, elapsed, total_s, *_totals(), consumed_now(), active_names()))

    # The run's playbooks keep their ansible-runner artifacts in the run directory.
    if isinstance(runner, AnsibleRunner):
        runner = AnsibleRunner(artifact_root=run_dir / "ansible", verbosity=runner.verbosity)
    ctx = multiprocessing.get_context("spawn")
    counters = ctx.Array("q", load.COUNTERS * (w.producers + sum(g.consumers for g in w.consumer_groups)), lock=False)
    load_end = ctx.Value("q", 0, lock=False)  # when the producers stop (ns); moved later while steps are due
    schedule: list[tuple[float, str, Any]] = []  # (seconds after start_ns, action, fault index or group)
    schedule_lock = threading.Lock()
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
        show("waiting for a recovered cluster")
        steady.ensure_internal_topics(bootstrap)
        events.write("cluster-recovered", waited_s=round(steady.wait_recovered(inventory), 3))
        show("creating topic")
        config = {"min.insync.replicas": str(w.min_insync_replicas),
                  "unclean.leader.election.enable": str(w.unclean_leader_election).lower(), **w.topic_config}
        topics.ensure_topic(bootstrap, topic, w.partitions, w.replication_factor, config)
        _wait_fully_replicated(inventory, topic, w.partitions)
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
        # Warm-up with the consumer groups already reading (they fetch the warm-up's untagged
        # messages and skip them): the whole path is exercised before the schedule starts.
        show("waiting for the consumer groups")
        try:
            wait_until(lambda: all(counters[s * load.COUNTERS + load.JOINED] for _, _, _, s in consumers), 60,
                       what="every consumer to be assigned its partitions")
        except WaitTimeout as exc:
            invalid.append(f"{exc} before the run")
        show("warming the produce path")
        warm = steady.warm_produce_path(bootstrap, topic, dict(scenario.client.producer), w.rate)
        events.write("produce-path-warm", **warm.to_dict())
        if not warm.settled:
            invalid.append(f"the produce path did not settle before the run: p99 per second "
                           f"{warm.window_p99_ms} ms over {warm.seconds:.0f} s")
        start_ns = time.time_ns() + int(3e9)  # time for the spawned processes to import and connect
        end_ns = start_ns + int((warmup_s + duration_s) * 1e9)
        rate = w.rate / w.producers if w.rate else None
        load_end.value = end_ns
        for index in range(w.producers):
            produce = load.ProducerArgs(index, run_id, bootstrap, topic, dict(scenario.client.producer), rate,
                                        start_ns, end_ns, w.message_size, w.keys, str(run_dir / "ledger" / "produce"),
                                        ledger_enabled)
            proc = ctx.Process(target=load.producer_main, args=(produce, counters, index, load_end), daemon=True)
            proc.start()
            producers.append(proc)
        events.write("load-start", start_ns=start_ns, end_ns=end_ns, measured_from_ns=start_ns + int(warmup_s * 1e9))

        for i, fault in enumerate(scenario.faults):  # heals are scheduled when their injection has acted
            schedule.append((warmup_s + fault.at_s * factor, "inject", i))
        for group in w.consumer_groups:
            if group.kill_one_at_s is not None:
                schedule.append((warmup_s + group.kill_one_at_s * factor, "kill-consumer", group.name))
        schedule.sort(key=lambda item: item[0])
        records: dict[int, faults.FaultRecord] = {}

        def do(action: str, what: Any, due_ns: int) -> None:
            if action == "inject":
                fault = scenario.faults[what]
                status = cluster.describe(inventory, services=False) if fault.kind != "zookeeper-stop" else None
                busy = frozenset(r.broker_id for r in active.values() if r.broker_id is not None)
                hosts, broker_id, reason = faults.resolve_target(fault.kind, fault.target, inventory, status, topic,
                                                                 rng, exclude=busy)
                record = injector.new_record(fault.kind, hosts, broker_id, reason,
                                             {"fault_ports": fault.ports} if fault.ports else None)
                records[what] = record
                events.write("fault-intent", fault_id=record.fault_id, kind=fault.kind, hosts=list(hosts),
                             broker=broker_id, reason=reason, scheduled_ns=due_ns)
                active[record.fault_id] = record
                at = injector.inject(record, not_before_ns=due_ns)
                events.write("fault-injected", fault_id=record.fault_id, at_ns=int(at * 1e9))
                if fault.heal_at_s is not None:  # the fault lasts as planned from when it acted, however late
                    with schedule_lock:
                        schedule.append(((int(at * 1e9) - start_ns) / 1e9 + (fault.heal_at_s - fault.at_s) * factor,
                                         "heal", what))
                        schedule.sort(key=lambda item: item[0])
                fault_log.append({"fault_id": record.fault_id, "kind": fault.kind, "target": reason, "hosts": list(hosts)})
            elif action == "heal" and what in records:
                record = records[what]
                events.write("fault-heal-start", fault_id=record.fault_id, scheduled_ns=due_ns)
                at = injector.revert(record, not_before_ns=due_ns)
                active.pop(record.fault_id, None)
                events.write("fault-healed", fault_id=record.fault_id, at_ns=int(at * 1e9))
            elif action == "kill-consumer":
                victim = next((c for c in consumers if c[0] == what and c[1].is_alive()), None)
                if victim:
                    victim[1].terminate()  # SIGTERM: the member leaves the group, its partitions move
                    events.write("consumer-killed", group=what, pid=victim[1].pid)

        def do_or_invalidate(action: str, what: Any, due_ns: int) -> None:
            """A step that fails invalidates the run, with the reason, instead of ending the thread unseen."""
            try:
                do(action, what, due_ns)
            except Exception as exc:  # whatever failed, the run must say it
                step = f"faults[{what}] ({scenario.faults[what].kind})" if action in ("inject", "heal") else \
                    f"kill-consumer ({what})"
                reason = f"{step} {action} failed: {exc}"
                invalid.append(reason)
                events.write("schedule-step-failed", action=action, step=step, error=str(exc))

        while any(p.is_alive() for p in producers):
            now_ns = time.time_ns()
            elapsed = (now_ns - start_ns) / 1e9
            if schedule or any(t.is_alive() for t in worker):  # steps to come or under way:
                load_end.value = max(load_end.value, now_ns + int(OBSERVE_S * 1e9))  # the load goes on
            # One step at a time, in the order of their times: a step resolves its target only
            # once every earlier step has acted, so two faults never pick the same broker and a
            # leader_of target sees what the faults before it did. A fault playbook starts
            # FAULT_LEAD_S before its time and the host waits for the moment itself.
            with schedule_lock:
                step = schedule[0] if schedule and not any(t.is_alive() for t in worker) else None
                lead = FAULT_LEAD_S if step and step[1] in ("inject", "heal") else 0.0
                if step and elapsed >= step[0] - lead:
                    schedule.pop(0)
                else:
                    step = None
            if step:
                at_s, action, what = step
                thread = threading.Thread(target=do_or_invalidate, args=(action, what, start_ns + int(at_s * 1e9)),
                                          name=f"fault-{action}", daemon=True)
                thread.start()
                worker.append(thread)
            total_s = (load_end.value - start_ns) / 1e9
            phase = "warm-up" if elapsed < warmup_s else "measuring" if elapsed < total_s else "flushing"
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
        end_ns = load_end.value
        events.write("load-end", end_ns=end_ns, producers=load.producer_meta(run_dir / "ledger" / "produce"))
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

        def drained() -> bool:
            show("draining consumers")
            return min(consumed_now().values(), default=acked) >= acked

        if consumers:  # what they have not read by then, the final read and the checker account for
            with contextlib.suppress(WaitTimeout):
                wait_until(drained, 30, interval_s=0.5, what="the consumer groups to read every acked message")
        show("final read")
        events.write("final-read-start")
        ends = load.final_read(bootstrap, topic, run_id, run_dir / "ledger" / "consume")
        events.write("final-read-end", end_offsets=ends)
    finally:
        for _, _, stop, _ in consumers:
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
        run_id=run_id, scenario=scenario.name, description=scenario.description, run_dir=str(run_dir), topic=topic,
        acks=scenario.client.acks,
        replication_factor=w.replication_factor, min_insync_replicas=w.min_insync_replicas,
        unclean_leader_election=w.unclean_leader_election, partitions=w.partitions, message_size=w.message_size,
        fault=scenario.fault_label, fault_schedule=[f.schedule_entry() for f in scenario.faults],
        load_start_ns=start_ns, measured_from_ns=start_ns + int(warmup_s * 1e9),
        load_end_ns=end_ns, sent=counts["sent"], acked=counts["acked"], failed=counts["failed"],
        indeterminate=counts["indeterminate"],
        acked_lost=counts["acked_lost"], acked_lost_ids=counts["acked_lost_ids"], final_read=counts["final_read"],
        consumed=counts["consumed"], throughput_msgs_s=counts["acked"] / ((end_ns - start_ns) / 1e9),
        faults=fault_log, valid=not invalid, invalid_reasons=invalid,
        live_counters={"sent": sent, "acked": acked_live, "failed": failed, "indeterminate": indeterminate},
    )
    (run_dir / "summary.json").write_text(json.dumps(summary.to_dict(), indent=2))
    return summary


def _wait_fully_replicated(inventory: ClusterInventory, topic: str, partitions: int, timeout: float = 60) -> None:
    """Every partition of the new topic led, with all its replicas in sync."""
    def ready() -> bool:
        parts = cluster.describe(inventory, services=False).topic(topic)
        return len(parts) == partitions and all(p.leader is not None and not p.under_replicated for p in parts)

    try:
        wait_until(ready, timeout, what=f"every partition of {topic} led and fully replicated")
    except WaitTimeout as exc:
        raise steady.NotSteady(str(exc)) from None
