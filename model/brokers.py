"""Brokers crash, lose power and restart (the Kafka model: ``--crashes``, ``--disk-loss``, ``--power-loss``).

A crashed broker takes no step: it loses its in-memory partition state (leader, epoch,
cached ISR, purgatory) and keeps what Kafka keeps on disk, its log with the records'
epochs and its HWM checkpoint; with a disk loss (an unclean shutdown that wipes the
disk) it loses those too. Its crash mark, the next record id at the crash, lets the
``write-after-crash`` witness tell later writes apart.

A crashed broker restarts once the controller has handled it as failed: leadership
has moved away and it has left the ISR, unless it is the last member (KIP-380: the
controller treats a bounce as a failure first). Since Kafka 2.2 (KIP-380, broker
epochs) a restarted broker ignores requests addressed to its previous incarnation:
it comes back fenced at one epoch below the quorum's, applies only newer requests, and
so cannot resurrect a stale leadership. Before 2.2 the controller compared broker ids
only and could miss a quick bounce altogether, and brokers took requests of any
generation: a broker restarts whatever the controller has done, having applied no
epoch, so any request still in flight, one addressed to its previous incarnation
included, can make it a leader or a follower again (docs/kafka-versions.md). Its HWM
checkpoint is capped at its log end.

KRaft (KIP-903, 3.5): a restarted broker registers with a new broker epoch, and the
controller refuses an AlterPartition that would add it with the epoch its leader saw
before (INELIGIBLE_REPLICA; the leader rolls back). The restart drops such a request at
once: without it a replaced disk rejoins the ISR empty (KAFKA-14139).

A power loss (``--power-loss``) takes one or several live brokers down in one step, each
keeping only the prefix of its log that reached the disk (``--flush os``: the operating
system writes the page cache back when it chooses, ``OsFlush``); a crash keeps the page
cache. They restart as crashed brokers do.
"""

from __future__ import annotations

from .actions import BROKER, ENVIRONMENT, FAULT, Param
from .fields import (KAFKA, NONE, crashes, disk_losses, eligible_leaders, power_losses, restart_fencing, restarts,
                     stale_epoch_refused, unflushed)
from .readings import alive, quorum_epoch, truncate
from .words import fmt_isr, fmt_log


def _forget(s, x, r: int) -> None:
    """A crash: the in-memory partition state is lost; the crash mark is the next record id."""
    s.leader_epoch[r] = NONE
    s.leader[r] = NONE
    s.isr[r] = x.brokers()
    s.leader_since[r] = NONE
    s.proposal[r] = NONE
    s.crash_mark[r] = s.next_record_id


@KAFKA.family(
    params=(BROKER("replica"),),
    when=crashes,
    role=FAULT,
    describe=lambda b, a, p: (
        f"broker {p['replica']} crashes; its log {fmt_log(a, p['replica'])} and HWM checkpoint "
        f"{a.replicas[p['replica']].hw} stay on disk"
    ),
    short=lambda b, a, p: f"broker {p['replica']} crashes",
)
def BrokerCrash(s, x, replica):
    yield s.crashes < s.cfg.crashes
    yield alive(s, replica)
    s.crashes = s.crashes + 1
    _forget(s, x, replica)


@KAFKA.family(
    params=(BROKER("replica"),),
    when=disk_losses,
    role=FAULT,
    describe=lambda b, a, p: f"broker {p['replica']} crashes and loses its disk: log {fmt_log(b, p['replica'])} is gone",
    short=lambda b, a, p: f"broker {p['replica']} crashes, disk lost",
)
def BrokerCrashDiskLoss(s, x, replica):
    yield s.crashes < s.cfg.crashes
    yield s.disk_losses < s.cfg.disk_loss
    yield alive(s, replica)
    truncate(s, x, replica, 0)
    s.hw[replica] = 0
    s.disk_losses = s.disk_losses + 1
    s.crashes = s.crashes + 1
    _forget(s, x, replica)


def _restart_words(before, after, a) -> str:
    r = a["replica"]
    fenced_at = after.replicas[r].leader_epoch
    ignores = f"; it ignores requests of epoch {fenced_at} and older" if fenced_at is not None else ""
    unclean = (f"; the controller sees an unclean shutdown and removes it from the ELR: {fmt_isr(after.elr)}"
               if r in before.elr else "")
    return f"broker {r} restarts with log {fmt_log(after, r)} and HWM {after.replicas[r].hw}{ignores}{unclean}"


