"""What both trace views show, computed once: the checked trace and each step's changes.

The terminal view (``view_text``) and the HTML page (``view_html``) draw the same
facts: per step the Kafka sentence, every replica with what changed since the step
before, the controller's quorum state, the producer's and the consumer's lanes
(``view_lanes``), the histories, and at the end the step where
the property breaks (or is witnessed) with the records it loses. Keeping those
facts here keeps the two views from disagreeing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from isrcheck.model import ModelConfig, PartitionState, Record, ReplicationModel
from isrcheck.model.kafka import KAFKA
from isrcheck.model.fields import eligible_leaders
from isrcheck.properties import BY_NAME, lasso, reach, verdict

from . import itf
from .narrate import describe_step, diagnose, explain_witness, short_step
from .trace import Trace, TraceError, replayed
from .view_lanes import ClientLane, client_lanes, in_lane

# Outcome of the last step: an ``always`` property breaks there, a ``sometimes`` one is witnessed.
VIOLATED, WITNESSED = "violated", "witnessed"


def load_checked(path: str | Path) -> Trace:
    """Read an ITF trace and refuse it, with one line, unless it is safe to show: it replays,
    first breaks (or witnesses) the property it names at its last state, and its JSON is
    what isrcheck writes for that replay, so that an edit the replay cannot see (the
    configuration, ``vars``, an ``index``, the doc) is refused too."""
    data = itf.read(path)
    try:
        trace = check_trace(itf.from_itf(data))
        where = first_difference(itf.to_itf(trace), data)
    except TraceError as e:
        raise TraceError(f"{path}: {e}") from None
    if where:
        raise TraceError(f"{path}: {where}: the file was edited")
    return trace


def check_trace(trace: Trace, model: ReplicationModel | None = None) -> Trace:
    """Replay the trace and check its property claim; return the model's own decoding of
    it, with the catalogue's expectation and doc.

    A trace that replays but whose last state does not break (or witness) the property
    it names was cut or edited: showing it would mark the wrong step. So was one where an
    earlier state already does: a checker stops a path at the first such state.
    """
    model = model or ReplicationModel(trace.config)
    shown, packed = replayed(trace, model)
    name = trace.property_name
    if name is None:
        return replace(shown, expectation=None, doc="")
    prop = BY_NAME.get(name)
    if prop is None:
        raise TraceError(f"the trace names an unknown property {name!r}")
    if trace.expectation != prop.expectation:
        raise TraceError(f"the trace calls {name} {trace.expectation!r}, but it is an {prop.expectation!r} property")
    if not prop.applies(trace.config):
        raise TraceError(f"property {name} does not apply to the trace's configuration")
    if prop.liveness:
        return _check_lasso(shown, packed, prop, model)
    if trace.loop is not None:
        raise TraceError(f"the trace has a loop, but {name} is no liveness property: it was edited")
    if prop.graph:
        return _check_stuck(shown, packed, prop, model)
    holds = prop.derived(model)
    deciding = [i for i, state in enumerate(packed) if verdict.decides(prop, holds(state))]
    word, words = ("violate", "violates") if verdict.always(prop) else ("witness", "witnesses")
    if not deciding or deciding[-1] != len(packed) - 1:
        raise TraceError(f"the last state does not {word} {name}: the trace was cut or edited")
    if deciding[0] != len(packed) - 1:
        raise TraceError(f"state {deciding[0]} already {words} {name}, yet the trace goes on: it was edited")
    return replace(shown, expectation=prop.expectation, doc=prop.doc)


def _check_stuck(shown: Trace, packed: list[int], prop: Any, model: ReplicationModel) -> Trace:
    """A graph property's trace ends in its first stuck state: stuckness lasts (every state
    after a stuck one is stuck), so it is enough that the state before the last is not."""
    try:
        if not reach.stuck(model, prop, packed[-1]):
            raise TraceError(f"the last state is not stuck for {prop.name}: the trace was cut or edited")
        if len(packed) > 1 and reach.stuck(model, prop, packed[-2]):
            raise TraceError(f"state {len(packed) - 2} is already stuck for {prop.name}, yet the trace goes on: it was edited")
    except reach.FutureTooLarge as e:
        raise TraceError(f"cannot check the trace's {prop.name} claim: {e}") from None
    return replace(shown, expectation=prop.expectation, doc=prop.doc)


def _check_lasso(shown: Trace, packed: list[int], prop: Any, model: ReplicationModel) -> Trace:
    """A liveness property's trace is a lasso that violates it (``properties/lasso.py``)."""
    why = lasso.problem(model, prop, packed, *_action_indices(model, shown), shown.loop)
    if why:
        raise TraceError(f"the trace does not violate {prop.name}: {why}")
    return replace(shown, expectation=prop.expectation, doc=prop.doc)


