"""What a leader does: append a record, advance its high watermark, shrink or expand the ISR.

A replica that believes it leads appends a record stamped with its epoch and raises
its HWM by one once every member of its cached ISR has the record there. Only the
true leader changes the ISR (the quorum's and its cached copy at once): it removes a
follower that lacks its last record and adds one that has caught up.

``kip-320`` fences these by epoch: the HWM advances only through followers of the
same epoch, and a follower rejoins only once the leader's HWM has reached the start of
its epoch. The published machine's fenced HWM step checks leadership only through the
cached ISR's members, so a replica whose cached ISR is empty could raise its own; in
Kafka only a leader does (the Kafka model's rule). Kafka 2.1+ adds a follower to the
ISR once its log end has reached the HWM and the start of the leader's epoch
(``Partition.isFollowerInSync``).

The producer (Kafka model): with ``acks=all`` a leader whose cached ISR is below
``min.insync.replicas`` rejects the write (NotEnoughReplicas); a record appended during
the current leadership is acknowledged at the step the HWM passes it if the ISR then has
``min.insync.replicas`` members (Kafka's delayed produce; else the producer gets
NotEnoughReplicasAfterAppend). ``acks=1`` acknowledges at the append.

Kafka 3.7 (KAFKA-15583, apache/kafka PR 14594) makes min ISR strict: the leader does
not advance its HWM while its ISR has fewer than ``min(min.insync.replicas, replica
count)`` members (``Partition.maybeIncrementLeaderHW``), whatever the producer's acks;
the model validates min-isr against rf, so the minimum is ``--min-isr``.

KRaft (KIP-497's AlterIsr, AlterPartition since 3.3): the leader does not write an ISR
change; it sends it to the controller and waits, one at a time. Until the controller
applies it (``ControllerAlterPartition``) the leader counts its maximal ISR, its ISR
plus a follower it asked to add (a follower it asked to remove still counts), for the
HWM and for NotEnoughReplicasAfterAppend; strict min ISR and the append's
NotEnoughReplicas count the ISR itself (``Partition.maybeIncrementLeaderHW``,
``checkEnoughReplicasReachOffset``). A newer LeaderAndIsr (KRaft's metadata) or a crash
drops a pending request; the controller refuses one from a leader of an older epoch.
"""

from __future__ import annotations

from .actions import BROKER, ENVIRONMENT
from .fields import (KAFKA, NONE, alter_partition, effective_min_isr, fenced, idempotence, kafka, producer_requests,
                     retrying, strict_min_isr)
from .readings import alive, expose, in_maximal_isr, leads, set_quorum_isr, true_leader_is
from .words import elr_change, fmt_ids, fmt_isr


def in_sequence(s, x, log, rid):
    """An idempotent leader appends record ``rid`` (a sequence number): right after its log's last
    record, or to a log with none of the producer's (no producer state: any sequence)."""
    end = x.length(log)
    return x.or_(end == 0, x.id_at(log, end - 1) == rid - 1)


def enough_replicas(s, x, r):
    """acks=all: a leader whose ISR is below min.insync.replicas refuses a write (NotEnoughReplicas),
    a first send or a retry alike."""
    return x.size(s.isr[r]) >= effective_min_isr(s.cfg)


def may_send(s, x) -> list:
    """The guard's conjuncts for a new record: a free in-flight slot, and no retry queued ahead."""
    out = [x.size(s.inflight) < s.cfg.max_in_flight]
    if retrying(s.cfg):
        out.append(x.empty(s.failed))
    return out


def answered(s, x, rid, cond) -> None:
    """Where ``cond`` holds, the producer hears that record ``rid`` is written: acknowledged, no
    longer in flight (``rid`` may be a state value: one conditional drop per record id)."""
    s.acked = x.put(s.acked, rid, cond)
    if s.keeps("inflight"):
        left = s.inflight
        for k in range(s.cfg.max_records):
            left = x.ite(x.and_(cond, rid == k), x.drop(left, k), left)
        s.inflight = left


def _write_words(before, after, a) -> str:
    r = a["replica"]
    rec = after.replicas[r].log[-1]
    acked = " and acknowledges it (acks=1)" if rec.id in after.acked and rec.id not in before.acked else ""
    return (
        f"broker {r}, leader at epoch {after.replicas[r].leader_epoch} in its own view, appends {rec} at offset "
        f"{len(after.replicas[r].log) - 1}{acked}"
    )


