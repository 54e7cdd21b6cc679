"""What a trace's last state shows, per property, in Kafka words.

Each property record names its explanation: for a counterexample, the sentence that
says what broke and the records it is about (lost or diverging records, and which
broker lacks which), so that views can follow a record from its write to its loss;
for a witness, what it shows. Each function takes the trace's readable states, in
order (their records' first sightings name the lost records).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from isrcheck.model import Record
from isrcheck.model.words import fmt_ids, fmt_isr, fmt_log


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """``records``: the records lost (or diverging), in offset order; ``missing_from``
    pairs a broker with a record it should hold and lacks. Both are empty for
    properties about leadership rather than records, and for witnesses."""

    text: str
    records: tuple[Record, ...] = ()
    missing_from: tuple[tuple[int, Record], ...] = ()


Explain = Callable[[Sequence[Any]], Diagnosis | None]


def _first_written(states: Sequence[Any], ids: list[int]) -> tuple[Record, ...]:
    """The records with these ids as first written: ids are unique, so the first sighting names it."""
    found: dict[int, Record] = {}
    for ps in states:
        for rs in ps.replicas:
            for rec in rs.log:
                if rec.id in ids and rec.id not in found:
                    found[rec.id] = rec
    return tuple(found[i] for i in ids if i in found)


def history_lost(history: str) -> Explain:
    """A committed, acknowledged or readable record that the true leader lacks."""
    what = {"committed": "was committed", "acked": "was acknowledged"}.get(history)

    def explain(states: Sequence[Any]) -> Diagnosis | None:
        ps = states[-1]
        leader = ps.true_leader()
        have = {x.id for x in ps.replicas[leader].log} if leader is not None else set()
        gone = _first_written(states, sorted(i for i in getattr(ps, history) if i not in have))
        names = ", ".join(f"m{r.id}" for r in gone)
        blame = tuple((leader, r) for r in gone) if leader is not None else ()
        at = f"broker {leader}, leader at epoch {ps.quorum.leader_epoch}"
        if what is not None:
            if leader is None:
                return None
            text = f"record {names} {what}, but {at}, does not have it: its log is {fmt_log(ps, leader)}"
        else:
            log = fmt_log(ps, leader) if leader is not None else "[]"
            text = f"a consumer could read {names} below a leader's HWM, but {at}, no longer has it: its log is {log}"
        return Diagnosis(text, gone, blame)

    return explain


def committed_gone(states: Sequence[Any]) -> Diagnosis | None:
    """committed-stored: a committed record that no replica's log holds any more."""
    ps = states[-1]
    held = {rec.id for rs in ps.replicas for rec in rs.log}
    gone = _first_written(states, sorted(i for i in ps.committed if i not in held))
    if not gone:
        return None
    logs = "; ".join(f"broker {r}: {fmt_log(ps, r)}" for r in range(len(ps.replicas)))
    names = ", ".join(f"m{r.id}" for r in gone)
    text = f"record {names} was committed, but no replica's log holds it any more, so no election can bring it back ({logs})"
    return Diagnosis(text, gone, tuple((r, rec) for rec in gone for r in range(len(ps.replicas))))


def isr_broken(strong: bool) -> Explain:
    """weak-isr (the cached ISR) and strong-isr (the quorum's): a believed leader's records
    below its HWM that a member lacks."""

    def explain(states: Sequence[Any]) -> Diagnosis | None:
        ps = states[-1]
        for r1, rs in enumerate(ps.replicas):
            if rs.leader != r1 or rs.hw == 0:
                continue
            members = ps.quorum.isr if strong else rs.isr
            for r2 in sorted(members):
                other = ps.replicas[r2].log
                if other[: rs.hw] != rs.log[: rs.hw] or len(rs.log) < rs.hw:
                    which = "quorum" if strong else "cached"
                    lacking = tuple(rec for o, rec in enumerate(rs.log[: rs.hw]) if o >= len(other) or other[o] != rec)
                    return Diagnosis(
                        f"broker {r1} believes it leads with HWM {rs.hw} and log {fmt_log(ps, r1)}, but broker {r2} "
                        f"in the {which} ISR {fmt_isr(members)} holds {fmt_log(ps, r2)}",
                        lacking,
                        tuple((r2, rec) for rec in lacking),
                    )
        return None

    return explain


def leader_outside_isr(states: Sequence[Any]) -> Diagnosis | None:
    ps = states[-1]
    return Diagnosis(f"leader broker {ps.quorum.leader} is not in the ISR {fmt_isr(ps.quorum.isr)}")


def logs_disagree(states: Sequence[Any]) -> Diagnosis | None:
    ps = states[-1]
    n = len(ps.replicas)
    for r1 in range(n):
        for r2 in range(r1 + 1, n):
            a, b = ps.replicas[r1].log, ps.replicas[r2].log
            h = min(ps.replicas[r1].hw, ps.replicas[r2].hw)
            if a[:h] != b[:h] or min(len(a), len(b)) < h:
                differ = [o for o in range(h) if o >= len(a) or o >= len(b) or a[o] != b[o]]
                records = tuple(log[o] for o in differ for log in (a, b) if o < len(log))
                return Diagnosis(
                    f"brokers {r1} and {r2} disagree below offset {h}: {fmt_log(ps, r1)} and {fmt_log(ps, r2)}",
                    records,
                )
    return None