def _action_indices(model: ReplicationModel, trace: Trace) -> tuple[list[int], int | None]:
    """A replayed trace's steps as action indices, and its loop's closing step (or None)."""
    index = model.catalogue.lookup
    closing = trace.loop_action
    return ([index(s.action.name, s.action.args) for s in trace.steps[1:]],
            None if closing is None else index(closing.name, closing.args))


def first_difference(want: Any, got: Any, path: tuple[str | int, ...] = ()) -> str:
    """Where the JSON ``got`` (a file's) first departs from ``want`` (isrcheck's encoding),
    in words naming the state and the variable; '' where they agree. Keys and lists are
    compared in order; a set's members and a map's entries may come in any order."""
    if type(want) is not type(got):
        return f"{_where(path)} is not what its replay writes"
    if isinstance(want, dict):
        keys = list(got)
        for i, key in enumerate(want):
            if i >= len(keys) or keys[i] != key:
                return f"{_where(path + (key,))} is missing or out of place"
            if key in _UNORDERED and type(got[key]) is list:
                if _canonical(want[key], key) != _canonical(got[key], key):
                    return f"{_where(path + (key,))} is not what its replay writes"
            elif found := first_difference(want[key], got[key], path + (key,)):
                return found
        return f"{_where(path)} holds a key isrcheck does not write" if len(keys) > len(want) else ""
    if isinstance(want, list):
        for i, (w, g) in enumerate(zip(want, got)):
            if found := first_difference(w, g, path + (i,)):
                return found
        return f"{_where(path)} has {len(got)} entries, its replay {len(want)}" if len(want) != len(got) else ""
    return "" if want == got else f"{_where(path)} is not what its replay writes"


_UNORDERED = ("#set", "#map")  # ITF's sets and maps: their members' order means nothing


def _canonical(value: Any, key: str = "") -> str:
    """``value`` as JSON text in one order: a set's members and a map's entries sorted."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_canonical(v, k)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        items = [_canonical(v) for v in value]
        return "[" + ",".join(sorted(items) if key in _UNORDERED else items) + "]"
    return json.dumps(value)


def _where(path: tuple[str | int, ...]) -> str:
    """``('states', 5, 'replicaLog', '#map', 0)`` as ``state 5: replicaLog.#map[0]``."""
    if path[:1] == ("states",) and len(path) > 1:
        return f"state {path[1]}" + (f": {_where(path[2:])}" if len(path) > 2 else "")
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return text or "the file"


@dataclass(frozen=True, slots=True)
class ReplicaView:
    broker: int
    log: tuple[Record, ...]
    hw: int
    leo: int
    leader: int | None  # whom it believes leads
    epoch: int | None
    isr: frozenset[int]  # its cached ISR
    alive: bool
    role: str  # leader | stale leader | follower | crashed | no role
    in_quorum_isr: bool
    changed: frozenset[str]  # of: log, leo, hw, leader, epoch, isr, alive, role
    appended: tuple[int, ...]  # offsets that are new or rewritten at this step
    dropped: tuple[Record, ...]  # records truncated or wiped at this step
    asks: str | None = None  # a pending AlterPartition (KRaft): "+f" adds follower f, "-f" removes it


@dataclass(frozen=True, slots=True)
class QuorumView:
    leader: int | None
    epoch: int | None
    isr: frozenset[int]
    changed: frozenset[str]  # of: leader, epoch, isr, elr
    elr: frozenset[int] | None = None  # the eligible leader replicas (KIP-966), where the configuration keeps them


