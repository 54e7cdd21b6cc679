"""Delivery properties: the producer's records written once and in order, the consumer's processed once.

The committed log is the true leader's log below its high watermark: what consumers
read. Record ids are the order in which the producer sent its records (its sequence
numbers), so a record id twice in the committed log is a duplicate, and a record whose
first copy comes after the first copy of a later record was reordered. A record that a
retry wrote again after a later one (``m0 m1 m0``) is a duplicate, not a reordering:
its first copy is in order.

The consumer's properties read its histories (``model/consumer.py``): a record it
skipped (its committed offset or an offset reset passed it unprocessed) and a record it
processed twice.
"""

from __future__ import annotations

from typing import Any, Sequence

from isrcheck.model.readings import true_leader_is

from .explain import Diagnosis


def _committed(s, x, r: int, o: int):
    """Offset o of broker r's log is committed: r is the true leader and o is below its HWM."""
    return x.and_(true_leader_is(s, x, r), o < s.hw[r])


def no_duplicates(s, x):
    """No record id appears twice in the committed log."""
    twice = []
    for r in range(s.cfg.rf):
        log = s.log[r]
        for j in range(1, s.cfg.logsize):
            same = x.any_(x.id_at(log, i) == x.id_at(log, j) for i in range(j))
            twice.append(x.and_(_committed(s, x, r, j), same))
    return x.not_(x.any_(twice))


def in_order(s, x):
    """In the committed log, each record's first copy comes after the first copy of every record
    sent before it: no offset j holds a first copy of a smaller id than offset i < j holds."""
    swapped = []
    for r in range(s.cfg.rf):
        log = s.log[r]
        for j in range(1, s.cfg.logsize):
            rid = x.id_at(log, j)
            for i in range(j):
                first = x.all_(x.id_at(log, k) != rid for k in range(i))
                swapped.append(x.and_(_committed(s, x, r, j), rid < x.id_at(log, i), first))
    return x.not_(x.any_(swapped))


def retried(s, x):
    """The producer has sent some record again: more retries queued than are still waiting."""
    return x.size(s.failed) < s.retries


def duplicate_dropped(s, x):
    return x.not_(x.empty(s.deduplicated))


def none_skipped(s, x):
    return x.empty(s.skipped)


def processed_once(s, x):
    return x.empty(s.reprocessed)


def consumer_restarted(s, x):
    return s.consumer_crashes > 0


# ---- what a trace's last state shows ------------------------------------------------------------------
def _committed_log(ps: Any) -> tuple[int | None, tuple]:
    leader = ps.true_leader()
    if leader is None:
        return None, ()
    rs = ps.replicas[leader]
    return leader, rs.log[: rs.hw]


def duplicate_found(states: Sequence[Any]) -> Diagnosis | None:
    leader, log = _committed_log(states[-1])
    seen: dict[int, int] = {}
    for o, rec in enumerate(log):
        if rec.id in seen:
            return Diagnosis(f"m{rec.id} is committed twice, at offsets {seen[rec.id]} and {o} of broker {leader}'s "
                             f"log: a retry wrote a second copy of a record the producer had sent before")
        seen[rec.id] = o
    return None


def reordering_found(states: Sequence[Any]) -> Diagnosis | None:
    leader, log = _committed_log(states[-1])
    firsts: list = []
    for rec in log:
        if all(f.id != rec.id for f in firsts):
            firsts.append(rec)
    for a, b in zip(firsts, firsts[1:]):
        if b.id < a.id:
            return Diagnosis(f"broker {leader}'s committed log has m{a.id} before m{b.id}, which the producer sent "
                             f"first: m{b.id} was written by a retry after m{a.id}")
    return None


def retry_witness(states: Sequence[Any]) -> Diagnosis | None:
    return Diagnosis(f"the producer sent a record again after its request timed out ({states[-1].retries} "
                     f"retr{'y' if states[-1].retries == 1 else 'ies'})")


def duplicate_dropped_witness(states: Sequence[Any]) -> Diagnosis | None:
    ids = ", ".join(f"m{i}" for i in sorted(states[-1].deduplicated))
    return Diagnosis(f"a leader recognised the retry of {ids} as a duplicate (DuplicateSequence) and did not write it again")


def _ids(ids) -> str:
    return ", ".join(f"m{i}" for i in sorted(ids))


def skipped_found(states: Sequence[Any]) -> Diagnosis | None:
    ps = states[-1]
    return Diagnosis(f"the consumer will never process {_ids(ps.skipped)}: its committed offset or an offset reset "
                     f"passed {'it' if len(ps.skipped) == 1 else 'them'} without processing")


def reprocessed_found(states: Sequence[Any]) -> Diagnosis | None:
    ps = states[-1]
    return Diagnosis(f"the consumer processed {_ids(ps.reprocessed)} twice")


def restart_witness(states: Sequence[Any]) -> Diagnosis | None:
    return Diagnosis("the consumer crashed and restarted from its committed offset (or auto.offset.reset)")
