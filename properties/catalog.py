"""The named properties: each one a record with its predicate written once.

A property's predicate reads a state through a view and the operations of
``model/ops.py``, like an action's guard, so every backend derives its form from the
one definition: per packed state with Python ints (``compile``, the scalar engines'),
per batch of states with NumPy (``forms.batch``, the vector kernel's), as a Z3 formula
(``forms.symbolic``). ``compiled.py`` keeps hand-written per-state forms of the
hottest ones for the scalar engines, held to the definitions by test.

``always`` properties must hold in every reachable state; ``sometimes`` properties
are witnesses that the bounded space is not vacuous (a record is committed, a leader
fails over, a record becomes readable, a write succeeds during an outage).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.fields import consumer_crashes, idempotence, offsets, restarts, retrying, write_quorum
from isrcheck.model.readings import alive, quorum_epoch, true_leader_is
from isrcheck.model.ops_int import state_predicate

from . import compiled, delivery, explain

Expectation = Literal["always", "sometimes"]
Predicate = Callable[[int], bool]


@dataclass(frozen=True)
class Property:
    name: str
    expectation: Expectation
    doc: str
    applies: Callable[[ModelConfig], bool]
    holds: Callable[[Any, Any], Any]  # (view s, operations x) -> where it holds
    why_not: str = ""  # why it does not apply where it does not
    explain: Callable[[Any], explain.Diagnosis] | None = None  # what a trace's last state shows
    fast: Callable[[ReplicationModel], Predicate] | None = None  # a hand-written per-state form
    # a graph property: from every reachable state, a state where ``holds`` holds can be reached;
    # ``beyond`` marks states where the bounds, not the protocol, may block the way (checker/graph.py)
    beyond: Callable[[Any, Any], Any] | None = None
    # graph properties: where the target can never hold again, within or past the bounds (a
    # monotone argument: such a state is stuck even where it could still reach ``beyond``)
    hopeless: Callable[[Any, Any], Any] | None = None
    # a liveness property: wherever ``trigger`` holds, ``holds`` (its goal) eventually holds in
    # every fault-free run in which the system's families are weakly fair (checker/liveness.py)
    trigger: Callable[[Any, Any], Any] | None = None
    # a ``sometimes`` property that asks a question: never happening is an answer, not vacuity
    question: bool = False
    # an invariant of the published specification's own bookkeeping (the ISR, the HWM), not a
    # guarantee a user is promised: reported apart, deciding a run only when asked for (issue 54)
    internal: bool = False

    @property
    def graph(self) -> bool:
        """Decided over the explored state graph, not state by state; checked only when named."""
        return self.beyond is not None

    @property
    def liveness(self) -> bool:
        return self.trigger is not None

    def compile(self, model: Any) -> Predicate:
        """The per-state predicate over packed ints: the hand-written form where there is one."""
        if self.fast is not None and isinstance(model, ReplicationModel):
            return self.fast(model)
        return self.derived(model)

    def derived(self, model: Any) -> Predicate:
        """The per-state predicate run from the definition (Python ints)."""
        return state_predicate(model.layout, self.holds)

    def reference(self, model: Any, readable: Any) -> bool:
        """The definition on a readable state (encoded with the model first)."""
        return self.derived(model)(model.encode(readable))


# ---- the definitions ------------------------------------------------------------------------------------
def _electable(s, x, members, r: int, strong: bool):
    """An ISR member that could take over: a live one. A crashed broker is not elected, and
    restarts only once the controller removed it from the ISR (KIP-380), unless it is the
    last member, which stays electable (so it counts for strong-isr)."""
    counted = x.and_(x.has(members, r), alive(s, r))
    return x.or_(counted, x.only(members, r)) if strong else counted


def _isr(strong: bool) -> Callable[[Any, Any], Any]:
    def holds(s, x):
        rf, ok = s.cfg.rf, []
        for r1 in range(rf):
            h = s.hw[r1]
            leads = x.and_(s.leader[r1] == r1, h > 0)
            members = s.quorum_isr if strong else s.isr[r1]
            for r2 in range(rf):
                broken = x.not_(x.agree_below(s.log[r1], s.log[r2], h))
                ok.append(x.not_(x.and_(leads, _electable(s, x, members, r2, strong), broken)))
        return x.all_(ok)

    return holds


def _leader_in_isr(s, x):
    q = x.last_leader(s.requests)
    return x.all_(x.implies(q == r, x.has(s.quorum_isr, r)) for r in range(s.cfg.rf))


def _log_matching(s, x):
    rf = s.cfg.rf
    return x.all_(
        x.agree_below(s.log[a], s.log[b], x.min(s.hw[a], s.hw[b])) for a in range(rf) for b in range(a + 1, rf)
    )


def _in_leader_log(history: str) -> Callable[[Any, Any], Any]:
    """Every record id of a history is in the true leader's log (ids sit at one offset)."""

    def holds(s, x):
        ids = getattr(s, history)
        return x.all_(
            x.implies(true_leader_is(s, x, r), x.subset(ids, x.ids(s.log[r]))) for r in range(s.cfg.rf)
        )

    return holds


