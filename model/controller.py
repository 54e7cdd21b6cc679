"""The controller's actions: elect a leader, take a replica out of the ISR, fail over, elect uncleanly.

Each sends one LeaderAndIsr request with a fresh epoch (the quorum's new state). The
published specification has the first two, removal from the ISR being its
abstraction of failure detection (which may come late or never). The Kafka model adds
Kafka's rules: crashed brokers are not elected; a failed leader's partition goes
leaderless only when no other ISR member is alive, otherwise ``ControllerFailover``
elects one in the same request; the last ISR member stays in the ISR (ZooKeeper-era
Kafka, which is what makes the last-replica-standing loss possible); with unclean
election on, a live replica outside the ISR may be elected once no live ISR member
remains, the deposed last member counting as down.

KRaft with eligible leader replicas (KIP-966, ``--elr``; ``PartitionChangeBuilder`` in
apache/kafka): every ISR change also updates the ELR (``readings.set_quorum_isr``); the last
ISR member leaves the ISR like any other, for the ELR; when the ISR is empty a live ELR
member is elected cleanly, its ISR itself alone; when both are empty the last known
leader is elected, whatever ``unclean.leader.election.enable`` says (an unclean election:
``canElectLastKnownLeader``); an unclean election clears the ELR.
"""

from __future__ import annotations

from .actions import BROKER
from .fields import KAFKA, NONE, eligible_leaders, kafka, unclean_elections
from .readings import alive, can_elect, last_known_leader_is, set_quorum_isr
from .words import elr_change, fmt_isr


def _live_leader(s, x):
    """The quorum's leader is up: moving leadership away from it is a fault (its ZooKeeper
    session lost), not the controller's failure handling."""
    old = x.last_leader(s.requests)
    return x.any_(x.and_(old == b, alive(s, b)) for b in range(s.cfg.rf))


def _elected(before, after, a) -> str:
    source = " from the eligible leader replicas" if a["leader"] in before.elr else ""
    return (f"controller elects broker {a['leader']}{source} leader at epoch {after.quorum.leader_epoch} "
            f"(ISR {fmt_isr(after.quorum.isr)}){elr_change(before, after)}")


@KAFKA.family(
    params=(BROKER("leader"),),
    fault_when=lambda s, x, leader: _live_leader(s, x),
    describe=_elected,
    short=lambda b, a, p: f"controller elects broker {p['leader']} (e{a.quorum.leader_epoch})",
)
def ControllerElectLeader(s, x, leader):
    R, q = s.requests, s.quorum_isr
    elr = eligible_leaders(s.cfg)
    yield can_elect(s, x)
    yield x.or_(x.has(q, leader), x.and_(x.empty(q), x.has(s.elr, leader))) if elr else x.has(q, leader)
    yield x.last_leader(R) != leader
    yield alive(s, leader)
    if elr:  # elected from the ELR: the ISR is the new leader alone (PartitionChangeBuilder.tryElection)
        q = x.ite(x.empty(q), x.brokers(leader), q)
        s.quorum_isr = q
        s.elr = x.drop(s.elr, leader)
    s.requests = x.send(R, leader, q)


def _shrink_words(before, after, a) -> str:
    r = a["replica"]
    elr = elr_change(before, after)
    if before.quorum.leader == r:
        return (f"controller sees leader broker {r} fail: no leader at epoch {after.quorum.leader_epoch}, "
                f"ISR {fmt_isr(after.quorum.isr)}{elr}")
    return f"controller removes broker {r} from the ISR at epoch {after.quorum.leader_epoch}: ISR {fmt_isr(after.quorum.isr)}{elr}"


def _shrink_short(before, after, a) -> str:
    if before.quorum.leader == a["replica"]:
        return f"controller: leader {a['replica']} failed (e{after.quorum.leader_epoch})"
    return f"controller drops {a['replica']} from ISR (e{after.quorum.leader_epoch})"


@KAFKA.family(params=(BROKER("replica"),), describe=_shrink_words, short=_shrink_short,
              fault_when=lambda s, x, replica: alive(s, replica))  # a live broker dropped: a lost session
def ControllerShrinkIsr(s, x, replica):
    r, R, q = replica, s.requests, s.quorum_isr
    leads = x.last_leader(R) == r
    elr = eligible_leaders(s.cfg)
    yield can_elect(s, x)
    if kafka(s.cfg):
        others_down = x.all_(x.implies(x.has(q, m), x.not_(alive(s, m))) for m in range(s.cfg.rf) if m != r)
        last = False if elr else x.only(q, r)  # with ELR the last member leaves too, for the ELR
        follower_leaves = x.and_(x.not_(leads), x.has(q, r), x.not_(last))
        yield x.or_(x.and_(leads, others_down), follower_leaves)
    else:
        yield x.or_(leads, x.has(q, r))
    new = x.drop(q, r) if elr else x.put(x.drop(q, r), r, x.and_(leads, x.only(q, r)))  # else a failed sole member stays
    set_quorum_isr(s, x, new)
    s.requests = x.send(R, x.ite(leads, NONE, x.last_leader(R)), new)


