"""The named properties: stable names, expectations, one-line docs and predicates.

Each property has two predicates over the same meaning:

* ``reference(state)`` reads a readable ``PartitionState`` and follows the words of
  PROTOCOL.md; it is the definition that tests and the Z3 engine hold the others to;
* ``compile(model)`` returns a predicate over packed ints built from the model's
  tables, for the hot path (``compiled.py``). Tests check that both agree on every
  reachable state of small configurations.

``always`` properties must hold in every reachable state; ``sometimes`` properties
are witnesses that the bounded space is not vacuous (a record is committed, a
leader fails over, a record becomes readable, a write succeeds during an outage).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from isrcheck.model import ModelConfig, PartitionState, ReplicationModel

from .compiled import (
    Predicate,
    history_in_leader_compiled,
    isr_compiled,
    leader_failover_compiled,
    leader_in_isr_compiled,
    log_matching_compiled,
    nonzero_compiled,
    write_after_crash_compiled,
)

Expectation = Literal["always", "sometimes"]


@dataclass(frozen=True)
class Property:
    name: str
    expectation: Expectation
    doc: str
    applies: Callable[[ModelConfig], bool]
    reference: Callable[[PartitionState], bool]
    compile: Callable[[ReplicationModel], Predicate]


# ---- readable definitions ---------------------------------------------------------


def _agree_below(ps: PartitionState, r1: int, r2: int, hw: int) -> bool:
    a, b = ps.replicas[r1].log, ps.replicas[r2].log
    return hw <= len(a) and hw <= len(b) and a[:hw] == b[:hw]


def electable(ps: PartitionState, isr: frozenset[int], strong: bool) -> frozenset[int]:
    """ISR members that could take over: live ones. A crashed broker is not elected, and
    restarts only after the controller removed it from the ISR (KIP-380), unless it is
    the last member, which stays electable (so it counts for strong-isr)."""
    live = frozenset(r for r in isr if ps.replicas[r].alive)
    return isr if strong and len(isr) == 1 else live


def _isr_ref(strong: bool) -> Callable[[PartitionState], bool]:
    def check(ps: PartitionState) -> bool:
        for r1, rs in enumerate(ps.replicas):
            if rs.leader != r1 or rs.hw == 0:
                continue
            members = electable(ps, ps.quorum.isr if strong else rs.isr, strong)
            if not all(_agree_below(ps, r1, r2, rs.hw) for r2 in members):
                return False
        return True

    return check


def _leader_in_isr_ref(ps: PartitionState) -> bool:
    return ps.quorum.leader is None or ps.quorum.leader in ps.quorum.isr


def _log_matching_ref(ps: PartitionState) -> bool:
    n = len(ps.replicas)
    return all(
        _agree_below(ps, r1, r2, min(ps.replicas[r1].hw, ps.replicas[r2].hw))
        for r1 in range(n)
        for r2 in range(r1 + 1, n)
    )


def _in_leader_log(ps: PartitionState, ids: frozenset[int]) -> bool:
    leader = ps.true_leader()
    if leader is None:
        return True
    present = {rec.id for rec in ps.replicas[leader].log}
    return ids <= present


def _committed_survive_ref(ps: PartitionState) -> bool:
    return _in_leader_log(ps, ps.committed)


def _acked_survive_ref(ps: PartitionState) -> bool:
    return _in_leader_log(ps, ps.acked)


def _read_within_hwm_ref(ps: PartitionState) -> bool:
    return _in_leader_log(ps, ps.readable)


def _leader_failover_ref(ps: PartitionState) -> bool:
    leader = ps.true_leader()
    if leader is None:
        return False
    writer = {req.leader_epoch: req.leader for req in ps.requests}
    return any(
        rec.id in ps.committed and writer.get(rec.epoch) != leader for rec in ps.replicas[leader].log
    )


def _write_after_crash_ref(ps: PartitionState) -> bool:
    return any(
        not rs.alive and any(i >= (rs.crash_mark or 0) for i in ps.acked) for rs in ps.replicas
    )


def _kafka(config: ModelConfig) -> bool:
    return not config.core


PROPERTIES: tuple[Property, ...] = (
    Property(
        "weak-isr",
        "always",
        "every believed leader's records below its HWM are on every member of its cached ISR",
        lambda c: True,
        _isr_ref(strong=False),
        isr_compiled(strong=False),
    ),
    Property(
        "strong-isr",
        "always",
        "records below any believed leader's HWM are on every quorum ISR member: committed data survives a clean election",
        lambda c: True,
        _isr_ref(strong=True),
        isr_compiled(strong=True),
    ),
    Property(
        "leader-in-isr",
        "always",
        "the quorum leader, when there is one, is in the quorum ISR",
        lambda c: True,
        _leader_in_isr_ref,
        leader_in_isr_compiled,
    ),
    Property(
        "log-matching",
        "always",
        "any two replicas hold identical records below both of their HWMs",
        _kafka,
        _log_matching_ref,
        log_matching_compiled,
    ),
    Property(
        "committed-survive",
        "always",
        "every record ever committed is in the log of every later leader",
        _kafka,
        _committed_survive_ref,
        history_in_leader_compiled("f_committed"),
    ),
    Property(
        "acked-survive",
        "always",
        "every record acknowledged to the producer is in the current leader's log",
        lambda c: _kafka(c) and c.acks != "0",
        _acked_survive_ref,
        history_in_leader_compiled("f_acked"),
    ),
    Property(
        "read-within-hwm",
        "always",
        "what a consumer can read (below a believed leader's HWM) stays in the leader's log",
        lambda c: _kafka(c) and c.consumer,
        _read_within_hwm_ref,
        history_in_leader_compiled("f_readable"),
    ),
    Property(
        "record-committed",
        "sometimes",
        "some record gets committed (the bounds leave room for replication)",
        _kafka,
        lambda ps: bool(ps.committed),
        nonzero_compiled("f_committed"),
    ),
    Property(
        "leader-failover",
        "sometimes",
        "a broker takes over as true leader holding a committed record written under an earlier leader",
        _kafka,
        _leader_failover_ref,
        leader_failover_compiled,
    ),
    Property(
        "consumer-reads",
        "sometimes",
        "a consumer can read some record (it fell below a believed leader's HWM)",
        lambda c: _kafka(c) and c.consumer,
        lambda ps: bool(ps.readable),
        nonzero_compiled("f_readable"),
    ),
    Property(
        "write-after-crash",
        "sometimes",
        "a record appended while a broker is down is acknowledged while that broker is still down",
        lambda c: _kafka(c) and c.crashes > 0 and c.acks != "0",
        _write_after_crash_ref,
        write_after_crash_compiled,
    ),
)

BY_NAME = {p.name: p for p in PROPERTIES}
NAMES = tuple(BY_NAME)


class UnknownProperty(ValueError):
    pass


def select(config: ModelConfig, names: list[str] | tuple[str, ...] | None = None) -> list[Property]:
    """The properties to check: the named ones (validated), else every one that applies."""
    if not names:
        return [p for p in PROPERTIES if p.applies(config)]
    chosen = []
    for name in names:
        prop = BY_NAME.get(name)
        if prop is None:
            raise UnknownProperty(f"unknown property {name!r}; known: {', '.join(NAMES)}")
        if not prop.applies(config):
            raise UnknownProperty(f"property {name!r} does not apply to this configuration ({_why_not(prop, config)})")
        if prop not in chosen:
            chosen.append(prop)
    return chosen


def _why_not(prop: Property, config: ModelConfig) -> str:
    if config.core:
        return "--core has no producer, consumer or crash history"
    if prop.name == "acked-survive":
        return "--acks 0 acknowledges nothing"
    if prop.name in ("read-within-hwm", "consumer-reads"):
        return "the consumer is off"
    if prop.name == "write-after-crash":
        return "it needs --crashes of at least 1 and acks 1 or all"
    return "not available here"
