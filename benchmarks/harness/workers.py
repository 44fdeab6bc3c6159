"""A run's load processes (producers and consumer-group members) and their live counters.

Each process is spawned (its own interpreter, so no GIL is shared) and writes its own ledger;
the counters are one shared array the runner reads for progress: per producer sent, acked,
failed, indeterminate; per consumer consumed and joined (load.COUNTERS slots each). The end of
the load is a shared value the runner may move later while scheduled steps are under way.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

from benchmarks.core.connection import Connection
from benchmarks.harness import java_load, load, producer, transactions
from benchmarks.spec.scenario import Scenario


class LoadProcesses:
    def __init__(self, scenario: Scenario, run_id: str, conn: Connection, topic: str, run_dir: Path,
                 ledger_enabled: bool = True, seed: int = 0) -> None:
        self.scenario, self.run_id, self.conn, self.topic = scenario, run_id, conn, topic
        self.seed = seed  # the run's: a transactional producer's commit / abort draws follow from it
        self.run_dir, self.ledger_enabled = run_dir, ledger_enabled
        w = scenario.workload
        self.ctx = multiprocessing.get_context("spawn")
        self.counters: Any = self.ctx.Array("q", load.COUNTERS * (w.producers + sum(g.consumers for g in w.consumer_groups)),
                                            lock=False)
        self._end: Any = self.ctx.Value("q", 0, lock=False)  # when the producers stop (ns)
        self.producers: list[Any] = []
        self.consumers: list[tuple[str, Any, Any, int]] = []  # (group, process, stop event, slot)

    # ------------------------------------------------------------------ consumers

    def start_consumers(self) -> None:
        w, slot = self.scenario.workload, self.scenario.workload.producers
        for group in w.consumer_groups:
            for member in range(group.consumers):
                stop = self.ctx.Event()
                args = load.ConsumerArgs(f"c{member}", self.run_id, group.name, self.conn, self.topic,
                                         dict(self.scenario.client.consumer), str(self.run_dir / "ledger" / "consume"))
                proc = self.ctx.Process(target=load.consumer_main, args=(args, self.counters, slot, stop), daemon=True)
                proc.start()
                self.consumers.append((group.name, proc, stop, slot))
                slot += 1

    def consumers_joined(self) -> bool:
        """Every member has been assigned its partitions (or none) by its group."""
        return all(self.counters[s * load.COUNTERS + load.JOINED] for _, _, _, s in self.consumers)

    def consumed(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for group, _, _, slot in self.consumers:
            out[group] = out.get(group, 0) + self.counters[slot * load.COUNTERS]
        return out

    def kill_one_consumer(self, group: str) -> int | None:
        """SIGTERM one live member of `group` (it leaves the group, its partitions move); its pid."""
        victim = next((c for c in self.consumers if c[0] == group and c[1].is_alive()), None)
        if victim is None:
            return None
        victim[1].terminate()
        return victim[1].pid

    def stop_consumers(self, timeout_s: float = 15.0) -> None:
        for _, _, stop, _ in self.consumers:
            stop.set()
        for _, proc, _, _ in self.consumers:
            proc.join(timeout_s)
            if proc.is_alive():
                proc.kill()

    # ------------------------------------------------------------------ producers

    def start_producers(self, start_ns: int, end_ns: int) -> None:
        w = self.scenario.workload
        rate = w.rate / w.producers if w.rate else None
        self._end.value = end_ns
        t = self.scenario.client.transactions
        txn = transactions.TransactionArgs(t.messages, t.abort_ratio, t.timeout_ms, self.seed) if t else None
        for index in range(w.producers):
            args = load.ProducerArgs(index, self.run_id, self.conn, self.topic, dict(self.scenario.client.producer),
                                     rate, start_ns, end_ns, w.message_size, w.keys,
                                     str(self.run_dir / "ledger" / "produce"), self.ledger_enabled, transactions=txn)
            main = java_load.producer_main if self.scenario.client.producer_library == "java" else producer.producer_main
            proc = self.ctx.Process(target=main, args=(args, self.counters, index, self._end), daemon=True)
            proc.start()
            self.producers.append(proc)

    @property
    def start_lead_s(self) -> float:
        """Time the producers are given before their first intended send, to start and connect: a
        Python interpreter importing the client, or a JVM loading Kafka's (and, transactional, its
        init_transactions), on a machine the brokers share."""
        return 8.0 if self.scenario.client.producer_library == "java" else 3.0

    @property
    def end_ns(self) -> int:
        """When the producers stop intending messages (0 before they start)."""
        return int(self._end.value)

    def extend_load(self, until_ns: int) -> None:
        """Have the producers go on at least until `until_ns` (never earlier than already set)."""
        self._end.value = max(self._end.value, until_ns)

    def producing(self) -> bool:
        return any(p.is_alive() for p in self.producers)

    def join_producers(self, timeout_s: float = 5.0) -> list[str]:
        """Wait for the producers; what a crashed one means for the run (its messages are missing
        from the ledger), as reasons to invalidate it."""
        reasons = []
        for index, proc in enumerate(self.producers):
            proc.join(timeout_s)
            if proc.exitcode:
                how = f"signal {-proc.exitcode}" if proc.exitcode < 0 else f"code {proc.exitcode}"
                reasons.append(f"producer {index} exited with {how}")
        return reasons

    def kill_producers(self) -> None:
        for proc in self.producers:
            if proc.is_alive():
                proc.kill()

    def totals(self) -> tuple[int, int, int, int]:
        """(sent, acked, failed, indeterminate) over every producer, as they last published them."""
        sums = [0, 0, 0, 0]
        for slot in range(self.scenario.workload.producers):
            for i in range(load.COUNTERS):
                sums[i] += self.counters[slot * load.COUNTERS + i]
        return sums[0], sums[1], sums[2], sums[3]
