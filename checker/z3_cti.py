"""A counterexample to induction, in Kafka words.

When k-induction fails, Z3 returns k+1 states: the property holds in the first k,
each step is a real action, and the last state breaks the property. The first
state is (as far as BMC could tell) unreachable; it is what a user needs to see
to write the lemma that rules it out, so it is printed in full, broker by broker.
"""

from __future__ import annotations

from dataclasses import dataclass

from isrcheck.model import Action, PartitionState
from isrcheck.model.words import fmt_isr, fmt_log
from isrcheck.traces.narrate import describe_step


@dataclass(frozen=True)
class InductionCounterexample:
    k: int  # transitions in the failed induction step
    states: tuple[PartitionState, ...]
    actions: tuple[Action, ...]

    def lines(self, property_name: str) -> list[str]:
        out = [
            f"counterexample to {self.k}-induction for {property_name}: from this state, where the property "
            f"holds{' for ' + str(self.k) + ' steps' if self.k > 1 else ''}, it breaks "
            "(the state is unreachable if the property holds: a lemma that excludes it may make induction succeed)"
        ]
        out += ["  " + line for line in describe_state(self.states[0])]
        for i, action in enumerate(self.actions, start=1):
            out.append(f"  {i:>2}. {describe_step(self.states[i - 1], action, self.states[i])}")
        out.append("  then:")
        out += ["  " + line for line in describe_state(self.states[-1])]
        return out


def describe_state(ps: PartitionState) -> list[str]:
    """One line for the controller and one per broker."""
    q = ps.quorum
    leader = f"leader broker {q.leader}" if q.leader is not None else "no leader"
    epoch = f"epoch {q.leader_epoch}" if q.leader_epoch is not None else "no epoch yet"
    requests = "; ".join(
        f"e{req.leader_epoch}: leader {req.leader if req.leader is not None else 'none'} ISR {fmt_isr(req.isr)}"
        for req in ps.requests
    )
    lines = [
        f"controller: {leader} at {epoch}, ISR {fmt_isr(q.isr)}; requests sent: {requests or 'none'}; "
        f"next record id m{ps.next_record_id}"
    ]
    for r, rs in enumerate(ps.replicas):
        if not rs.alive:
            role = f"down since record m{rs.crash_mark}"
        elif rs.leader == r:
            role = f"believes it leads at epoch {rs.leader_epoch} with cached ISR {fmt_isr(rs.isr)}"
        elif rs.leader is not None:
            role = f"follows broker {rs.leader} at epoch {rs.leader_epoch}"
        else:
            at = f" (ignores requests up to epoch {rs.leader_epoch})" if rs.leader_epoch is not None else ""
            role = f"knows no leader{at}"
        lines.append(f"broker {r}: {role}; log {fmt_log(ps, r)}, HWM {rs.hw}")
    history = [
        f"{name} {{{', '.join(f'm{i}' for i in sorted(ids))}}}"
        for name, ids in (("acknowledged", ps.acked), ("committed", ps.committed), ("readable", ps.readable))
        if ids
    ]
    if history:
        lines.append("history: " + "; ".join(history))
    return lines