@KAFKA.family(
    params=(BROKER("replica"),),
    role=ENVIRONMENT,  # the producer writes, or not
    describe=_write_words,
    short=lambda b, a, p: f"broker {p['replica']} appends {a.replicas[p['replica']].log[-1]}",
)
def LeaderWrite(s, x, replica):
    r, cfg = replica, s.cfg
    nid = s.next_record_id
    yield leads(s, r)
    if cfg.max_records is not None:
        yield nid < cfg.max_records
    yield x.length(s.log[r]) < cfg.logsize
    if kafka(cfg) and cfg.acks == "all":
        yield enough_replicas(s, x, r)
    tracked = producer_requests(cfg)
    if tracked:
        yield from may_send(s, x)
    if idempotence(cfg):
        yield in_sequence(s, x, s.log[r], nid)  # else OutOfOrderSequence
    log = x.append(s.log[r], nid, s.leader_epoch[r])
    s.log[r] = log
    s.next_record_id = nid + 1
    if tracked:
        s.inflight = x.put(s.inflight, nid)  # acks=1: the answer reaches the producer next (ProducerAcknowledged)
    elif kafka(cfg) and cfg.acks == "1":
        s.acked = x.put(s.acked, nid)
    expose(s, x, x.ids_below(log, s.hw[r]), true_leader_is(s, x, r))


def _hw_words(before, after, a) -> str:
    r = a["leader"]
    notes = []
    new_acks = after.acked - before.acked
    rs = before.replicas[r]
    if new_acks:
        notes.append(f"the producer is told {fmt_ids(new_acks)} is written")
    elif rs.leader_since is not None and rs.hw < len(rs.log) and rs.log[rs.hw].epoch >= rs.leader_since and rs.log[rs.hw].id not in before.acked:
        rid = rs.log[rs.hw].id
        if rid not in before.inflight and (rid in before.failed or before.retries):  # (a retrying producer's)
            notes.append(f"the producer no longer waits for {rs.log[rs.hw]}: its request timed out")
        else:
            notes.append(f"the producer of {rs.log[rs.hw]} gets NotEnoughReplicasAfterAppend (ISR {fmt_isr(rs.isr)} is below min-isr)")
    if after.readable - before.readable and not after.committed - before.committed:
        notes.append(f"consumers may read below it, but it is not committed: broker {r} is not the true leader")
    return f"broker {r} advances its high watermark to {after.replicas[r].hw}" + "".join(f"; {n}" for n in notes)


@KAFKA.family(
    params=(BROKER("leader"),),
    describe=_hw_words,
    short=lambda b, a, p: f"broker {p['leader']} raises HWM to {a.replicas[p['leader']].hw}",
)
def LeaderIncHighWatermark(s, x, leader):
    r, cfg = leader, s.cfg
    lead = leads(s, r)
    if kafka(cfg) or not fenced(cfg):
        yield lead  # only a believed leader advances its HWM (the published fenced step: see above)
    if strict_min_isr(cfg):
        yield x.size(s.isr[r]) >= effective_min_isr(cfg)  # Kafka 3.7+: not while under min ISR, whatever the acks
    h, log = s.hw[r], s.log[r]
    end = x.length(log)
    if fenced(cfg):
        yield h < end
        for f in range(cfg.rf):
            same_epoch = x.and_(lead, s.leader[f] == r, s.leader_epoch[f] == s.leader_epoch[r], h < x.length(s.log[f]))
            yield x.implies(in_maximal_isr(s, x, r, f), same_epoch)
    else:
        yield h < cfg.logsize
        for f in range(cfg.rf):
            yield x.implies(x.has(s.isr[r], f), x.and_(s.leader[f] == r, h < x.length(s.log[f])))
    s.hw[r] = h + 1
    if kafka(cfg) and cfg.acks == "all":
        # appended during this leadership: its delayed produce completes (with a smaller ISR
        # the producer gets NotEnoughReplicasAfterAppend instead)
        maximal = x.count(in_maximal_isr(s, x, r, f) for f in range(cfg.rf)) if alter_partition(cfg) else x.size(s.isr[r])
        waiting = x.and_(h < end, x.epoch_at(log, h) >= s.leader_since[r], maximal >= effective_min_isr(cfg))
        if producer_requests(cfg):  # the producer still awaits it (not timed out)
            waiting = x.and_(waiting, x.has(s.inflight, x.id_at(log, h)))
        answered(s, x, x.id_at(log, h), waiting)
    expose(s, x, x.ids_below(log, h + 1), true_leader_is(s, x, r))


def _lagging(s, x, r: int, f: int):
    end, log_f = x.length(s.log[r]), s.log[f]
    if fenced(s.cfg):
        return x.or_(s.leader[f] != r, s.leader_epoch[f] != s.leader_epoch[r], x.length(log_f) < end)
    return x.not_(x.and_(s.leader[f] == r, x.or_(end == 0, end <= x.length(log_f))))