@KAFKA.family(
    params=(BROKER("replica"),),
    when=restarts,
    role=ENVIRONMENT,  # an operator brings it back, or not: no duty of the system
    describe=_restart_words,
    short=lambda b, a, p: f"broker {p['replica']} restarts",
)
def BrokerRestart(s, x, replica):
    r, q = replica, s.quorum_isr
    yield x.not_(alive(s, r))
    if restart_fencing(s.cfg):  # the controller has handled the bounce as a failure
        yield x.last_leader(s.requests) != r
        yield x.not_(x.has(q, r)) if eligible_leaders(s.cfg) else x.or_(x.not_(x.has(q, r)), x.only(q, r))
    s.hw[r] = x.min(s.hw[r], x.length(s.log[r]))
    if restart_fencing(s.cfg):
        qep = quorum_epoch(s, x)
        s.leader_epoch[r] = x.ite(qep > 0, qep - 1, NONE)  # ignores requests of its previous life
    else:
        s.leader_epoch[r] = NONE  # before KIP-380 it may apply a request sent to its previous life
    s.leader[r] = NONE
    s.isr[r] = x.brokers()
    s.leader_since[r] = NONE
    s.crash_mark[r] = NONE
    if s.keeps("elr"):  # no clean-shutdown marker: it may lack what made it eligible (KIP-966)
        s.elr = x.drop(s.elr, r)
    if stale_epoch_refused(s.cfg):  # KIP-903: its new broker epoch makes a pending request to add it ineligible
        for lead in range(s.cfg.rf):
            if lead != r:
                stale = x.and_(s.proposal[lead] == r, x.not_(x.has(s.isr[lead], r)))
                s.proposal[lead] = x.ite(stale, NONE, s.proposal[lead])


def _members(brokers: int, rf: int) -> list[int]:
    return [r for r in range(rf) if brokers >> r & 1]


def _power_words(before, after, a) -> str:
    rf = len(before.replicas)
    members = _members(a["brokers"], rf)
    lost = []
    for r in members:
        gone = before.replicas[r].log[len(after.replicas[r].log):]
        lost.append(f"broker {r} loses {' '.join(map(str, gone))} from its page cache" if gone else f"broker {r} keeps its log")
    if len(members) == 1:
        return f"broker {members[0]} loses power: " + lost[0].replace(f"broker {members[0]} ", "it ", 1)
    names = ", ".join(map(str, members[:-1])) + f" and {members[-1]}"
    return f"brokers {names} lose power at once: " + "; ".join(lost)


@KAFKA.family(
    params=(Param("brokers", lambda cfg: range(1, 1 << cfg.rf)),),  # a set of brokers, as a bit mask
    when=power_losses,
    role=FAULT,
    describe=_power_words,
    short=lambda b, a, p: f"power loss: brokers {', '.join(map(str, _members(p['brokers'], len(b.replicas))))}",
)
def PowerLoss(s, x, brokers):
    """Several brokers lose power in one step (a rack or zone outage): each is down, as
    after a crash, and keeps only what was flushed (all of it with ``--flush always``)."""
    members = _members(brokers, s.cfg.rf)
    yield s.power_losses + len(members) <= s.cfg.power_loss
    for r in members:
        yield alive(s, r)
    for r in members:
        if unflushed(s.cfg):
            s.hw[r] = x.min(s.hw[r], s.flushed[r])  # kept within the log, as a restart would cap it
            truncate(s, x, r, s.flushed[r])
        _forget(s, x, r)
    s.power_losses = s.power_losses + len(members)


@KAFKA.family(
    params=(BROKER("replica"),),
    when=unflushed,
    role=ENVIRONMENT,  # the operating system's choice
    describe=lambda b, a, p: f"the OS writes broker {p['replica']}'s page cache back: its log {fmt_log(a, p['replica'])} is on disk",
    short=lambda b, a, p: f"broker {p['replica']} flushed",
)
def OsFlush(s, x, replica):
    """``--flush os``: the operating system writes the page cache back when it chooses,
    whether the broker process runs or has crashed."""
    yield s.flushed[replica] < x.length(s.log[replica])
    s.flushed[replica] = x.length(s.log[replica])
