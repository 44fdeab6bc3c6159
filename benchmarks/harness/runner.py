"""Execute one benchmark run end to end.

heal -> fresh topic -> effective config -> timeline -> consumers -> open-loop producers with
faults on schedule -> heal -> drain consumers -> final read -> summary from the ledgers (the steps
from the heal after the load on are benchmarks.harness.run_end's).
Faults are always healed: at their heal time, at the end of the run, on Ctrl-C, and (should
this process die) by the next run or `kafka-bench heal`, from the journal.

A run's calls to Kafka retry what the brokers answer "not yet" (benchmarks.harness.retry). Any other
error of a step ends the run, not the suite: the run is invalid with the step and the error
named (its traceback in error.txt), its faults are healed, what its load wrote is read back,
and summary.json is written all the same.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from benchmarks.core.connection import Connection
from benchmarks.core.wait import WaitTimeout, wait_until
from benchmarks.harness import (
    effective,
    faults,
    features,
    java_load,
    load,
    retry,
    run_end,
    run_summary,
    schedule,
    steady,
    transactions,
)
from benchmarks.harness.run_state import Run, Snapshot
from benchmarks.harness.timeline import TimelineSampler
from benchmarks.harness.workers import LoadProcesses
from benchmarks.hosts import clocks, host_probe
from benchmarks.hosts.ansible import AnsibleRunner, PlaybookRunner
from benchmarks.hosts.inventory import ClusterInventory
from benchmarks.kafka import cluster, topics
from benchmarks.record import records, run_events
from benchmarks.record.event_log import EventLog
from benchmarks.spec.fault_spec import FaultSpec
from benchmarks.spec.fault_targets import Situation
from benchmarks.spec.scenario import Scenario, hostless_errors

# --quick shortens the load of every run to this (the fault playbooks alone take a few seconds).
QUICK_SECONDS = 20.0
# After the last scheduled step (a fault injected or healed, a consumer killed) has acted, the
# load goes on at least this long, so what the step did is seen under load: a fault that acts
# late is not cut off by the end of the load, also in --quick runs.
OBSERVE_S = 10.0


def scaled(scenario: Scenario, quick: bool) -> tuple[float, float, float]:
    """(warm-up, duration, factor for fault times) of the run."""
    w = scenario.workload
    if not quick or not scenario.quick or w.duration_s <= QUICK_SECONDS:
        return w.warmup_s, w.duration_s, 1.0
    factor = QUICK_SECONDS / w.duration_s
    return min(w.warmup_s, 1.0), QUICK_SECONDS, factor


def execute(scenario: Scenario, inventory: ClusterInventory, inventory_path: Path, runner: PlaybookRunner,
            results_root: Path, quick: bool = False, ledger_enabled: bool = True, seed: int | None = None,
            progress: Callable[[Snapshot], None] | None = None, trial: int = 1,
            conn: Connection | None = None, sweep: tuple[str, dict[str, Any]] | None = None,
            keep_topic: bool = False) -> records.RunSummary:
    """Heal, wait for a recovered cluster, create the topic, warm up, drive the load with the
    steps on schedule, heal, read everything back, and write summary.json. `trial`: which of
    the scenario's `trials` this run is (each on a topic of its own). `conn`: how clients reach
    the cluster (default: the inventory's client settings for the scenario's client.security).
    `sweep`: the scenario this run is a point of, and the point (scenario.Run.sweep). The run's topic
    is deleted at the end unless `keep_topic`."""
    if not 1 <= trial <= scenario.trials:
        raise ValueError(f"trial {trial} is not one of the scenario's 1 to {scenario.trials}")
    hostless = hostless_errors(scenario, "scenario.", "this cluster is known only by its bootstrap address")
    if inventory.given is not None and hostless:
        raise ValueError("; ".join(hostless))
    conn = conn or inventory.connection(scenario.client.security)
    run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    numbered = f"-trial{trial:03d}" if scenario.trials > 1 else ""
    run_dir = Path(results_root) / f"{run_id}-{scenario.name}{numbered}"
    run_dir.mkdir(parents=True, exist_ok=False)  # a run never overwrites another
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump(scenario.model_dump(mode="json"), sort_keys=False))
    seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
    warmup_s, duration_s, factor = scaled(scenario, quick)
    topic = f"{scenario.topic}-{run_id[-6:]}"
    if isinstance(runner, AnsibleRunner):  # the run's playbooks keep their artifacts in the run directory
        runner = AnsibleRunner(artifact_root=run_dir / "ansible", verbosity=runner.verbosity)
    run = Run(scenario, inventory, inventory_path, runner, run_id, run_dir, topic, EventLog(run_dir / "events.jsonl", run_id),
              random.Random(seed), warmup_s, duration_s, factor, progress,
              LoadProcesses(scenario, run_id, conn, topic, run_dir, ledger_enabled, seed), conn, trial=trial,
              sweep=sweep)
    run.retrier = retry.Retrier(record=run.events.write)
    run.runner = retry.RetryingRunner(run.runner, run.retrier, step=lambda: run.step)
    run.events.write(run_events.RunStart(scenario=scenario.name, topic=topic, seed=seed, quick=quick, warmup_s=warmup_s,
                                         duration_s=duration_s, inventory=str(inventory_path), trial=trial,
                                         trials=scenario.trials))
    timelines: list[TimelineSampler] = []

    def start_timeline(run: Run) -> None:
        timelines.append(run.retrier.call(run.step, "make the timeline's clients", lambda: TimelineSampler(
            run.conn, topic, run_dir / "timeline", run_id=run_id,
            kraft=cluster.KRaftProbe.of(inventory) if inventory.kraft else None,
            last_stable=scenario.client.transactions is not None), retry.CALL_RETRY_S))
        timelines[0].start()

    try:
        try:
            for step, body in (("prepare", _prepare), ("timeline", start_timeline), ("warm-up", _warm_up),
                               ("load", _drive)):
                if not run.stage(step, body):
                    break
        finally:  # also on Ctrl-C
            run.stage("heal", run_end.heal_after)
        if run.start_ns:  # a load started: what it wrote is read back, whatever failed since
            run.stage("final read", run_end.read_back)
    finally:
        run.stage("stop consumers", lambda run: run.workers.stop_consumers())
        if timelines:
            run.stage("stop the timeline", lambda run: timelines[0].stop())
    run.stage("collect", run_end.collect)
    if not keep_topic:
        run_end.delete_topic(run)
    return run_summary.summarize(run)


def _prepare(run: Run) -> None:
    """Heal what came before, wait for a recovered cluster, create the run's topic, record the
    effective configuration (differences invalidate the run)."""
    w = run.scenario.workload
    if run.inventory.given is None:
        run.show("healing")
        run.events.write(run_events.HealBeforeRun())
        run_end.heal(run)
    run.show("waiting for a recovered cluster")
    run.retrier.call(run.step, "create the internal topics", lambda: steady.ensure_internal_topics(run.conn),
                     retry.CALL_RETRY_S)
    run.events.write(run_events.ClusterRecovered(waited_s=round(_wait_recovered(run), 3)))
    want = features.wanted(w, run.inventory.metadata_mode)
    if want:
        run.show("finalizing feature levels")
        for event in features.finalize(run.inventory, run.inventory_path, run.runner, want):
            run.events.write(event)
    if run.scenario.faults:
        run.show("reading the hosts' clocks")
        hosts = list(dict.fromkeys([b.name for b in run.inventory.brokers] + [c.name for c in run.inventory.controllers]
                                   + [z.name for z in run.inventory.zookeepers]))
        run.offsets = clocks.measure(run.inventory_path, hosts)
        run.events.write(run_events.ClockOffsets(hosts=[run_events.HostClock(**dataclasses.asdict(o))
                                                        for o in run.offsets.values()]))
    if run.scenario.client.producer_library == "java":
        java_load.ensure_installed(run.runner, run.inventory_path)
    run.show("creating topic")
    config = {"min.insync.replicas": str(w.min_insync_replicas),
              "unclean.leader.election.enable": str(w.unclean_leader_election).lower(), **w.topic_config}
    run.retrier.call(run.step, f"create {run.topic}", lambda: topics.ensure_topic(
        run.conn, run.topic, w.partitions, w.replication_factor, config), retry.CALL_RETRY_S)
    _wait_fully_replicated(run, w.partitions)
    found = run.retrier.call(run.step, "read the effective configuration",
                             lambda: effective.read(run.conn, run.topic, run.scenario, run.inventory), retry.CALL_RETRY_S)
    run.invalid = effective.differences(found, run.scenario)
    if run.inventory.kraft:
        run.eligible_leader_replicas = found.cluster.eligible_leader_replicas
    if want and run.eligible_leader_replicas != w.eligible_leader_replicas:
        level = found.cluster.finalized_features.get(features.ELR, "unknown")
        run.invalid.append(f"{features.ELR} is {level} on the brokers, scenario says "
                           f"eligible_leader_replicas {str(w.eligible_leader_replicas).lower()}")
    (run.run_dir / "effective-config.json").write_text(json.dumps(found.to_dict(), indent=2))


def _wait_recovered(run: Run) -> float:
    """Seconds waited for a recovered cluster. One known only by its bootstrap address (nobody
    here owns its other topics) must have every node up; its partitions are not waited for, and
    no leader of it is moved."""
    if run.inventory.given is None:
        return steady.wait_recovered(run.inventory, conn=run.conn)
    return steady.wait_recovered(run.inventory, conn=run.conn, elect=lambda topic, parts: None, describe=lambda: (
        dataclasses.replace(cluster.describe(run.inventory, conn=run.conn), partitions=())))


def _warm_up(run: Run) -> None:
    """Consumer groups reading (they skip the warm-up's untagged messages), then the produce
    path warmed until its ack latency is stable: the whole path is exercised before the schedule."""
    run.workers.start_consumers()
    run.show("waiting for the consumer groups")
    try:
        wait_until(run.workers.consumers_joined, 60, what="every consumer to be assigned its partitions")
    except WaitTimeout as exc:
        run.invalid.append(f"{exc} before the run")
    run.show("warming the produce path")
    w = run.scenario.workload
    warm = steady.warm_produce_path(run.conn, run.topic, dict(run.scenario.client.producer), w.rate, w.keys)
    run.events.write(run_events.ProducePathWarm(**warm.to_dict()))
    run.warm_p50_ms = warm.p50_ms
    if not warm.settled:
        last = warm.windows[-steady.SETTLE_WINDOWS:]
        run.invalid.append(f"the produce path did not settle in {warm.seconds:.0f} s before the run: in its last "
                           f"seconds {[x.acked for x in last]} acks for {[x.sent for x in last]} sends, "
                           f"p99 {[x.p99_ms for x in last]} ms")


def _drive(run: Run) -> None:
    """The open-loop producers and the scheduled steps; the load goes on until every step has
    acted and been watched for OBSERVE_S."""
    w = run.scenario.workload
    # The brokers' CPU (over SSH on hosts of their own), read before the clock of the load starts.
    cpu_before = host_probe.broker_cpu(run.inventory, run.remote)
    run.start_ns = time.time_ns() + int(run.workers.start_lead_s * 1e9)
    end_ns = run.start_ns + int((run.warmup_s + run.duration_s) * 1e9)
    run.workers.start_producers(run.start_ns, end_ns)
    run.events.write(run_events.LoadStart(start_ns=run.start_ns, end_ns=end_ns,
                                          measured_from_ns=run.start_ns + int(run.warmup_s * 1e9)))

    def situation(fault: FaultSpec, busy: frozenset[int]) -> Situation:
        transactional = run.scenario.client.transactions is not None  # its coordinator may be the target
        status = (cluster.describe(run.inventory, services=False, include_internal=transactional,
                                   read_quorum=fault.reads_quorum, ask_last=busy) if fault.reads_cluster else None)
        return Situation(run.inventory, status, run.topic, run.rng, busy,
                         transactions.transactional_id(run.run_id, 0) if transactional else None)

    kills = [(g.name, g.kill_one_at_s) for g in w.consumer_groups if g.kill_one_at_s is not None]
    plan = schedule.Plan(run.scenario.injections(), run.warmup_s, run.factor, run.start_ns, consumer_kills=kills,
                         procedures=run.scenario.procedures, topic=run.topic,
                         max_brokers_down=run.scenario.max_brokers_down)
    hands = schedule.Hands(
        faults.AnsibleFaultInjector(run.runner, run.inventory_path, run.journal, offsets=run.offsets), run.events,
        situation, run.workers.kill_one_consumer,
        run_playbook=lambda playbook, progress, extravars: run.runner.run(playbook, run.inventory_path, extravars,
                                                                          progress=progress),
        recovery_problems=lambda: _recovery_problems(run.inventory))
    run.steps = steps = schedule.Controller(plan, hands)
    try:
        while run.workers.producing():
            now_ns = time.time_ns()
            if steps.pending():
                run.workers.extend_load(now_ns + int(OBSERVE_S * 1e9))
            steps.start_due(now_ns)
            elapsed = (now_ns - run.start_ns) / 1e9
            total_s = (run.workers.end_ns - run.start_ns) / 1e9
            phase = "warm-up" if elapsed < run.warmup_s else "measuring" if elapsed < total_s else "flushing"
            run.show(phase if elapsed >= 0 else "starting", max(0.0, elapsed))
            time.sleep(0.25)
        steps.join()
        run.invalid += steps.invalid + run.workers.join_producers()
    finally:
        steps.join(300)
        run.workers.kill_producers()
    run.broker_cpu_s = host_probe.cpu_used(cpu_before, host_probe.broker_cpu(run.inventory, run.remote))
    run.events.write(run_events.LoadEnd(end_ns=run.workers.end_ns,
                                        producers=load.producer_meta(run.run_dir / "ledger" / "produce")))


def _recovery_problems(inventory: ClusterInventory) -> list[str]:
    """What keeps the cluster from having recovered now (nothing: it has)."""
    try:
        return cluster.describe(inventory).problems()
    except cluster.ClusterUnreachable as exc:
        return [str(exc)]


def _wait_fully_replicated(run: Run, partitions: int, timeout: float = 60) -> None:
    """Every partition of the new topic led, with all its replicas in sync."""
    def ready() -> bool:
        status = run.retrier.call(run.step, "describe the cluster", lambda: cluster.describe(
            run.inventory, services=False), retry.CALL_RETRY_S)
        parts = status.topic(run.topic)
        return len(parts) == partitions and all(p.leader is not None and not p.under_replicated for p in parts)

    try:
        wait_until(ready, timeout, what=f"every partition of {run.topic} led and fully replicated")
    except WaitTimeout as exc:
        raise steady.NotSteady(str(exc)) from None


RunSummary = records.RunSummary  # the run's record, as the commands and tests name it
