"""A consumer group member: fetch, process, commit, crash (``--commit``, ``--consumer-crashes``).

One consumer reads the partition from its leader, below the leader's high watermark,
one record at a time (the leader as the controller has it: since KIP-320 a fetch to a
broker that missed a newer leader epoch is fenced, FENCED_LEADER_EPOCH or
NOT_LEADER_OR_FOLLOWER, and the consumer looks the leader up again): it fetches the record at its position,
processes it, and commits its position either after processing (at least once) or
before (at most once), as the "Message Delivery Semantics" section of Kafka's design
documentation describes. Committed offsets are durable: the offsets topic is assumed to
be replicated safely, so a commit is never lost or undone. A consumer crash loses the
record in hand and the position; the restarted consumer continues from the committed
offset, or, without one, where ``auto.offset.reset`` says: ``earliest`` (offset 0) or
``latest`` (the leader's high watermark: what ListOffsets answers a read_uncommitted
consumer, ``Partition.fetchOffsetForTimestamp``, once that HWM has reached the start of
the leader's epoch: before, OFFSET_NOT_AVAILABLE, KIP-207). A position past the leader's
log end (after a truncation) is OFFSET_OUT_OF_RANGE, reset the same way. Not modelled:
KIP-320's truncation detection on the consumer (OffsetsForLeaderEpoch after a leader
change), so a record an unclean leader writes below the consumer's position is passed
over without counting as skipped; an unclean election loses records anyway
(``committed-survive``).

The history fields are what the properties read: ``processed``, ``reprocessed`` (a
record processed again: after a crash before the commit, or a second copy the producer
wrote) and ``skipped`` (a record an offset passed without processing it: committed
before a crash, or jumped over by a reset to latest).
"""

from __future__ import annotations

from .actions import BROKER, ENVIRONMENT, FAULT
from .fields import KAFKA, NONE, consumer_crashes, offsets
from .readings import true_leader_is

def _before(cfg) -> bool:
    return cfg.commit == "before"


@KAFKA.family(
    params=(BROKER("replica"),),
    when=offsets,
    role=ENVIRONMENT,
    describe=lambda b, a, p: (f"the consumer fetches m{a.holding} at offset {b.position} from broker "
                              f"{p['replica']} (below its high watermark {a.replicas[p['replica']].hw})"),
    short=lambda b, a, p: f"consumer fetches m{a.holding} from {p['replica']}",
)
def ConsumerFetch(s, x, replica):
    r, p = replica, s.position
    yield s.holding == NONE
    yield p != NONE
    yield p < s.hw[r]
    yield true_leader_is(s, x, r)
    s.holding = x.id_at(s.log[r], p)
    s.position = p + 1


def _process_words(b, a, p) -> str:
    again = " again: it was processed before" if b.holding in b.processed else ""
    return f"the consumer processes m{b.holding}{again}"


@KAFKA.family(
    params=(),
    when=offsets,
    role=ENVIRONMENT,
    describe=_process_words,
    short=lambda b, a, p: f"consumer processes m{b.holding}" + (" again" if b.holding in b.processed else ""),
)
def ConsumerProcess(s, x):
    h = s.holding
    yield h != NONE
    if _before(s.cfg):
        yield s.commit_offset == s.position  # at most once: the offset is committed first
    s.reprocessed = x.put(s.reprocessed, h, x.has(s.processed, h))
    s.processed = x.put(s.processed, h)
    s.holding = NONE


def _commit_words(b, a, p) -> str:
    when = f"before processing m{a.holding}" if a.holding is not None else "after processing"
    return f"the consumer commits offset {a.commit_offset} ({when})"


@KAFKA.family(
    params=(),
    when=offsets,
    role=ENVIRONMENT,
    describe=_commit_words,
    short=lambda b, a, p: f"consumer commits offset {a.commit_offset}",
)
def ConsumerCommit(s, x):
    p = s.position
    yield p != NONE
    yield s.commit_offset != p
    if _before(s.cfg):
        yield s.holding != NONE  # the record just fetched, before it is processed
    else:
        yield s.holding == NONE  # what it fetched is processed
    s.commit_offset = p


def _crash_words(b, a, p) -> str:
    lost = a.skipped - b.skipped
    skip = f"; m{min(lost)}, committed but not processed, is never processed" if lost else ""
    held = f", losing m{b.holding} in hand" if b.holding is not None else ""
    if b.commit_offset is not None:
        start = f"it restarts from committed offset {b.commit_offset}"
    elif a.position is None:
        start = "it has no committed offset: auto.offset.reset=latest decides where it starts"
    else:
        start = "it has no committed offset: auto.offset.reset=earliest restarts it at offset 0"
    return f"the consumer crashes{held}; {start}{skip}"


@KAFKA.family(
    params=(),
    when=consumer_crashes,
    role=FAULT,
    describe=_crash_words,
    short=lambda b, a, p: "consumer crashes",
)
def ConsumerCrash(s, x):
    cfg = s.cfg
    yield s.consumer_crashes < cfg.consumer_crashes
    h, c = s.holding, s.commit_offset
    # at most once: the record in hand is below the committed offset and will not be fetched again
    s.skipped = x.put(s.skipped, h, x.and_(h != NONE, c == s.position, x.not_(x.has(s.processed, h))))
    s.holding = NONE
    s.position = x.ite(c == NONE, 0 if cfg.auto_offset_reset == "earliest" else NONE, c)
    s.consumer_crashes = s.consumer_crashes + 1


def _reset_words(b, a, p) -> str:
    r = p["replica"]
    why = "no committed offset" if b.position is None else f"offset {b.position} is past broker {r}'s log end"
    jumped = a.skipped - b.skipped
    skip = f": {', '.join(f'm{i}' for i in sorted(jumped))} never processed" if jumped else ""
    return f"{why}: auto.offset.reset moves the consumer to offset {a.position}{skip}"


@KAFKA.family(
    params=(BROKER("replica"),),
    when=offsets,
    role=ENVIRONMENT,
    describe=_reset_words,
    short=lambda b, a, p: f"consumer resets to offset {a.position}",
)
def ConsumerOffsetReset(s, x, replica):
    """No committed offset (``latest``: where to start is asked of the leader), or
    OFFSET_OUT_OF_RANGE: the position is past the leader's log end."""
    r, p, log = replica, s.position, s.log[replica]
    yield s.holding == NONE
    yield x.or_(p == NONE, p > x.length(log))
    yield true_leader_is(s, x, r)
    if s.cfg.auto_offset_reset == "earliest":
        s.position = 0
        return
    h = s.hw[r]
    # KIP-207: a leader whose HWM lags behind its epoch's start answers OFFSET_NOT_AVAILABLE
    yield h >= x.epoch_start(log, s.leader_epoch[r])
    below = x.ids_below(log, h)
    skipped = s.skipped
    for k in range(s.cfg.max_records):
        skipped = x.put(skipped, k, x.and_(x.has(below, k), x.not_(x.has(s.processed, k))))
    s.skipped = skipped
    s.position = h


__all__ = ["ConsumerFetch"]
