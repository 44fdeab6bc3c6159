"""What every fault kind has (`FaultSpec`): when it is injected and healed, once or recurring,
how it is told in words and recorded; the shapes kinds take (of every server, on a broker, on a
KRaft controller); and `Injection`, one entry of a run's fault schedule. The kinds themselves
are in `benchmarks/spec/fault_kinds.py`."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator

from benchmarks.spec.fault_targets import ControllerTarget, FaultTarget, Resolved, Situation
from benchmarks.spec.strict import Strict


class FaultSpec(Strict):
    """What every kind has: when it is injected and healed, in seconds into the measured phase.
    A fault with `every_s` recurs (a nemesis): injected at `at_s` (default: `every_s`) and every
    `every_s` seconds after, until `until_s` (default: the end of the workload's duration), each
    injection healed `duration_s` after it acted and resolving its target anew. With `count`
    instead of `until_s`, that many are due, and each one skipped, or that missed its target (a
    leader that moved before the kill acted), is made up for by one more at the end of the schedule
    (at most `count` more), the load going on past the workload's duration until they have acted."""

    at_s: Annotated[float, Field(ge=0)] | None = None  # required for a one-off fault
    heal_at_s: Annotated[float, Field(ge=0)] | None = None  # None: healed at the end of the run
    every_s: Annotated[float, Field(gt=0)] | None = None
    duration_s: Annotated[float, Field(gt=0)] | None = None
    until_s: Annotated[float, Field(gt=0)] | None = None
    # How many injections must act on their target: each one skipped (a cluster not recovered in time,
    # no target, max_brokers_down) or that missed (`moved`) is made up for at the end of the schedule.
    # None: those due until until_s.
    count: Annotated[int, Field(ge=1)] | None = None
    # Before injecting, wait up to this long for a recovered cluster (every node up, every partition
    # led with its full ISR, a quorum leader): each injection then starts from the same state, and
    # one whose cluster does not recover in time is skipped with what was still wrong. None: on time.
    wait_recovered_s: Annotated[float, Field(gt=0)] | None = None

    kind: str  # each kind's class narrows it to its own name
    playbook: ClassVar[str]  # under playbooks/: inject and revert by fault_phase
    reads_cluster: ClassVar[bool] = True  # resolving the target needs the cluster's state
    # ... and, on KRaft, the controller quorum's: who leads it, who follows. Not read otherwise: a
    # paused node, or a quorum without a majority, holds a request for it until it times out.
    reads_quorum: ClassVar[bool] = False
    modes: ClassVar[frozenset[str]] = frozenset({"kraft", "zookeeper"})  # metadata modes the kind applies to
    needs_own_addresses: ClassVar[bool] = False  # brokers on hosts with addresses of their own
    needs_netem: ClassVar[bool] = False  # the hosts' kernel must have sch_netem (tc netem)
    needs_data_disk: ClassVar[bool] = False  # brokers whose data is on a filesystem of its own
    heal_order: ClassVar[int] = 1  # `heal` reverts outstanding faults of lower order first
    # The target keeps what it was chosen for (leading a partition, being the controller) until the
    # cluster notices the fault, seconds after it acted (a session expires): the cluster read just
    # after the act tells whether that role had moved before it (`moved`). Not so for a controlled
    # shutdown, which hands leadership over at once.
    roles_outlive_act: ClassVar[bool] = False

    @model_validator(mode="after")
    def _when(self) -> FaultSpec:
        if self.every_s is None:
            recurring = [f for f in ("duration_s", "until_s", "count") if getattr(self, f) is not None]
            if recurring:
                raise ValueError(f"{' and '.join(recurring)} belong to a recurring fault: set every_s too, or heal "
                                 "a one-off fault with heal_at_s")
            if self.at_s is None:
                raise ValueError("at_s is required (or every_s, for a recurring fault)")
        else:
            if self.heal_at_s is not None:
                raise ValueError("heal_at_s is for a one-off fault: a recurring fault (every_s) heals each "
                                 "injection duration_s after it acted")
            if self.duration_s is None:
                raise ValueError("duration_s is required with every_s: how long each injection lasts")
            if self.count is not None and self.until_s is not None:
                raise ValueError("count and until_s both end a recurring fault: give one (count: that many "
                                 "injections act, the load going on as long as they need)")
            if self.until_s is not None and self.until_s <= self.first_s:
                raise ValueError(f"until_s ({self.until_s:g}) must come after the first injection ({self.first_s:g} s)")
        if self.heal_at_s is not None and self.heal_at_s <= self.first_s:
            raise ValueError(f"heal_at_s ({self.heal_at_s}) must come after at_s ({self.at_s})")
        return self

    @property
    def first_s(self) -> float:
        """When the fault is first injected."""
        return self.at_s if self.at_s is not None else self.every_s or 0.0

    def occurrences(self, end_s: float) -> list[FaultSpec]:
        """The fault's injections as one-off faults: itself, or a recurring fault's every
        injection from first_s until until_s (or `end_s`, the workload's end), or its `count`
        first ones, each healed duration_s after it."""
        if self.every_s is None or self.duration_s is None:
            return [self]
        until, at = min(self.until_s or end_s, end_s), self.first_s
        out: list[FaultSpec] = []
        while len(out) < self.count if self.count is not None else at < until:
            out.append(self.once(at))
            at = round(at + self.every_s, 9)
        return out

    def once(self, at_s: float) -> FaultSpec:
        """A recurring fault's injection at `at_s`, as a one-off fault healed duration_s after it."""
        return self.model_copy(update={"at_s": at_s, "heal_at_s": at_s + (self.duration_s or 0.0), "every_s": None,
                                       "duration_s": None, "until_s": None, "count": None})

    @property
    def target_words(self) -> str:
        """The target in words ("leader of 0", "broker 1; ports 9092"); empty for a fault of every server."""
        return ""

    @property
    def label(self) -> str:
        """The fault in words, for people: "broker-kill (leader of 0) at 6 s, healed at 12 s",
        "broker-kill (random broker) every 12 s from 12 s, 5 s each"."""
        target = self.target_words
        what = f"{self.kind}{f' ({target})' if target else ''}"
        if self.every_s is not None:
            until = f" until {self.until_s:g} s" if self.until_s is not None else ""
            count = f", {self.count} to act" if self.count is not None else ""
            return f"{what} every {self.every_s:g} s from {self.first_s:g} s{until}, {self.duration_s:g} s each{count}"
        healed = f", healed at {self.heal_at_s:g} s" if self.heal_at_s is not None else ""
        return f"{what} at {self.first_s:g} s{healed}"

    def schedule_entry(self) -> dict[str, Any]:
        """The fault as data, as the run records it (summary.json's fault_schedule)."""
        return {"kind": self.kind, "target": self.target_words, "at_s": self.first_s, "heal_at_s": self.heal_at_s,
                "every_s": self.every_s, "duration_s": self.duration_s, "until_s": self.until_s, "count": self.count}

    def resolve(self, situation: Situation) -> Resolved:
        raise NotImplementedError

    @property
    def can_miss(self) -> bool:
        """Whether `moved` can tell that the fault missed: its target is a role that outlives the act.
        The scheduler reads the cluster after the act only for such faults."""
        return False

    def moved(self, situation: Situation, resolved: Resolved) -> str | None:
        """Why the fault, as it acted on `resolved`, missed what its target aims at: the role the
        broker was chosen for held by another one on the cluster read just after the act (None: it
        did not, or the kind cannot tell)."""
        return None

    def extravars(self) -> dict[str, Any]:
        """The fault's options for its playbook (journaled with it, so `heal` reverts the same)."""
        return {}

    def inventory_errors(self, broker_ids: tuple[int, ...]) -> list[tuple[str, str]]:
        """(field, message) for each target the inventory has no server for."""
        return []

    def controller_errors(self, controller_ids: tuple[int, ...]) -> list[tuple[str, str]]:
        """(field, message) for each target the inventory's KRaft controllers (their node ids; none
        on a ZooKeeper cluster) cannot carry out."""
        return []

    def workload_errors(self, partitions: int) -> list[tuple[str, str]]:
        """(field, message) for each target the workload's topic has no partition for."""
        return []


@dataclasses.dataclass(frozen=True)
class Injection:
    """One injection of a run's schedule: a one-off fault, or one of a recurring fault's."""

    fault: FaultSpec  # one-off: at_s and heal_at_s say when
    name: str  # the scenario's entry: "faults[0]", a recurring fault's "faults[0] #3"
    every_s: float | None = None  # a recurring fault's period: the next injection is due this much later
    entry: str = ""  # the scenario's entry it is of: "faults[0]"
    counted: FaultSpec | None = None  # the recurring fault with a `count` it is one of: a skipped one is made up for

    @property
    def recurring(self) -> bool:
        """One of a recurring fault's: skipped (and recorded) when its target cannot be resolved."""
        return self.every_s is not None


def _not_in(field: str, value: int | None, allowed: tuple[int, ...], what: str) -> list[tuple[str, str]]:
    """The (field, message) of a target id the inventory has no such server for."""
    if value is None or value in allowed:
        return []
    return [(field, f"{value} is not a {what} of the inventory; allowed: " + ", ".join(map(str, allowed)))]


class OfEveryServer(FaultSpec):
    """A fault of a whole group of servers, chosen by the kind: it takes no target."""

    no_target_reason: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _no_target(cls, data: Any) -> Any:
        if isinstance(data, dict) and "target" in data:
            raise ValueError(f"{data.get('kind')} takes no target: {cls.no_target_reason}")
        return data


class OnABroker(FaultSpec):
    """A fault of one broker (or its host), chosen by `target` when it is due."""

    target: FaultTarget = FaultTarget(random=True)

    @property
    def target_words(self) -> str:
        return self.target.words

    def resolve(self, situation: Situation) -> Resolved:
        return self.target.resolve(situation)

    @property
    def can_miss(self) -> bool:
        return self.roles_outlive_act and self.target.names_role

    def moved(self, situation: Situation, resolved: Resolved) -> str | None:
        if not self.can_miss or resolved.broker_id is None:
            return None
        return self.target.moved(situation, resolved.broker_id)

    def workload_errors(self, partitions: int) -> list[tuple[str, str]]:
        named = (("leader_of", self.target.leader_of), ("follower_of", self.target.follower_of),
                 ("replica_of", self.target.replica_of))
        return [(f"target.{field}", f"({partition}) is not a partition of a {partitions}-partition topic")
                for field, partition in named if partition is not None and partition >= partitions]

    def controller_errors(self, controller_ids: tuple[int, ...]) -> list[tuple[str, str]]:
        if self.target.controller and controller_ids:
            return [("target.controller", "in KRaft the active controller is a controller, not a broker: use "
                     "controller-kill, controller-stop or controller-pause with target {active: true}")]
        return []

    def inventory_errors(self, broker_ids: tuple[int, ...]) -> list[tuple[str, str]]:
        return _not_in("target.broker", self.target.broker, broker_ids, "broker")


class OnAController(FaultSpec):
    """A fault of one KRaft controller process (on a combined node, the broker's process too)."""

    target: ControllerTarget = ControllerTarget(active=True)
    modes = frozenset({"kraft"})
    reads_quorum = True
    heal_order = 0  # controllers come back before brokers: a broker cannot register without a quorum

    @property
    def target_words(self) -> str:
        return self.target.words

    def resolve(self, situation: Situation) -> Resolved:
        return self.target.resolve(situation)

    def controller_errors(self, controller_ids: tuple[int, ...]) -> list[tuple[str, str]]:
        return _not_in("target.node", self.target.node, controller_ids, "controller")