def _stored(s, x):
    """Every committed record id is in the log of some replica, crashed ones included (on disk)."""
    ids = x.ids(s.log[0])
    for r in range(1, s.cfg.rf):
        ids = x.union(ids, x.ids(s.log[r]))
    return x.subset(s.committed, ids)


def _some(history: str) -> Callable[[Any, Any], Any]:
    return lambda s, x: x.not_(x.empty(getattr(s, history)))


def _leader_failover(s, x):
    """The true leader holds a committed record written in an epoch that another broker led."""
    cases = []
    for r in range(s.cfg.rf):
        log = s.log[r]
        for o in range(s.cfg.logsize):
            earlier = x.leader_of(s.requests, x.epoch_at(log, o)) != r
            cases.append(x.and_(true_leader_is(s, x, r), o < x.length(log), x.has(s.committed, x.id_at(log, o)), earlier))
    return x.any_(cases)


def _write_after_crash(s, x):
    """A broker is down and a record appended since its crash is acknowledged."""
    return x.any_(x.and_(x.not_(alive(s, r)), x.any_from(s.acked, s.crash_mark[r])) for r in range(s.cfg.rf))


def _writable(s, x):
    """The partition takes writes: a live true leader whose ISR is large enough for the acks
    (min.insync.replicas for acks=all, itself otherwise) and has no crashed member, so that
    a new record can be acknowledged (acks=all waits for every ISR member to fetch it)."""
    rf, acks_all, need = s.cfg.rf, s.cfg.acks == "all", write_quorum(s.cfg)

    def takes_writes(r):
        members_up = x.all_(x.implies(x.has(s.isr[r], m), alive(s, m)) for m in range(rf) if m != r) if acks_all else True
        return x.and_(true_leader_is(s, x, r), alive(s, r), x.size(s.isr[r]) >= need, members_up)

    return x.any_(takes_writes(r) for r in range(rf))


def _too_few_brokers(s, x):
    """Fewer brokers are up than a write needs, and none comes back (``--no-restarts``): a
    writable state needs that many live ISR members, and the live count never grows."""
    if restarts(s.cfg):
        return False
    return x.count(alive(s, r) for r in range(s.cfg.rf)) < write_quorum(s.cfg)


def _out_of_epochs(s, x):
    """Every leader epoch is used: no election or controller ISR change can happen any more."""
    return quorum_epoch(s, x) >= s.cfg.max_leader_epoch


def _has_true_leader(s, x):
    return x.any_(true_leader_is(s, x, r) for r in range(s.cfg.rf))


def _live_outside_isr(s, x):
    """The partition has a true leader, and some live replica is outside the quorum's ISR."""
    out = x.any_(x.and_(alive(s, r), x.not_(x.has(s.quorum_isr, r))) for r in range(s.cfg.rf))
    return x.and_(_has_true_leader(s, x), out)


def _live_in_isr(s, x):
    return x.all_(x.implies(alive(s, r), x.has(s.quorum_isr, r)) for r in range(s.cfg.rf))


def _all_up(s, x):
    return x.all_(alive(s, r) for r in range(s.cfg.rf))


def _hwm_at_log_end(s, x):
    """The true leader's high watermark is at its log end: every record it holds is committed."""
    return x.any_(x.and_(true_leader_is(s, x, r), s.hw[r] == x.length(s.log[r])) for r in range(s.cfg.rf))


def _kafka(config: ModelConfig) -> bool:
    return not config.core


_NOT_CORE = "--core has no producer, consumer or crash history"
_NO_RETRIES = "the producer sends each record once: --retries 0, or --acks 0"
_NO_GROUP = "no consumer group member commits offsets: give --commit before or after"