@dataclass(frozen=True, slots=True)
class StepView:
    index: int
    action: str  # the action as the model names it, e.g. BecomeFollower(replica=1, leader=0, epoch=1)
    sentence: str  # the same step in Kafka words
    short: str  # a few words, for a timeline
    replicas: tuple[ReplicaView, ...]
    quorum: QuorumView
    requests: tuple[tuple[int, int | None, frozenset[int]], ...]  # (epoch, leader, ISR) sent so far, oldest first
    new_request: bool
    histories: tuple[tuple[str, frozenset[int], frozenset[int]], ...]  # (label, ids, ids new at this step)
    counters: tuple[tuple[str, int, int, bool], ...]  # (label, used, allowed, changed)
    lanes: tuple[ClientLane, ...] = ()  # the producer's and the consumer's (view_lanes), where kept

    @property
    def changed_anything(self) -> bool:
        return bool(any(r.changed for r in self.replicas) or self.quorum.changed or self.new_request
                    or any(lane.changed for lane in self.lanes))


@dataclass(frozen=True, slots=True)
class TraceView:
    config: ModelConfig
    summary: str
    property_name: str | None
    doc: str
    outcome: str | None  # VIOLATED, WITNESSED or None (a trace without a property)
    explanation: str
    lost: tuple[Record, ...]
    missing_from: tuple[tuple[int, Record], ...]  # (broker, record it should hold) in the last state
    steps: tuple[StepView, ...]
    # a lasso: the step whose state triggers the liveness property, the loop's first step,
    # and how the run goes on for ever from the last step (LassoView.ending)
    lasso: "LassoView | None" = None

    @property
    def headline(self) -> str:
        """The verdict in one line, as both views print it."""
        last = len(self.steps) - 1
        if self.outcome == WITNESSED:
            return f"✓ {self.property_name} witnessed at step {last}"
        if self.lasso is not None:
            return f"✗ {self.property_name} violated: from step {self.lasso.trigger} on, {self.lasso.ending}"
        return f"✗ {self.property_name} violated at step {last}"

    @property
    def kafka(self) -> bool:
        return not self.config.core

    @property
    def title(self) -> str:
        if self.property_name is None:
            return f"trace of {len(self.steps)} states"
        kind = "counterexample" if self.outcome == VIOLATED else "witness"
        return f"{self.property_name} {kind}, {len(self.steps)} states"


@dataclass(frozen=True, slots=True)
class LassoView:
    trigger: int  # the step from which the goal never holds
    loop: int  # the loop's first step
    closing: str  # the step from the last state back to ``loop``, in Kafka words ('' when it stays)
    fair: bool  # --fairness weak: a run stops only where no broker or controller step is enabled

    @property
    def ending(self) -> str:
        if not self.closing:
            why = ("no broker or controller step is enabled there" if self.fair else
                   "without fairness nothing makes a broker or the controller act")
            return f"the run stays at step {self.loop} for ever: {why}"
        return f"the run goes round steps {self.loop} to the last for ever: then {self.closing}, back to step {self.loop}"

    @property
    def short_ending(self) -> str:
        return "stays here for ever" if not self.closing else f"then back to step {self.loop}, for ever"


def lasso_view(trace: Trace) -> LassoView | None:
    """A lasso's trigger, loop and ending (None for a trace without a loop)."""
    if trace.loop is None:
        return None
    model = ReplicationModel(trace.config)
    packed = [model.encode(s.state) for s in trace.steps]
    trigger = lasso.trigger_index(model, BY_NAME[trace.property_name], packed, *_action_indices(model, trace),
                                  trace.loop)
    words = ""
    if trace.loop_action is not None:
        words = describe_step(trace.steps[-1].state, trace.loop_action, trace.steps[trace.loop].state)
    return LassoView(trigger if trigger is not None else trace.loop, trace.loop, words,
                     trace.config.fairness == "weak")


def role(ps: PartitionState, r: int) -> str:
    rs = ps.replicas[r]
    if not rs.alive:
        return "crashed"
    if rs.leader is None:
        return "no role"
    if rs.leader != r:
        return "follower"
    return "leader" if ps.is_true_leader(r) else "stale leader"


