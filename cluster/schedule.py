"""A model trace compiled into a schedule of real operations: what is forced, what is waited for.

A real cluster takes most of the model's steps by itself: a running follower fetches, a
leader advances its high watermark, the controller elects and fails brokers. What the
harness controls is which brokers run, the faults and the clients:

- **forced**: creating the topic with the trace's first leader first in its replica list,
  a produce (``LeaderWrite``), a consumer read (``ConsumerFetch``), ``kill -9`` for a broker
  the step takes down, its log cut on disk to what the model keeps (nothing after a lost
  disk, the flushed part after a power loss), a restart for one it brings back;
- **held still**: a broker that the model keeps from doing what a running broker would do
  is paused (SIGSTOP) for as long as the model keeps it so (``holds``): a follower that
  falls behind and does not fetch next, a follower its leader drops from the ISR, a broker
  whose session the model has the controller lose, and a broker outside the ISR that the
  trace never moves again (running, it could catch up, or be elected uncleanly in the
  place of the trace's choice);
- **awaited**: everything else (elections, ISR changes, fetches, the high watermark). The
  harness waits until the real cluster shows the step's observable effect.

Steps that happen inside a broker's memory (``BecomeLeader``, ``BecomeFollower``) are not
observable from outside; a running broker takes them as soon as the controller tells it,
which is as early as the model allows, so they are neither forced nor checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from isrcheck.model import Action
from isrcheck.traces import Trace

# families whose first broker parameter runs the step (the broker must not be held)
_ACTORS = {
    "ControllerElectLeader": ("leader",), "ControllerFailover": ("leader",), "ControllerUncleanElect": ("leader",),
    "ControllerElectLastLeader": ("leader",), "ControllerAlterPartition": ("leader",),
    "LeaderWrite": ("replica",), "LeaderIncHighWatermark": ("leader",), "LeaderShrinkIsr": ("leader",),
    "LeaderExpandIsr": ("leader", "follower"), "FollowerFetch": ("follower", "leader"),
    "ProducerRetry": ("replica",), "ProducerRetryDuplicate": ("replica",), "ConsumerFetch": ("replica",),
}
# steps no operation can make a real cluster take: the harness says so and goes on
UNSUPPORTED = {
    "ProducerTimeout": "a real producer's request cannot be made to time out after the leader appended it",
    "ProducerRetry": "the real producer retries on its own schedule",
    "ProducerRetryDuplicate": "the real producer retries on its own schedule",
}
_INTERNAL = {"BecomeLeader", "BecomeFollower", "OsFlush", "ConsumerProcess", "ConsumerCommit", "ConsumerCrash",
             "ConsumerOffsetReset"}


@dataclass(frozen=True, slots=True)
class Op:
    """One forced operation: ``verb`` on ``arg`` (a broker, a record id, an offset, a replica order)."""

    verb: str  # "create", "produce", "consume", "kill", "truncate", "restart"
    arg: object  # a broker; a record id; an offset; a replica order; (broker, records kept)

    def __str__(self) -> str:
        return {
            "create": "create the topic with replicas {}",
            "produce": "produce m{}",
            "consume": "consume at offset {}",
            "kill": "kill -9 broker {}",
            "truncate": "cut broker {0[0]}'s log on disk to {0[1]} record(s)",
            "restart": "restart broker {}",
        }[self.verb].format(self.arg)


@dataclass(frozen=True, slots=True)
class Planned:
    index: int  # the step's number in the trace (1 is the first action)
    action: Action
    operations: tuple[Op, ...]  # forced, in order
    holds: frozenset[int]  # brokers paused during this step
    kind: str  # "forced", "awaited", "internal" or "unsupported"
    why: str = ""  # for an unsupported step: why no operation can force it
    settle: bool = False  # wait after pausing, before the operations: a session loss must be seen first


def actors(action: Action) -> set[int]:
    args = action.args
    return {args[p] for p in _ACTORS.get(action.name, ()) if p in args}


def _session_lost(before, action: Action) -> int | None:
    """The broker whose session the step has the controller lose: a live broker dropped
    from the ISR, or a live leader that leadership moves away from."""
    a = action.args
    if action.name == "ControllerShrinkIsr" and before.replicas[a["replica"]].alive:
        return a["replica"]
    if action.name in ("ControllerElectLeader", "ControllerFailover"):
        old = before.quorum.leader
        if old is not None and old != a["leader"] and before.replicas[old].alive:
            return old
    return None


def _behind(state, b: int) -> bool:
    """Broker b lacks records that another live broker has: running, it would fetch them
    (from the leader, or from its in-flight fetch when the leader appended them while it
    waited). The controller's leader itself fetches nothing."""
    if state.quorum.leader == b:
        return False
    mine = len(state.replicas[b].log)
    return any(r.alive and len(r.log) > mine for i, r in enumerate(state.replicas) if i != b)


