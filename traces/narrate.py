"""Kafka words for steps and violations: what an engineer reads in a counterexample."""

from __future__ import annotations

from isrcheck.model import Action, PartitionState

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
        extra = ""
        if after.readable - before.readable and not after.committed - before.committed:
            extra = " (consumers may read below it; not committed: broker " + str(r) + " is not the true leader)"
        new_acks = sorted(after.acked - before.acked)
        if new_acks:
            extra = "; the producer is told " + ", ".join(f"m{i}" for i in new_acks) + " is written"
        return f"broker {r} advances its high watermark to {hw}{extra}"
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
        epoch = (after.replicas[r].leader_epoch or -1) + 1
        return (
            f"broker {r} restarts with log {fmt_log(after, r)} and HWM {after.replicas[r].hw}; "
            f"it ignores requests older than epoch {max(epoch, 0)}"
        )
    return str(action)


def explain_violation(trace: Trace) -> str:
    """What is wrong in the last state of a counterexample, naming the records and brokers."""
    ps = trace.steps[-1].state
    prop = trace.property_name
    leader = ps.true_leader()

    def missing(ids: frozenset[int]) -> str:
        have = {x.id for x in ps.replicas[leader].log} if leader is not None else set()
        gone = sorted(i for i in ids if i not in have)
        return ", ".join(f"m{i}" for i in gone)

    if prop in ("committed-survive", "acked-survive") and leader is not None:
        what = "committed" if prop == "committed-survive" else "acknowledged"
        ids = ps.committed if prop == "committed-survive" else ps.acked
        return (
            f"record {missing(ids)} was {what}, but broker {leader}, leader at epoch {ps.quorum.leader_epoch}, "
            f"does not have it: its log is {fmt_log(ps, leader)}"
        )
    if prop == "read-within-hwm":
        return (
            f"a consumer could read {missing(ps.readable)} below a leader's HWM, but broker {leader}, "
            f"leader at epoch {ps.quorum.leader_epoch}, no longer has it: its log is {fmt_log(ps, leader)}"
        )
    if prop in ("weak-isr", "strong-isr"):
        for r1, rs in enumerate(ps.replicas):
            if rs.leader != r1 or rs.hw == 0:
                continue
            members = ps.quorum.isr if prop == "strong-isr" else rs.isr
            for r2 in sorted(members):
                if ps.replicas[r2].log[: rs.hw] != rs.log[: rs.hw] or len(rs.log) < rs.hw:
                    which = "quorum" if prop == "strong-isr" else "cached"
                    return (
                        f"broker {r1} believes it leads with HWM {rs.hw} and log {fmt_log(ps, r1)}, but broker {r2} "
                        f"in the {which} ISR {fmt_isr(members)} holds {fmt_log(ps, r2)}"
                    )
    if prop == "leader-in-isr":
        return f"leader broker {ps.quorum.leader} is not in the ISR {fmt_isr(ps.quorum.isr)}"
    if prop == "log-matching":
        n = len(ps.replicas)
        for r1 in range(n):
            for r2 in range(r1 + 1, n):
                h = min(ps.replicas[r1].hw, ps.replicas[r2].hw)
                if ps.replicas[r1].log[:h] != ps.replicas[r2].log[:h] or min(ps.replicas[r1].leo, ps.replicas[r2].leo) < h:
                    return f"brokers {r1} and {r2} disagree below offset {h}: {fmt_log(ps, r1)} and {fmt_log(ps, r2)}"
    return trace.doc