PROPERTIES: tuple[Property, ...] = (
    Property(
        "weak-isr", "always",
        "every believed leader's records below its HWM are on every member of its cached ISR",
        lambda c: True, _isr(strong=False), explain=explain.isr_broken(strong=False), fast=compiled.isr_compiled(strong=False),
        internal=True,
    ),
    Property(
        "strong-isr", "always",
        "records below any believed leader's HWM are on every quorum ISR member: committed data survives a clean election",
        lambda c: True, _isr(strong=True), explain=explain.isr_broken(strong=True), fast=compiled.isr_compiled(strong=True),
        internal=True,
    ),
    Property(
        "leader-in-isr", "always", "the quorum leader, when there is one, is in the quorum ISR",
        lambda c: True, _leader_in_isr, explain=explain.leader_outside_isr, fast=compiled.leader_in_isr_compiled,
        internal=True,
    ),
    Property(
        "log-matching", "always", "any two replicas hold identical records below both of their HWMs",
        _kafka, _log_matching, _NOT_CORE, explain=explain.logs_disagree, fast=compiled.log_matching_compiled,
        internal=True,
    ),
    Property(
        "committed-survive", "always", "every record ever committed is in the log of every later leader",
        _kafka, _in_leader_log("committed"), _NOT_CORE, explain=explain.history_lost("committed"),
        fast=compiled.history_in_leader_compiled("committed"),
    ),
    Property(
        "committed-stored", "always",
        "every record ever committed is still in the log of at least one replica: the data exists somewhere",
        _kafka, _stored, _NOT_CORE, explain=explain.committed_gone, fast=compiled.committed_stored_compiled,
    ),
    Property(
        "acked-survive", "always", "every record acknowledged to the producer is in the current leader's log",
        lambda c: _kafka(c) and c.acks != "0", _in_leader_log("acked"), "--acks 0 acknowledges nothing",
        explain=explain.history_lost("acked"), fast=compiled.history_in_leader_compiled("acked"),
    ),
    Property(
        "read-within-hwm", "always",
        "what a consumer can read (below a believed leader's HWM) stays in the leader's log",
        lambda c: _kafka(c) and c.consumer, _in_leader_log("readable"), "the consumer is off",
        explain=explain.history_lost("readable"), fast=compiled.history_in_leader_compiled("readable"),
    ),
    Property(
        "record-committed", "sometimes", "some record gets committed (the bounds leave room for replication)",
        _kafka, _some("committed"), _NOT_CORE, explain=explain.committed_witness,
    ),
    Property(
        "leader-failover", "sometimes",
        "a broker takes over as true leader holding a committed record written under an earlier leader",
        _kafka, _leader_failover, _NOT_CORE, explain=explain.failover_witness, fast=compiled.leader_failover_compiled,
    ),
    Property(
        "consumer-reads", "sometimes", "a consumer can read some record (it fell below a believed leader's HWM)",
        lambda c: _kafka(c) and c.consumer, _some("readable"), "the consumer is off", explain=explain.readable_witness,
    ),
    Property(
        "write-after-crash", "sometimes",
        "a record appended while a broker is down is acknowledged while that broker is still down",
        lambda c: _kafka(c) and c.crashes > 0 and c.acks != "0", _write_after_crash,
        "it needs --crashes of at least 1 and acks 1 or all", explain=explain.write_after_crash_witness,
        fast=compiled.write_after_crash_compiled, question=True,
    ),
    Property(
        "no-duplicates", "always",
        "no record is in the committed log twice: a retry never writes a second copy that gets committed",
        retrying, delivery.no_duplicates, _NO_RETRIES, explain=delivery.duplicate_found,
    ),
    Property(
        "in-order", "always",
        "the committed log holds the producer's records in the order it sent them (each record's first copy)",
        retrying, delivery.in_order, _NO_RETRIES, explain=delivery.reordering_found,
    ),
    Property(
        "producer-retries", "sometimes", "the producer sends a record again after its request timed out",
        retrying, delivery.retried, _NO_RETRIES, explain=delivery.retry_witness,
    ),
    Property(
        "duplicate-dropped", "sometimes",
        "a leader recognises a retried record as one it has (DuplicateSequence) and does not write it again",
        idempotence, delivery.duplicate_dropped, "the producer is not idempotent, or never retries",
        explain=delivery.duplicate_dropped_witness,
    ),
    Property(
        "no-skipped-records", "always",
        "the consumer passes over no record: neither its committed offset nor an offset reset (auto.offset.reset) "
        "moves it past a record it has not processed, across consumer crashes",
        offsets, delivery.none_skipped, _NO_GROUP, explain=delivery.skipped_found,
    ),
    Property(
        "processed-once", "always", "the consumer processes no record twice, across consumer crashes",
        offsets, delivery.processed_once, _NO_GROUP, explain=delivery.reprocessed_found,
    ),
    Property(
        "consumer-restarts", "sometimes", "the consumer crashes and restarts from its committed offset",
        consumer_crashes, delivery.consumer_restarted, "--consumer-crashes 0", explain=delivery.restart_witness,
    ),
    Property(
        "can-recover", "always",
        "the partition can always take writes again without a person stepping in: from every reachable state, "
        "a state with a live leader whose ISR meets min.insync.replicas, every member up (acks=all), can be reached",
        _kafka, _writable, _NOT_CORE, explain=explain.stuck, beyond=_out_of_epochs, hopeless=_too_few_brokers,
        fast=compiled.writable_compiled,
    ),
    Property(
        "rejoins-isr", "always",
        "a live replica outside the ISR of a partition with a leader eventually rejoins it, in every run where "
        "no further fault happens and the brokers and the controller do their part (weak fairness)",
        _kafka, _live_in_isr, _NOT_CORE, explain=explain.outside_isr, beyond=_out_of_epochs, trigger=_live_outside_isr,
    ),
    Property(
        "hwm-progress", "always",
        "with every replica up, the leader's high watermark eventually reaches its log end, in every run where no "
        "further fault happens and the brokers and the controller do their part (weak fairness)",
        _kafka, _hwm_at_log_end, _NOT_CORE, explain=explain.hwm_stalls, beyond=_out_of_epochs, trigger=_all_up,
    ),
)

