"""Brokers crash and restart (the Kafka model, ``--crashes`` and ``--disk-loss``).

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
"""

from __future__ import annotations

from .actions import BROKER
from .fields import KAFKA, NONE, alive, crashes, disk_losses, quorum_epoch, restart_fencing
from .words import fmt_log


def _forget(s, x, r: int) -> None:
    """A crash: the in-memory partition state is lost; the crash mark is the next record id."""
    s.leader_epoch[r] = NONE
    s.leader[r] = NONE
    s.isr[r] = x.brokers()
    s.leader_since[r] = NONE
    s.crash_mark[r] = s.next_record_id
    s.crashes = s.crashes + 1


@KAFKA.family(
    params=(BROKER("replica"),),
    when=crashes,
    describe=lambda b, a, p: (
        f"broker {p['replica']} crashes; its log {fmt_log(a, p['replica'])} and HWM checkpoint "
        f"{a.replicas[p['replica']].hw} stay on disk"
    ),
    short=lambda b, a, p: f"broker {p['replica']} crashes",
)
def BrokerCrash(s, x, replica):
    yield s.crashes < s.cfg.crashes
    yield alive(s, replica)
    _forget(s, x, replica)


@KAFKA.family(
    params=(BROKER("replica"),),
    when=disk_losses,
    describe=lambda b, a, p: f"broker {p['replica']} crashes and loses its disk: log {fmt_log(b, p['replica'])} is gone",
    short=lambda b, a, p: f"broker {p['replica']} crashes, disk lost",
)
def BrokerCrashDiskLoss(s, x, replica):
    yield s.crashes < s.cfg.crashes
    yield s.disk_losses < s.cfg.disk_loss
    yield alive(s, replica)
    s.log[replica] = x.prefix(s.log[replica], 0)
    s.hw[replica] = 0
    s.disk_losses = s.disk_losses + 1
    _forget(s, x, replica)


def _restart_words(before, after, a) -> str:
    r = a["replica"]
    fenced_at = after.replicas[r].leader_epoch
    ignores = f"; it ignores requests of epoch {fenced_at} and older" if fenced_at is not None else ""
    return f"broker {r} restarts with log {fmt_log(after, r)} and HWM {after.replicas[r].hw}{ignores}"


@KAFKA.family(
    params=(BROKER("replica"),),
    when=crashes,
    describe=_restart_words,
    short=lambda b, a, p: f"broker {p['replica']} restarts",
)
def BrokerRestart(s, x, replica):
    r, q = replica, s.quorum_isr
    yield x.not_(alive(s, r))
    if restart_fencing(s.cfg):  # the controller has handled the bounce as a failure
        yield x.last_leader(s.requests) != r
        yield x.or_(x.not_(x.has(q, r)), x.only(q, r))
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
