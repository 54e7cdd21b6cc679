"""Readings derived from a state, shared by the families and the properties on every backend.

Each is written once against the operations interface (``ops.py``): who is up, who
believes it leads, who is the true leader, the controller's ISR and ELR changes, the
history fields a HWM advance feeds. Split from ``fields.py``, which declares the state
these read.
"""

from __future__ import annotations

from typing import Any

from .fields import NONE, effective_min_isr, unflushed


def alive(s: Any, r: int) -> Any:
    """Broker r is up (always, where crashes are off)."""
    return s.memo(("alive", r), lambda: s.crash_mark[r] < 0)


def leads(s: Any, r: int) -> Any:
    """Broker r believes it leads."""
    return s.memo(("leads", r), lambda: s.leader[r] == r)


def behind(s: Any, x: Any, r: int, epoch: Any) -> Any:
    """Broker r has not applied the request of this epoch (or any later one)."""
    return s.memo(("behind", r, epoch), lambda: s.leader_epoch[r] < epoch)


def anyone_behind(s: Any, x: Any, epoch: Any) -> Any:
    """Some broker has not applied the request of this epoch: the states where it can be
    applied at all (most states have applied most requests, so this is selective)."""
    return s.memo(("anyone_behind", epoch), lambda: x.any_(behind(s, x, r, epoch) for r in range(s.cfg.rf)))


def quorum_leader(s: Any, x: Any) -> Any:
    return s.memo("quorum_leader", lambda: x.last_leader(s.requests))


def quorum_epoch(s: Any, x: Any) -> Any:
    return s.memo("quorum_epoch", lambda: x.sent(s.requests) - 1)


def true_leader_is(s: Any, x: Any, r: int) -> Any:
    """Broker r is the true leader: the quorum's leader, having applied the quorum's epoch."""
    return s.memo(
        ("true_leader", r),
        lambda: x.and_(quorum_leader(s, x) == r, s.leader[r] == r, s.leader_epoch[r] == quorum_epoch(s, x)),
    )


def truncate(s: Any, x: Any, r: int, length: Any) -> None:
    """Broker r's log cut to ``length`` records; its flushed prefix is cut with it."""
    s.log[r] = x.prefix(s.log[r], length)
    if unflushed(s.cfg):
        s.flushed[r] = x.min(s.flushed[r], length)


def can_elect(s: Any, x: Any) -> Any:
    """An epoch is left for a new LeaderAndIsr request (no bound in the unbounded mode)."""
    bound = s.cfg.max_leader_epoch
    return True if bound is None else s.memo("can_elect", lambda: x.sent(s.requests) <= bound)


def in_maximal_isr(s: Any, x: Any, r: int, f: int) -> Any:
    """Broker f is in leader r's maximal ISR: its ISR, plus a follower its pending
    AlterPartition adds (a pending removal still counts; ``Partition.maximalIsr``)."""
    if not s.keeps("proposal"):
        return x.has(s.isr[r], f)
    return x.or_(x.has(s.isr[r], f), s.proposal[r] == f)


def set_quorum_isr(s: Any, x: Any, new: Any) -> None:
    """The controller's ISR becomes ``new``; with ELR (KIP-966) the eligible leader replicas
    follow it as ``PartitionChangeBuilder.maybePopulateTargetElr`` has them: none while the
    ISR has min ISR members, else the old ELR and ISR less the new ISR."""
    old = s.quorum_isr
    s.quorum_isr = new
    if s.keeps("elr"):
        below = x.size(new) < effective_min_isr(s.cfg)
        candidates = x.union(s.elr, old)
        kept = x.brokers()
        for b in range(s.cfg.rf):
            kept = x.put(kept, b, x.and_(below, x.has(candidates, b), x.not_(x.has(new, b))))
        s.elr = kept


def last_known_leader_is(s: Any, x: Any, b: int) -> Any:
    """With ELR: broker b led when a change first emptied the ISR (``lastKnownElr``, which
    KIP-966's code keeps as the last leader). Only a controller request empties the ISR, and
    none follows while it stays empty, so b is the leader of the request before the newest,
    or, where that request named no leader, its sole ISR member: Kafka elects a leaderless
    partition's live ISR member in the same change (and creates a partition with a leader),
    so the member removed last had led in Kafka's order of the same events."""
    R = s.requests

    def reading() -> Any:
        before = x.sent(R) - 2
        leader = x.leader_of(R, before)
        return x.and_(x.sent(R) >= 2, x.or_(leader == b, x.and_(leader == NONE, x.only(x.isr_of(R, before), b))))

    return s.memo(("last_known_leader", b), reading)


def expose(s: Any, x: Any, ids: Any, by_true_leader: Any) -> None:
    """Record ids now below a believed leader's HWM: readable by some consumer, and
    committed when that leader is the true leader (the history fields, where kept)."""
    if s.keeps("readable"):
        s.readable = x.union(s.readable, ids)
    if s.keeps("committed"):
        s.committed = x.ite(by_true_leader, x.union(s.committed, ids), s.committed)
