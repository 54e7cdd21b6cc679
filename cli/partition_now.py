"""A topic's partitions as a describe or a live cluster shows them: which to start the check
from (``--partition``), and what each one's state says by itself, before any search.

The check itself starts from the model's states that show the partitions (``model.now``);
these lines are the plain readings a Kafka engineer makes of a describe line (under min
ISR, offline, who must come back), printed under the answer so that the answer reads as
"from here".
"""

from __future__ import annotations

from isrcheck.model.fields import effective_min_isr
from isrcheck.model.now import PartitionNow, parse_now

from .common import UsageFailure

NEW = "new"  # --partition new: a new partition with the topic's settings, its partition lines aside


def choose(partitions: list[PartitionNow], which: str | None) -> tuple[list[PartitionNow], list[str]]:
    """The partitions to start from, one per state shape (the same leader, ISR, ELR and brokers
    down, as places in Replicas: the model's symmetry makes them one start), and the notes."""
    if which == NEW or not partitions:
        if which is not None and which != NEW:
            raise UsageFailure(f"--partition {which}: no partition lines were read (give a describe output "
                               "or --bootstrap-server)")
        return [], []
    if which is not None:
        picked = [p for p in partitions if str(p.partition) == which]
        if not picked:
            raise UsageFailure(f"--partition {which}: the topic's partitions are "
                               f"{', '.join(str(p.partition) for p in partitions)} (or 'new')")
        return picked[:1], []
    shapes: dict[tuple, list[PartitionNow]] = {}
    for p in partitions:
        shapes.setdefault(_shape(p), []).append(p)
    notes = [f"{_partitions(same[1:])} in the same state as partition {same[0].partition}, its brokers aside: "
             f"checked once" for same in shapes.values() if len(same) > 1]
    return [same[0] for same in shapes.values()], notes


def _partitions(ps: list[PartitionNow]) -> str:
    return f"partition {ps[0].partition} is" if len(ps) == 1 else f"partitions {', '.join(str(p.partition) for p in ps)} are"


def _shape(p: PartitionNow) -> tuple:
    index = p.index
    return (None if p.leader is None else index(p.leader), p.members(p.isr),
            None if p.elr is None else p.members(p.elr), None if p.down is None else p.members(p.down), len(p.replicas))


def scope(config) -> str:
    """Where the answer starts from: '' for a new partition."""
    if config.now is None:
        return ""
    shown = [str(p.partition) for p in parse_now(config.now)]
    return f"from partition {shown[0]}'s state now" if len(shown) == 1 else \
        f"from the states of partitions {', '.join(shown)} now"


def readings(config) -> list[str]:
    """What each partition's line says by itself, in one sentence each."""
    return [] if config.now is None else [reading(p, config) for p in parse_now(config.now)]


def reading(p: PartitionNow, config) -> str:
    down = f"; broker{_s(p.down)} {_ids(p.down)} {'is' if len(p.down) == 1 else 'are'} down" if p.down else ""
    head = f"partition {p.partition} (leader {p.leader if p.leader is not None else 'none'}, ISR {_ids(p.isr) or 'empty'})"
    if p.leader is None:
        back = p.elr or p.isr
        what = (f"until broker{_s(back)} {_or(back)} return{'s' if len(back) == 1 else ''}" if back
                else "until a replica with its records returns")
        unclean = "; unclean leader election may elect another replica and lose what only the last leader had" \
            if config.unclean_election else ""
        return f"{head} has no leader now: it takes no writes and serves no reads {what}{unclean}{down}"
    need = effective_min_isr(config)
    if need > len(p.replicas):
        return (f"{head} can never have min.insync.replicas={config.min_isr} in sync with {len(p.replicas)} replicas: "
                f"Kafka {config.kafka_version} refuses every acks=all write{down}")
    setting = f"min.insync.replicas={config.min_isr}" + (f", capped at the {need} replicas" if need < config.min_isr else "")
    missing = need - len(p.isr)
    behind = [b for b in p.replicas if b not in p.isr]
    if missing > 0:
        until = f"broker {behind[0]} rejoins" if len(behind) == 1 else \
            f"{missing} of brokers {_ids(behind)} rejoin{'s' if missing == 1 else ''}"
        writes = f"acks=all writes fail until {until} the ISR" if config.acks == "all" else \
            f"acks={config.acks} writes still succeed, on fewer copies than min.insync.replicas asks"
        return f"{head} is under min ISR now ({len(p.isr)} of {setting}): {writes}{down}"
    if missing == 0 and behind:
        return (f"{head} is at min ISR now: acks=all writes stop if one more replica leaves the ISR "
                f"(broker{_s(behind)} {_ids(behind)} out of it){down}") if config.acks == "all" else \
            f"{head} is at min ISR now, broker{_s(behind)} {_ids(behind)} out of it{down}"
    if behind:
        return f"{head} is above min ISR now; broker{_s(behind)} {_ids(behind)} out of the ISR{down}"
    return f"{head} has every replica in the ISR now{down}"


def _ids(ids) -> str:
    return ", ".join(str(b) for b in ids)


def _or(ids) -> str:
    ids = [str(b) for b in ids]
    return ids[0] if len(ids) == 1 else f"{', '.join(ids[:-1])} or {ids[-1]}"


def _s(ids) -> str:
    return "s" if len(ids) > 1 else ""