def committed_witness(states: Sequence[Any]) -> Diagnosis | None:
    ps = states[-1]
    if not ps.committed:
        return None
    return Diagnosis(f"{fmt_ids(ps.committed)} is committed: it went below the HWM of the true leader")


def readable_witness(states: Sequence[Any]) -> Diagnosis | None:
    ps = states[-1]
    if not ps.readable:
        return None
    return Diagnosis(f"a consumer can read {fmt_ids(ps.readable)}: it is below the HWM of a broker that believes it leads")


def failover_witness(states: Sequence[Any]) -> Diagnosis | None:
    ps = states[-1]
    leader = ps.true_leader()
    if leader is None:
        return None
    earlier = sorted({q.leader for q in ps.requests if q.leader is not None and q.leader != leader})
    return Diagnosis(
        f"broker {leader} is the true leader at epoch {ps.quorum.leader_epoch}, after "
        + ", ".join(f"broker {r}" for r in earlier)
    )


def write_after_crash_witness(states: Sequence[Any]) -> Diagnosis | None:
    ps = states[-1]
    for r, rs in enumerate(ps.replicas):
        late = frozenset(i for i in ps.acked if not rs.alive and i >= (rs.crash_mark or 0))
        if late:
            return Diagnosis(f"{fmt_ids(late)}, written after broker {r} crashed, is acknowledged while broker {r} is still down")
    return None


def stuck(states: Sequence[Any]) -> Diagnosis | None:
    """can-recover: why no step the system can take makes the partition writable again."""
    ps = states[-1]
    down = [r for r, rs in enumerate(ps.replicas) if not rs.alive]
    live = [r for r, rs in enumerate(ps.replicas) if rs.alive]
    if not down:
        return Diagnosis("no step the brokers or the controller can take makes the partition writable again")
    gone = f"{_brokers(down)} {'are' if len(down) > 1 else 'is'} down for good"
    isr, leader = ps.quorum.isr, ps.true_leader()
    if leader is None and isr and all(r in down for r in isr):
        unclean = (f"; only an unclean election could choose {_brokers(live)}, outside the ISR"
                   if live else "; no replica is left to elect")
        return Diagnosis(f"the partition is offline: {gone}, and the ISR {fmt_isr(isr)} has no live member{unclean}")
    left = f"only {_brokers(live)} {'is' if len(live) == 1 else 'are'} left" if live else "no broker is left"
    if leader is not None:
        return Diagnosis(
            f"broker {leader} leads with ISR {fmt_isr(ps.replicas[leader].isr)}, but {gone} and {left}: the ISR "
            "cannot grow back to min.insync.replicas, so acks=all writes get NotEnoughReplicas from now on"
        )
    return Diagnosis(f"{gone} and {left}, too few for min.insync.replicas: no acks=all write can be acknowledged again")


def _brokers(ids: Sequence[int]) -> str:
    names = [str(r) for r in ids]
    return f"broker {names[0]}" if len(names) == 1 else "brokers " + ", ".join(names[:-1]) + f" and {names[-1]}"


def outside_isr(states: Sequence[Any]) -> Diagnosis | None:
    """rejoins-isr: which live replicas stay out of the ISR, and the leader that keeps them out."""
    ps = states[-1]
    isr = ps.quorum.isr
    out = [r for r, rs in enumerate(ps.replicas) if rs.alive and r not in isr]
    if not out:
        return None
    leader = ps.true_leader()
    who = f"broker {leader} leads with ISR {fmt_isr(isr)}" if leader is not None else f"the ISR is {fmt_isr(isr)}"
    believed = [r for r in out if leader is not None and r in ps.replicas[leader].isr]
    if believed:  # the leader's cached ISR has them already: it never adds them back
        who += (f", but believes its ISR is {fmt_isr(ps.replicas[leader].isr)}, so it never adds "
                f"{_brokers(believed)} back")
    verb = "is up but never rejoins" if len(out) == 1 else "are up but never rejoin"
    return Diagnosis(f"{who}; {_brokers(out)} {verb} the controller's ISR")


def hwm_stalls(states: Sequence[Any]) -> Diagnosis | None:
    """hwm-progress: where the high watermark stays, and what it lags."""
    ps = states[-1]
    leader = ps.true_leader()
    if leader is None:
        return Diagnosis("every broker is up, yet no leader takes over the partition: its high watermark never moves")
    rs = ps.replicas[leader]
    return Diagnosis(f"leader broker {leader}'s high watermark stays at {rs.hw}, below its log end {rs.leo} "
                     f"({fmt_log_of(rs)}), with every broker up")


def fmt_log_of(rs: Any) -> str:
    return " ".join(str(r) for r in rs.log) or "empty"
