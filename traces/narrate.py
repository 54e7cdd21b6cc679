"""Kafka words for steps and violations: what an engineer reads in a counterexample."""

from __future__ import annotations

from dataclasses import dataclass

from isrcheck.model import Action, PartitionState, Record

from .trace import Trace


def fmt_isr(isr: frozenset[int]) -> str:
    return "{" + ", ".join(str(r) for r in sorted(isr)) + "}"


def fmt_log(ps: PartitionState, r: int) -> str:
    return "[" + " ".join(str(x) for x in ps.replicas[r].log) + "]"


def describe_step(before: PartitionState, action: Action, after: PartitionState) -> str:
    """One sentence for one step, in the words of Kafka's operators."""
    a = action.args
    name = action.name
    if name == "ControllerElectLeader":
        return f"controller elects broker {a['leader']} leader at epoch {after.quorum.leader_epoch} (ISR {fmt_isr(after.quorum.isr)})"
    if name == "ControllerUncleanElect":
        return (
            f"controller elects out-of-sync broker {a['leader']} leader at epoch {after.quorum.leader_epoch}: "
            f"unclean election, ISR reset to {fmt_isr(after.quorum.isr)}"
        )
    if name == "ControllerFailover":
        return (
            f"controller sees leader broker {before.quorum.leader} fail and elects broker {a['leader']} "
            f"at epoch {after.quorum.leader_epoch} (ISR {fmt_isr(after.quorum.isr)})"
        )
    if name == "ControllerShrinkIsr":
        r = a["replica"]
        if before.quorum.leader == r:
            return (
                f"controller sees leader broker {r} fail: no leader at epoch {after.quorum.leader_epoch}, "
                f"ISR {fmt_isr(after.quorum.isr)}"
            )
        return f"controller removes broker {r} from the ISR at epoch {after.quorum.leader_epoch}: ISR {fmt_isr(after.quorum.isr)}"
    if name == "BecomeLeader":
        r = a["replica"]
        rs = after.replicas[r]
        return f"broker {r} becomes leader at epoch {a['epoch']} with ISR {fmt_isr(rs.isr)}, keeping its HWM {rs.hw}"
    if name == "BecomeFollower":
        r = a["replica"]
        old, new = before.replicas[r].log, after.replicas[r].log
        dropped = old[len(new):]
        cut = f" and truncates its log to offset {len(new)}" if len(new) < len(old) else ""
        lost = f", dropping {' '.join(str(x) for x in dropped)}" if dropped else ""
        return f"broker {r} becomes follower of broker {a['leader']} at epoch {a['epoch']}{cut}{lost} (HWM {after.replicas[r].hw})"
    if name == "LeaderWrite":
        r = a["replica"]
        rec = after.replicas[r].log[-1]
        acked = " and acknowledges it (acks=1)" if rec.id in after.acked and rec.id not in before.acked else ""
        return f"broker {r}, leader at epoch {after.replicas[r].leader_epoch} in its own view, appends {rec} at offset {len(after.replicas[r].log) - 1}{acked}"
    if name == "LeaderIncHighWatermark":
        r = a["leader"]
        hw = after.replicas[r].hw
        notes = []
        new_acks = sorted(after.acked - before.acked)
        if new_acks:
            notes.append("the producer is told " + ", ".join(f"m{i}" for i in new_acks) + " is written")
        elif _not_enough_after_append(before, r):
            rs = before.replicas[r]
            notes.append(
                f"the producer of {rs.log[rs.hw]} gets NotEnoughReplicasAfterAppend (ISR {fmt_isr(rs.isr)} is "
                f"below min-isr)"
            )
        if after.readable - before.readable and not after.committed - before.committed:
            notes.append(f"consumers may read below it, but it is not committed: broker {r} is not the true leader")
        return f"broker {r} advances its high watermark to {hw}" + "".join(f"; {n}" for n in notes)
    if name == "LeaderShrinkIsr":
        return f"leader broker {a['leader']} removes lagging broker {a['follower']} from the ISR: {fmt_isr(after.quorum.isr)}"
    if name == "LeaderExpandIsr":
        return f"leader broker {a['leader']} adds caught-up broker {a['follower']} to the ISR: {fmt_isr(after.quorum.isr)}"
    if name == "FollowerFetch":
        f = a["follower"]
        rec = after.replicas[f].log[-1]
        return (
            f"broker {f} fetches {rec} from broker {a['leader']} at offset {len(after.replicas[f].log) - 1}; "
            f"its HWM becomes {after.replicas[f].hw}"
        )
    if name == "BrokerCrash":
        r = a["replica"]
        return f"broker {r} crashes; its log {fmt_log(after, r)} and HWM checkpoint {after.replicas[r].hw} stay on disk"
    if name == "BrokerCrashDiskLoss":
        r = a["replica"]
        return f"broker {r} crashes and loses its disk: log {fmt_log(before, r)} is gone"
    if name == "BrokerRestart":
        r = a["replica"]
        # KIP-380: its epoch is one below the controller's, so it applies only newer requests.
        fenced = after.replicas[r].leader_epoch
        ignores = f"; it ignores requests of epoch {fenced} and older" if fenced is not None else ""
        return f"broker {r} restarts with log {fmt_log(after, r)} and HWM {after.replicas[r].hw}{ignores}"
    return str(action)