def compile_trace(trace: Trace) -> list[Planned]:
    steps = trace.steps
    n = len(steps)
    # a broker acts in its own steps, and in the step that brings it back (it must register)
    acting = [actors(steps[i].action) | _returning(steps[i - 1].state, steps[i].state) if i else set()
              for i in range(n)]
    rf = trace.config.rf

    def next_family(b: int, i: int) -> str | None:
        for j in range(i + 1, n):
            if b in acting[j] or _fault_on(steps[j - 1].state, steps[j].state, b):
                return steps[j].action.name
        return None

    lost: set[int] = set()
    plan: list[Planned] = []
    for i in range(1, n):
        before, action, after = steps[i - 1].state, steps[i].action, steps[i].state
        gone = _session_lost(before, action)
        if gone is not None:
            lost.add(gone)
        lost -= acting[i]
        lost = {b for b in lost if after.replicas[b].alive}
        holds = set(lost)
        for b in range(rf):
            if b in acting[i] or not after.replicas[b].alive:
                continue
            following = next_family(b, i)
            if _behind(after, b) and following != "FollowerFetch":
                holds.add(b)
            elif following is None and b not in after.quorum_isr:
                holds.add(b)  # idle to the end outside the ISR: running, it could only catch up or be elected
        if action.name == "LeaderShrinkIsr":
            holds.add(action.args["follower"])
        ops, kind, why = _operations(i, before, action, after, plan)
        plan.append(Planned(i, action, tuple(ops), frozenset(holds - acting[i]), kind, why))
        if gone is not None:
            _lose_session_first(plan, steps, gone)
    return plan


def _lose_session_first(plan: list[Planned], steps, b: int) -> None:
    """The model's controller sees broker b's session end before it notices the crashes
    just before (their brokers are still in its ISR). A real controller notices failures in
    the order their sessions expire, so b is paused before those crashes, long enough
    ahead (``settle``) that its session ends first."""
    i = len(plan) - 1
    first = None
    for j in range(i - 1, -1, -1):
        p = plan[j]
        down = [op.arg for op in p.operations if op.verb == "kill"]
        if len(down) != 1 or b in down or b in actors(p.action):
            break
        c = down[0]
        if c not in steps[i].state.quorum_isr and steps[i].state.quorum.leader != c:
            break  # the model's controller has already seen this crash
        first = j
    if first is None:
        return
    for j in range(first, i):
        p = plan[j]
        plan[j] = Planned(p.index, p.action, p.operations, p.holds | {b}, p.kind, p.why, settle=(j == first))


def _returning(before, after) -> set[int]:
    return {b for b, (was, now) in enumerate(zip(before.replicas, after.replicas)) if now.alive and not was.alive}


def _fault_on(before, after, b: int) -> bool:
    """The step takes broker b down or brings it back."""
    return before.replicas[b].alive != after.replicas[b].alive


def _operations(i: int, before, action: Action, after, plan: list[Planned]) -> tuple[list[Op], str, str]:
    """What the harness does for one step. Faults are read from what the step changes, not
    from its name: a broker that goes down is killed, and what its log loses at that moment
    (a disk, the page cache) is cut from its files; a broker that comes back is restarted."""
    a = action.args
    name = action.name
    if name in UNSUPPORTED:
        return [], "unsupported", UNSUPPORTED[name]
    rf = len(before.replicas)
    ops: list[Op] = []
    for b in range(rf):
        was, now = before.replicas[b], after.replicas[b]
        if was.alive and not now.alive:
            ops.append(Op("kill", b))
            if len(now.log) < len(was.log):
                ops.append(Op("truncate", (b, len(now.log))))
        elif not was.alive and now.alive:
            ops.append(Op("restart", b))
    if name == "ControllerElectLeader" and not any(p.action.name.startswith("Controller") and "leader" in p.action.args
                                                   for p in plan):
        ops.append(Op("create", [a["leader"], *[b for b in range(rf) if b != a["leader"]]]))
    elif name == "LeaderWrite":
        ops.append(Op("produce", before.next_record_id))
    elif name == "ConsumerFetch":
        ops.append(Op("consume", before.position))
    if ops:
        return ops, "forced", ""
    return [], "internal" if name in _INTERNAL else "awaited", ""
