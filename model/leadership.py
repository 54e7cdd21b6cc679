"""A replica applies a newer LeaderAndIsr request: it becomes leader, or follower and truncates.

A replica may apply any request whose epoch is above its own (requests can be lost,
delayed and reordered); it takes the request's leader, epoch and ISR. A new leader
keeps its HWM. A new follower truncates its log by the protocol revision's rule:

* ``hw-truncation`` (before Kafka 0.11): to its own HWM;
* ``kip-101`` (0.11 to 1.x): to where the leader's log says its last epoch ends
  (OffsetsForLeaderEpoch), falling back to its HWM when the leader cannot say;
* ``kip-279`` (2.0) and ``kip-320`` (2.1+): to one past the last offset at which both
  logs hold the identical record; ``kip-320`` also needs the leader to have applied
  the same epoch (epoch fencing).

A truncation point past the follower's log end disables the action (the published
specification's rule). In the Kafka model a crashed broker applies nothing, the
truncation point needs an answer from a live leader (every revision but
hw-truncation, which asks nobody), a new leadership starts with an empty purgatory
and a follower's pending produce requests fail (NotLeaderOrFollower).
"""

from __future__ import annotations

from .actions import BROKER, EPOCH
from .config import Revision
from .fields import KAFKA, NONE, fenced, kafka
from .readings import alive, anyone_behind, behind, expose, leads, quorum_epoch, truncate
from .words import fmt_isr


def _leader_words(before, after, a) -> str:
    rs = after.replicas[a["replica"]]
    return f"broker {a['replica']} becomes leader at epoch {a['epoch']} with ISR {fmt_isr(rs.isr)}, keeping its HWM {rs.hw}"


@KAFKA.family(
    params=(BROKER("replica"), EPOCH()),
    emit=lambda a: (-a["epoch"], a["replica"]),  # newest request first
    describe=_leader_words,
    short=lambda b, a, p: f"broker {p['replica']} becomes leader at e{p['epoch']}",
)
def BecomeLeader(s, x, replica, epoch):
    r, R = replica, s.requests
    yield anyone_behind(s, x, epoch)
    yield behind(s, x, r, epoch)
    yield epoch < x.sent(R)
    yield x.leader_of(R, epoch) == r
    yield alive(s, r)
    was_leading = leads(s, r)
    log, hw = s.log[r], s.hw[r]
    s.leader_epoch[r] = epoch
    s.leader[r] = r
    s.isr[r] = x.isr_of(R, epoch)
    if s.keeps("leader_since"):  # a new leadership: its purgatory starts empty
        s.leader_since[r] = x.ite(was_leading, s.leader_since[r], epoch)
    s.proposal[r] = NONE  # KRaft's metadata replaces a pending AlterPartition
    expose(s, x, x.ids_below(log, hw), x.and_(x.last_leader(R) == r, epoch == quorum_epoch(s, x)))


def truncation_point(s, x, r: int, leader: int):
    """Where a new follower r of ``leader`` truncates its log, by the revision's rule."""
    rev = s.cfg.revision
    log_r, log_l = s.log[r], s.log[leader]
    if rev is Revision.HW_TRUNCATION:
        return s.hw[r]
    if rev is Revision.KIP_101:
        end = x.epoch_end(log_l, x.last_epoch(log_r))
        return x.ite(x.length(log_r) == 0, 0, x.ite(end < 0, s.hw[r], end))
    return x.matching_end(log_l, log_r)


def _follower_words(before, after, a) -> str:
    r = a["replica"]
    old, new = before.replicas[r].log, after.replicas[r].log
    dropped = old[len(new):]
    cut = f" and truncates its log to offset {len(new)}" if len(new) < len(old) else ""
    lost = f", dropping {' '.join(str(x) for x in dropped)}" if dropped else ""
    return f"broker {r} becomes follower of broker {a['leader']} at epoch {a['epoch']}{cut}{lost} (HWM {after.replicas[r].hw})"


def _follower_short(before, after, a) -> str:
    r = a["replica"]
    cut = len(after.replicas[r].log) < len(before.replicas[r].log)
    return f"broker {r} follows {a['leader']} at e{a['epoch']}" + (f", truncates to {after.replicas[r].leo}" if cut else "")


@KAFKA.family(
    params=(BROKER("replica"), BROKER("leader"), EPOCH()),
    emit=lambda a: (-a["epoch"], a["replica"], a["leader"]),  # newest request first
    describe=_follower_words,
    short=_follower_short,
)
def BecomeFollower(s, x, replica, leader, epoch):
    r, R = replica, s.requests
    yield r != leader
    yield anyone_behind(s, x, epoch)
    yield behind(s, x, r, epoch)
    yield epoch < x.sent(R)
    yield x.leader_of(R, epoch) == leader
    yield alive(s, r)
    if fenced(s.cfg):
        yield x.and_(s.leader[leader] == leader, s.leader_epoch[leader] == epoch)
    if kafka(s.cfg) and s.cfg.revision is not Revision.HW_TRUNCATION:
        yield alive(s, leader)  # the truncation point needs an answer from the leader
    to = truncation_point(s, x, r, leader)
    yield to <= x.length(s.log[r])  # a truncation past the log end is disabled
    s.hw[r] = x.min(to, s.hw[r])
    truncate(s, x, r, to)
    s.leader_epoch[r] = epoch
    s.leader[r] = leader
    s.isr[r] = x.isr_of(R, epoch)
    s.leader_since[r] = NONE  # NotLeaderOrFollower: the pending produce requests fail
    s.proposal[r] = NONE