def _not_enough_after_append(before: PartitionState, r: int) -> bool:
    """The HWM passes a record whose produce waits at this leader, with too small an ISR."""
    rs = before.replicas[r]
    return (
        rs.leader_since is not None
        and rs.hw < len(rs.log)
        and rs.log[rs.hw].epoch >= rs.leader_since
        and rs.log[rs.hw].id not in before.acked
    )


def short_step(before: PartitionState, action: Action, after: PartitionState) -> str:
    """A few words for one step, for a timeline where describe_step's sentence is too long."""
    a = action.args
    name = action.name
    if name == "ControllerElectLeader":
        return f"controller elects broker {a['leader']} (e{after.quorum.leader_epoch})"
    if name == "ControllerUncleanElect":
        return f"controller elects broker {a['leader']} UNCLEAN (e{after.quorum.leader_epoch})"
    if name == "ControllerFailover":
        return f"controller fails over to broker {a['leader']} (e{after.quorum.leader_epoch})"
    if name == "ControllerShrinkIsr":
        if before.quorum.leader == a["replica"]:
            return f"controller: leader {a['replica']} failed (e{after.quorum.leader_epoch})"
        return f"controller drops {a['replica']} from ISR (e{after.quorum.leader_epoch})"
    if name == "BecomeLeader":
        return f"broker {a['replica']} becomes leader at e{a['epoch']}"
    if name == "BecomeFollower":
        r = a["replica"]
        cut = len(after.replicas[r].log) < len(before.replicas[r].log)
        return f"broker {r} follows {a['leader']} at e{a['epoch']}" + (f", truncates to {after.replicas[r].leo}" if cut else "")
    if name == "LeaderWrite":
        return f"broker {a['replica']} appends {after.replicas[a['replica']].log[-1]}"
    if name == "LeaderIncHighWatermark":
        return f"broker {a['leader']} raises HWM to {after.replicas[a['leader']].hw}"
    if name == "LeaderShrinkIsr":
        return f"leader {a['leader']} drops {a['follower']} from ISR"
    if name == "LeaderExpandIsr":
        return f"leader {a['leader']} adds {a['follower']} to ISR"
    if name == "FollowerFetch":
        return f"broker {a['follower']} fetches {after.replicas[a['follower']].log[-1]} from {a['leader']}"
    if name == "BrokerCrash":
        return f"broker {a['replica']} crashes"
    if name == "BrokerCrashDiskLoss":
        return f"broker {a['replica']} crashes, disk lost"
    if name == "BrokerRestart":
        return f"broker {a['replica']} restarts"
    return str(action)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """What a counterexample's last state gets wrong.

    ``records`` are the records lost (or diverging), in offset order: views mark them
    in every step so that a reader can follow a record from its write to its loss.
    ``missing_from`` pairs a broker with a record it should hold and lacks. Both are
    empty for properties about leadership rather than records.
    """

    text: str
    records: tuple[Record, ...] = ()
    missing_from: tuple[tuple[int, Record], ...] = ()


def explain_violation(trace: Trace) -> str:
    """What is wrong in the last state of a counterexample, naming the records and brokers."""
    return diagnose(trace).text


def lost_records(trace: Trace) -> tuple[Record, ...]:
    return diagnose(trace).records