def _replica(before: PartitionState | None, after: PartitionState, r: int) -> ReplicaView:
    rs = after.replicas[r]
    changed: set[str] = set()
    appended: tuple[int, ...] = ()
    dropped: tuple[Record, ...] = ()
    if before is not None:
        old = before.replicas[r]
        for name in ("hw", "leader", "isr", "alive"):
            if getattr(old, name) != getattr(rs, name):
                changed.add(name)
        if old.proposal != rs.proposal:
            changed.add("asks")
        if old.leader_epoch != rs.leader_epoch:
            changed.add("epoch")
        if role(before, r) != role(after, r):
            changed.add("role")
        if old.leo != rs.leo:
            changed.add("leo")
        if old.log != rs.log:
            changed.add("log")
            keep = 0
            while keep < min(len(old.log), len(rs.log)) and old.log[keep] == rs.log[keep]:
                keep += 1
            appended = tuple(range(keep, len(rs.log)))
            dropped = old.log[keep:]
    return ReplicaView(
        broker=r,
        log=rs.log,
        hw=rs.hw,
        leo=rs.leo,
        leader=rs.leader,
        epoch=rs.leader_epoch,
        isr=rs.isr,
        alive=rs.alive,
        role=role(after, r),
        in_quorum_isr=r in after.quorum.isr,
        changed=frozenset(changed),
        appended=appended,
        dropped=dropped,
        asks=None if rs.proposal is None else f"{'-' if rs.proposal in rs.isr else '+'}{rs.proposal}",
    )


def _start_words(config) -> str:
    """The first state's sentence: a new partition, or one that shows a partition now, with the
    Kafka broker each replica stands for (the model numbers them by their place in Replicas)."""
    if getattr(config, "now", None) is None:
        return "the partition before any action"
    from isrcheck.model.now import parse_now

    shown = parse_now(config.now)
    places = "; ".join(f"for partition {p.partition}, brokers " + ", ".join(
        f"{i} = Kafka broker {b}" for i, b in enumerate(p.replicas)) for p in shown)
    return f"the partition as the describe shows it now, records written before now aside ({places})"


def _step(trace: Trace, i: int) -> StepView:
    config = trace.config
    ps = trace.steps[i].state
    before = trace.steps[i - 1].state if i else None
    action = trace.steps[i].action
    if before is None or action is None:
        action_text, sentence, short = "initial state", _start_words(config), "initial state"
    else:
        action_text, sentence, short = str(action), describe_step(before, action, ps), short_step(before, action, ps)
    q = ps.quorum
    qchanged: set[str] = set()
    if before is not None:
        bq = before.quorum
        qchanged = {n for n, a, b in (("leader", bq.leader, q.leader), ("epoch", bq.leader_epoch, q.leader_epoch),
                                      ("isr", bq.isr, q.isr), ("elr", before.elr, ps.elr)) if a != b}
    histories: list[tuple[str, frozenset[int], frozenset[int]]] = []
    counters: list[tuple[str, int, int, bool]] = []
    for f in KAFKA.fields:  # the histories and counters that the configuration keeps, outside the lanes
        if f.replica or not f.kept(config) or not f.shown or in_lane(config, f.name):
            continue
        now, was = getattr(ps, f.name), getattr(before, f.name) if before is not None else None
        if f.shown == "history":
            histories.append((f.label, now, now - was if was is not None else frozenset()))
        else:
            counters.append((f.label, now, f.kind.hi(config), was is not None and was != now))
    return StepView(
        index=i,
        action=action_text,
        sentence=sentence,
        short=short,
        replicas=tuple(_replica(before, ps, r) for r in range(len(ps.replicas))),
        quorum=QuorumView(q.leader, q.leader_epoch, q.isr, frozenset(qchanged),
                          ps.elr if eligible_leaders(config) else None),
        requests=tuple((x.leader_epoch, x.leader, x.isr) for x in ps.requests),
        new_request=before is not None and len(ps.requests) > len(before.requests),
        histories=tuple(histories),
        counters=tuple(counters),
        lanes=client_lanes(config, before, ps, action),
    )


def build_view(trace: Trace) -> TraceView:
    """The facts both views draw; ``trace`` should have passed ``check_trace``."""
    lost: tuple[Record, ...] = ()
    missing: tuple[tuple[int, Record], ...] = ()
    if trace.property_name is None:
        outcome, explanation = None, ""
    elif not trace.is_counterexample:
        outcome, explanation = WITNESSED, explain_witness(trace)
    else:
        found = diagnose(trace)
        outcome, explanation, lost, missing = VIOLATED, found.text, found.records, found.missing_from
    return TraceView(
        config=trace.config,
        summary=trace.config.summary(),
        property_name=trace.property_name,
        doc=trace.doc,
        outcome=outcome,
        explanation=explanation,
        lost=lost,
        missing_from=missing,
        steps=tuple(_step(trace, i) for i in range(len(trace.steps))),
        lasso=lasso_view(trace),
    )