def _caught_up(s, x, r: int, f: int):
    h, log, end, len_f = s.hw[r], s.log[r], x.length(s.log[r]), x.length(s.log[f])
    if fenced(s.cfg) and kafka(s.cfg):
        # Kafka 2.1+: the follower's log end has reached the HWM and the start of the
        # leader's epoch (Partition.isFollowerInSync)
        epoch = s.leader_epoch[r]
        return x.and_(s.leader_epoch[f] == epoch, len_f >= h, len_f >= x.epoch_start(log, epoch))
    if fenced(s.cfg):
        this_epoch = x.or_(h == end, x.and_(h < end, x.epoch_at(log, h) == s.leader_epoch[r]))
        return x.and_(s.leader_epoch[f] == s.leader_epoch[r], x.not_(x.and_(h > 0, h > len_f)), this_epoch)
    return x.or_(h <= 0, x.and_(h <= end, h <= len_f))


def _change_isr(s, x, r: int, f: int, new) -> None:
    """The true leader's ISR change to ``new``, by adding or removing follower f: written at
    once with its cached ISR and the quorum's, no new epoch (with ELR, KIP-966, the
    controller's ELR follows), or sent to the controller as an AlterPartition (KRaft)."""
    if alter_partition(s.cfg):
        s.proposal[r] = f
    else:
        s.isr[r] = new
        set_quorum_isr(s, x, new)


def _ask(after, a) -> str:
    return "asks: " if after.replicas[a["leader"]].proposal is not None else ""


def _isr_words(does: str, ask: str):
    """The narration of an ISR change: ``does`` and ``ask`` say it with broker f, as the
    leader's own write or as its AlterPartition request."""
    def words(before, after, a) -> str:
        r, f = a["leader"], a["follower"]
        if after.replicas[r].proposal is not None:
            return (f"leader broker {r} asks the controller to {ask.format(f=f)} (AlterPartition); "
                    f"its ISR stays {fmt_isr(after.replicas[r].isr)} until then")
        return f"leader broker {r} {does.format(f=f)}: {fmt_isr(after.quorum.isr)}{elr_change(before, after)}"
    return words


@KAFKA.family(
    params=(BROKER("leader"), BROKER("follower")),
    # a live follower of this leader would catch up by fetching: dropping it is the
    # slow-follower fault (replica.lag.time.max.ms passed), not failure handling
    fault_when=lambda s, x, leader, follower: x.and_(alive(s, follower), s.leader[follower] == leader),
    describe=_isr_words("removes lagging broker {f} from the ISR", "remove lagging broker {f} from the ISR"),
    short=lambda b, a, p: f"leader {p['leader']} {_ask(a, p)}drops {p['follower']} from ISR",
)
def LeaderShrinkIsr(s, x, leader, follower):
    yield follower != leader
    yield true_leader_is(s, x, leader)
    yield x.has(s.isr[leader], follower)
    yield _lagging(s, x, leader, follower)
    if alter_partition(s.cfg):
        yield s.proposal[leader] == NONE  # one AlterPartition at a time
    _change_isr(s, x, leader, follower, x.drop(s.isr[leader], follower))


@KAFKA.family(
    params=(BROKER("leader"), BROKER("follower")),
    describe=_isr_words("adds caught-up broker {f} to the ISR", "add caught-up broker {f} to the ISR"),
    short=lambda b, a, p: f"leader {p['leader']} {_ask(a, p)}adds {p['follower']} to ISR",
)
def LeaderExpandIsr(s, x, leader, follower):
    yield true_leader_is(s, x, leader)
    yield x.not_(x.has(s.isr[leader], follower))
    yield s.leader[follower] == leader
    yield _caught_up(s, x, leader, follower)
    if alter_partition(s.cfg):
        yield s.proposal[leader] == NONE  # one AlterPartition at a time
    _change_isr(s, x, leader, follower, x.put(s.isr[leader], follower))


@KAFKA.family(
    params=(BROKER("leader"),),
    when=alter_partition,
    describe=lambda b, a, p: (f"controller applies leader broker {p['leader']}'s AlterPartition: ISR "
                              f"{fmt_isr(a.quorum.isr)}{elr_change(b, a)}"),
    short=lambda b, a, p: f"controller applies {p['leader']}'s AlterPartition",
)
def ControllerAlterPartition(s, x, leader):
    """The controller applies the pending ISR change of the leader of its current epoch (an
    older epoch's is refused: FENCED_LEADER_EPOCH), and the leader learns it (the response,
    or the metadata record): its ISR, the quorum's, no new leader epoch."""
    p, isr = s.proposal[leader], s.isr[leader]
    yield p != NONE
    yield true_leader_is(s, x, leader)
    new = isr
    for f in range(s.cfg.rf):
        new = x.ite(p == f, x.put(x.drop(isr, f), f, x.not_(x.has(isr, f))), new)
    s.isr[leader] = new
    set_quorum_isr(s, x, new)
    s.proposal[leader] = NONE
