"""Terminal output: playbook progress and the cluster status tables."""

from __future__ import annotations

import sys
from collections import Counter

from rich.console import Console
from rich.status import Status
from rich.table import Table

from benchmarks.hosts.ansible import ProgressEvent
from benchmarks.kafka.cluster import ClusterStatus

# Piped output (CI logs, files) gets wide tables instead of rich's 80 columns.
console = Console(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty(),
                  width=None if sys.stderr.isatty() else 200)
stdout = Console(highlight=False, soft_wrap=not sys.stdout.isatty(), width=None if sys.stdout.isatty() else 200)


class PlaybookProgress:
    """Shows the play and task being run and what each host did, as the events arrive.

    On a terminal it is one live status line; elsewhere (CI, pipes) one line per task."""

    def __init__(self, title: str, out: Console = console) -> None:
        self.title = title
        self.out = out
        self.tasks = 0
        self.current = ("", "")
        self.hosts: Counter[str] = Counter()
        self.totals: Counter[str] = Counter()
        self._status: Status | None = None

    def __enter__(self) -> PlaybookProgress:
        if self.out.is_terminal:
            self._status = self.out.status(self.title)
            self._status.__enter__()
        else:
            self.out.print(self.title)
        return self

    def __exit__(self, *exc) -> None:
        self._flush_task()
        if self._status is not None:
            self._status.__exit__(*exc)

    def _flush_task(self) -> None:
        if not self._status and self.current[1] and self.hosts:
            summary = ", ".join(f"{n} {s}" for s, n in sorted(self.hosts.items()))
            self.out.print(f"  [{self.tasks:3d}] {self.current[0]} › {self.current[1]}: {summary}")

    def __call__(self, event: ProgressEvent) -> None:
        if (event.play, event.task) != self.current:
            self._flush_task()
            self.current = (event.play, event.task)
            self.hosts = Counter()
            self.tasks += 1
        if event.status == "started":
            pass
        else:
            self.hosts[event.status] += 1
            self.totals[event.status] += 1
        if self._status is not None:
            done = ", ".join(f"{n} {s}" for s, n in sorted(self.totals.items()))
            self._status.update(f"{self.title} [dim]({self.tasks} tasks; {done})[/]\n"
                                f"  {event.play} › [bold]{event.task}[/]")


def status_tables(status: ClusterStatus) -> list[Table]:
    brokers = Table(title="Brokers", title_justify="left")
    for col in ("id", "inventory host", "endpoint", "state", "controller"):
        brokers.add_column(col)
    kraft = status.quorum is not None
    for b in status.brokers:
        brokers.add_row(str(b.broker_id), b.name, f"{b.host}:{b.port}",
                        "[green]up[/]" if b.alive else "[red]FENCED[/]" if b.fenced else "[red]DOWN[/]",
                        "yes" if b.broker_id == status.controller_id else "")
    tables = [brokers]
    if status.quorum is not None:
        q = status.quorum
        quorum = Table(title=f"Controller quorum (KRaft): leader {'none' if q.leader_id is None else q.leader_id}, "
                             f"epoch {q.leader_epoch}", title_justify="left")
        for col in ("id", "inventory host", "endpoint", "role", "lag"):
            quorum.add_column(col)
        for c in q.controllers:
            role = ("[bold]leader[/]" if c.node_id == q.leader_id else "voter" if c.voter
                    else "[red]not a voter[/]" if q.leader_id is not None else "[red]unknown[/]")
            quorum.add_row(str(c.node_id), c.name + (" (combined)" if c.combined else ""), c.endpoint, role,
                           "-" if c.lag is None else str(c.lag))
        tables.append(quorum)
    if status.zookeepers:
        zk = Table(title="ZooKeeper", title_justify="left")
        for col in ("inventory host", "endpoint", "mode"):
            zk.add_column(col)
        for z in status.zookeepers:
            zk.add_row(z.name, z.endpoint, z.mode or "[red]not answering[/]")
        tables.append(zk)
    parts = Table(title="Partitions", title_justify="left")
    for col in ("topic", "partition", "leader", "replicas", "isr") + (("elr", "last known elr") if kraft else ()) + ("state",):
        parts.add_column(col)
    for p in status.partitions:
        state = ("[red]OFFLINE[/]" if p.offline else "[yellow]under-replicated[/]" if p.under_replicated else "[green]ok[/]")
        elr = tuple("-" if ids is None else ",".join(map(str, ids)) for ids in (p.elr, p.last_known_elr)) if kraft else ()
        parts.add_row(p.topic, str(p.partition), "none" if p.leader is None else str(p.leader),
                      ",".join(map(str, p.replicas)), ",".join(map(str, p.isr)), *elr, state)
    if status.partitions:
        tables.append(parts)
    return tables


def print_status(status: ClusterStatus, out: Console = stdout) -> None:
    for table in status_tables(status):
        out.print(table)
    if status.healthy:
        quorum = f", a quorum of {len(status.quorum.controllers)} controllers" if status.quorum else ""
        out.print(f"[green]healthy[/]: {len(status.brokers)} brokers{quorum}, active controller {status.controller_id}")
    else:
        out.print("[red]not healthy[/]:")
        for problem in status.problems():
            out.print(f"  - {problem}")


def is_interactive() -> bool:
    return sys.stderr.isatty()