@KAFKA.family(
    params=(BROKER("leader"),),
    when=kafka,
    fault_when=lambda s, x, leader: _live_leader(s, x),
    describe=lambda b, a, p: (
        f"controller sees leader broker {b.quorum.leader} fail and elects broker {p['leader']} "
        f"at epoch {a.quorum.leader_epoch} (ISR {fmt_isr(a.quorum.isr)}){elr_change(b, a)}"
    ),
    short=lambda b, a, p: f"controller fails over to broker {p['leader']} (e{a.quorum.leader_epoch})",
)
def ControllerFailover(s, x, leader):
    """Kafka's failover: the controller sees the leader fail and, in the same request,
    elects a live ISR member and drops the old leader from the ISR."""
    R, q = s.requests, s.quorum_isr
    old = x.last_leader(R)
    yield can_elect(s, x)
    yield old != NONE
    yield old != leader
    yield x.has(q, leader)
    yield alive(s, leader)
    new = x.drop(q, old)
    set_quorum_isr(s, x, new)
    s.requests = x.send(R, leader, new)


def _deposed(s, x, m: int):
    """Broker m is the last ISR member that the controller has just failed as leader: it
    counts as down, so an unclean election may pass it by."""
    R = s.requests
    return x.and_(
        x.sent(R) >= 2, x.last_leader(R) == NONE, x.leader_of(R, x.sent(R) - 2) == m, x.only(s.quorum_isr, m)
    )


@KAFKA.family(
    params=(BROKER("leader"),),
    when=unclean_elections,
    describe=lambda b, a, p: (
        f"controller elects out-of-sync broker {p['leader']} leader at epoch {a.quorum.leader_epoch}: "
        f"unclean election, ISR reset to {fmt_isr(a.quorum.isr)}"
    ),
    short=lambda b, a, p: f"controller elects broker {p['leader']} UNCLEAN (e{a.quorum.leader_epoch})",
)
def ControllerUncleanElect(s, x, leader):
    q, rf = s.quorum_isr, s.cfg.rf
    yield can_elect(s, x)
    yield alive(s, leader)
    yield x.all_(x.implies(x.has(q, m), x.or_(x.not_(alive(s, m)), _deposed(s, x, m))) for m in range(rf))
    yield x.not_(_deposed(s, x, leader))
    if eligible_leaders(s.cfg):
        # a clean choice comes first: the fencing of the dead ISR members that an unclean
        # election waits for moves them to the ELR, and a live ELR member is then elected,
        # or the last known leader when the ELR is empty too
        yield x.all_(x.implies(x.has(s.elr, m), x.not_(alive(s, m))) for m in range(rf))
        yield x.not_(x.and_(x.empty(q), x.empty(s.elr), _last_leader_alive(s, x)))
        s.elr = x.brokers()
    new = x.brokers(leader)
    s.quorum_isr = new
    s.requests = x.send(s.requests, leader, new)


def _last_leader_alive(s, x):
    return x.any_(x.and_(last_known_leader_is(s, x, b), alive(s, b)) for b in range(s.cfg.rf))


@KAFKA.family(
    params=(BROKER("leader"),),
    when=eligible_leaders,
    describe=lambda b, a, p: (
        f"controller elects broker {p['leader']}, the last known leader, at epoch {a.quorum.leader_epoch}: "
        f"ISR and ELR are empty, so KIP-966 elects it uncleanly, whatever unclean.leader.election.enable says"
    ),
    short=lambda b, a, p: f"controller elects last leader {p['leader']} UNCLEAN (e{a.quorum.leader_epoch})",
)
def ControllerElectLastLeader(s, x, leader):
    """KIP-966's last known leader (``PartitionChangeBuilder.canElectLastKnownLeader``, live
    candidates only since KAFKA-19522): the ISR itself alone, as after an unclean election."""
    q, R = s.quorum_isr, s.requests
    yield can_elect(s, x)
    yield x.empty(q)
    yield x.empty(s.elr)
    yield last_known_leader_is(s, x, leader)
    yield alive(s, leader)
    new = x.brokers(leader)
    s.quorum_isr = new
    s.requests = x.send(R, leader, new)