BY_NAME = {p.name: p for p in PROPERTIES}

# hand-written per-state forms of the definitions that are no property's own ``holds`` (those
# are ``Property.fast``): what the scalar kernel evaluates on every state for the graph
# properties (compiled.py)
FAST_DEFINITIONS: dict[Callable[[Any, Any], Any], Callable[[ReplicationModel], Predicate]] = {
    _live_outside_isr: compiled.live_outside_isr_compiled,
    _live_in_isr: compiled.live_in_isr_compiled,
    _all_up: compiled.all_up_compiled,
    _hwm_at_log_end: compiled.hwm_at_log_end_compiled,
    _out_of_epochs: compiled.out_of_epochs_compiled,
}


_FAST_FORMS = {**{p.holds: p.fast for p in PROPERTIES if p.fast is not None}, **FAST_DEFINITIONS}


def per_state(model: Any, definition: Callable[[Any, Any], Any]) -> Predicate:
    """A definition (a property's ``holds``, trigger or bound) as a predicate over packed
    states: its hand-written form where there is one."""
    fast = _FAST_FORMS.get(definition)
    if fast is not None and isinstance(model, ReplicationModel):
        return fast(model)
    return state_predicate(model.layout, definition)
NAMES = tuple(BY_NAME)


class UnknownProperty(ValueError):
    pass


GRAPH_ENGINES = ("bfs",)  # the engines that keep the explored state graph


def select(config: ModelConfig, names: list[str] | tuple[str, ...] | None = None, engine: str = "bfs") -> list[Property]:
    """The properties to check: the named ones (validated), else every state property that
    applies (graph properties need the whole graph kept: they are checked when named)."""
    if not names:
        return [p for p in PROPERTIES if p.applies(config) and not p.graph]
    chosen = []
    for name in names:
        prop = BY_NAME.get(name)
        if prop is None:
            raise UnknownProperty(f"unknown property {name!r}; known: {', '.join(NAMES)}")
        if not prop.applies(config):
            why = _NOT_CORE if config.core else prop.why_not or "not available here"
            raise UnknownProperty(f"property {name!r} does not apply to this configuration ({why})")
        if prop.graph and engine not in GRAPH_ENGINES:
            raise UnknownProperty(f"property {name!r} is decided over the explored state graph, which only --engine "
                                  f"{' or '.join(GRAPH_ENGINES)} keeps: the {engine} engine does not check it")
        if prop not in chosen:
            chosen.append(prop)
    return chosen