def explain_witness(trace: Trace) -> str:
    """What a witness's last state shows, naming the records and brokers where it can."""
    ps = trace.steps[-1].state
    prop = trace.property_name
    leader = ps.true_leader()
    if prop == "record-committed" and ps.committed:
        return f"{_ids(ps.committed)} is committed: it went below the HWM of the true leader"
    if prop == "consumer-reads" and ps.readable:
        return f"a consumer can read {_ids(ps.readable)}: it is below the HWM of a broker that believes it leads"
    if prop == "leader-failover" and leader is not None:
        earlier = sorted({q.leader for q in ps.requests if q.leader is not None and q.leader != leader})
        return (
            f"broker {leader} is the true leader at epoch {ps.quorum.leader_epoch}, after "
            + ", ".join(f"broker {r}" for r in earlier)
        )
    if prop == "write-after-crash":
        for r, rs in enumerate(ps.replicas):
            late = frozenset(i for i in ps.acked if not rs.alive and i >= (rs.crash_mark or 0))
            if late:
                return f"{_ids(late)}, written after broker {r} crashed, is acknowledged while broker {r} is still down"
    return trace.doc


def _ids(ids: frozenset[int]) -> str:
    return ", ".join(f"m{i}" for i in sorted(ids))


def _record_by_id(trace: Trace, ids: list[int]) -> tuple[Record, ...]:
    """The records with these ids as first written: ids are unique, so the first sighting names it."""
    found: dict[int, Record] = {}
    for step in trace.steps:
        for rs in step.state.replicas:
            for rec in rs.log:
                if rec.id in ids and rec.id not in found:
                    found[rec.id] = rec
    return tuple(found[i] for i in ids if i in found)


def diagnose(trace: Trace) -> Diagnosis:
    """The sentence of explain_violation and the records and brokers it is about, found together."""
    ps = trace.steps[-1].state
    prop = trace.property_name
    leader = ps.true_leader()

    def missing(ids: frozenset[int]) -> list[int]:
        have = {x.id for x in ps.replicas[leader].log} if leader is not None else set()
        return sorted(i for i in ids if i not in have)

    if prop in ("committed-survive", "acked-survive") and leader is not None:
        what = "committed" if prop == "committed-survive" else "acknowledged"
        gone = _record_by_id(trace, missing(ps.committed if prop == "committed-survive" else ps.acked))
        return Diagnosis(
            f"record {', '.join(f'm{r.id}' for r in gone)} was {what}, but broker {leader}, leader at epoch "
            f"{ps.quorum.leader_epoch}, does not have it: its log is {fmt_log(ps, leader)}",
            gone,
            tuple((leader, r) for r in gone),
        )
    if prop == "read-within-hwm":
        gone = _record_by_id(trace, missing(ps.readable))
        return Diagnosis(
            f"a consumer could read {', '.join(f'm{r.id}' for r in gone)} below a leader's HWM, but broker {leader}, "
            f"leader at epoch {ps.quorum.leader_epoch}, no longer has it: its log is {fmt_log(ps, leader)}",
            gone,
            tuple((leader, r) for r in gone) if leader is not None else (),
        )
    if prop in ("weak-isr", "strong-isr"):
        for r1, rs in enumerate(ps.replicas):
            if rs.leader != r1 or rs.hw == 0:
                continue
            members = ps.quorum.isr if prop == "strong-isr" else rs.isr
            for r2 in sorted(members):
                other = ps.replicas[r2].log
                if other[: rs.hw] != rs.log[: rs.hw] or len(rs.log) < rs.hw:
                    which = "quorum" if prop == "strong-isr" else "cached"
                    lacking = tuple(
                        rec for o, rec in enumerate(rs.log[: rs.hw]) if o >= len(other) or other[o] != rec
                    )
                    return Diagnosis(
                        f"broker {r1} believes it leads with HWM {rs.hw} and log {fmt_log(ps, r1)}, but broker {r2} "
                        f"in the {which} ISR {fmt_isr(members)} holds {fmt_log(ps, r2)}",
                        lacking,
                        tuple((r2, rec) for rec in lacking),
                    )
    if prop == "leader-in-isr":
        return Diagnosis(f"leader broker {ps.quorum.leader} is not in the ISR {fmt_isr(ps.quorum.isr)}")
    if prop == "log-matching":
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
    return Diagnosis(trace.doc)
