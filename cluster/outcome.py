"""Did the trace's violation (or witness) happen on the real cluster? Judged from observations alone.

The model's properties read history variables (what was committed, acknowledged, read)
that a real cluster does not keep, so the harness keeps them from what it sees:
- acknowledged: the producer's delivery reports that succeeded, with their offsets;
- committed: every (offset, record) below the controller's leader's high watermark, each
  time the harness looked (the HWM checkpoint, at most 200 ms old), and every record
  acknowledged under acks=all;
- read: what the consumer was given, at which offset.
At the end the controller's leader's log (its segment files) is the partition's data: a
record acknowledged or committed that is not in it at its offset is lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from isrcheck.traces import Trace


@dataclass
class Observations:
    acked: dict[int, int | None] = field(default_factory=dict)  # record id -> offset (None: acks=0)
    committed: set[tuple[int, int]] = field(default_factory=set)  # (offset, record id)
    leaders: list[int | None] = field(default_factory=list)  # the controller's leader, each time looked
    read: list[tuple[int, int]] = field(default_factory=list)  # (offset, record id) the consumer was given
    kills: int = 0
    acked_after_kill: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Verdict:
    reproduced: bool | None  # None: the property is not one a real cluster's observations decide
    sentence: str
    lost_acked: list[int]
    lost_committed: list[int]
    leader: int | None
    logs: dict[int, list[tuple[int, int]]]


def _missing(entries: dict[int, int | None], log: list[tuple[int, int]]) -> list[int]:
    """Records not in ``log`` at their offset (anywhere, when the offset is unknown)."""
    ids = [rid for rid, _ in log]
    out = []
    for rid, off in sorted(entries.items()):
        there = rid in ids if off is None else (off < len(ids) and ids[off] == rid)
        if not there:
            out.append(rid)
    return out


def _fmt(log: list[tuple[int, int]]) -> str:
    return "[" + ", ".join(f"m{r}@e{e}" for r, e in log) + "]"


def judge(trace: Trace, cluster, obs: Observations) -> Verdict:
    q = cluster.quorum()
    leader = q.leader if q is not None else None
    logs = {b: cluster.log(b) for b in range(cluster.spec.rf)}
    final = logs[leader] if leader is not None else []
    committed: dict[int, int | None] = {rid: off for off, rid in obs.committed}
    if trace.config.acks == "all":
        for rid, off in obs.acked.items():
            committed.setdefault(rid, off)
    lost_acked = _missing(obs.acked, final) if leader is not None else []
    lost_committed = _missing(committed, final) if leader is not None else []
    if leader is not None:
        where = f"broker {leader}, the leader at epoch {q.leader_epoch}, has {_fmt(final)}"
    else:
        kept = [f"m{rid} on broker(s) {', '.join(str(b) for b, lg in logs.items() if rid in [r for r, _ in lg]) or 'none'}"
                for rid in sorted(set(committed) | set(obs.acked))]
        where = "the partition has no leader" + (f" (offline, not lost: {'; '.join(kept)})" if kept else "")
    name = trace.property_name
    reproduced: bool | None
    if name == "acked-survive":
        reproduced = bool(lost_acked)
        what = f"acknowledged record(s) {_ids(lost_acked)} lost: {where}" if lost_acked else f"every acknowledged record kept: {where}"
    elif name == "committed-survive":
        reproduced = bool(lost_committed)
        what = (f"committed record(s) {_ids(lost_committed)} lost: {where}" if lost_committed
                else f"every committed record kept: {where}" if committed
                else f"no record was ever committed, so none was lost: {where}")
    elif name == "committed-stored":
        gone = [rid for rid, off in sorted(committed.items()) if all(rid not in [r for r, _ in lg] for lg in logs.values())]
        reproduced = bool(gone)
        what = f"committed record(s) {_ids(gone)} on no broker's disk" if gone else "every committed record is on some broker's disk"
    elif name == "read-within-hwm":
        bad = [(off, rid) for off, rid in obs.read if off >= len(final) or final[off][0] != rid]
        reproduced = bool(bad)
        what = (f"the consumer read {_ids([r for _, r in bad])}, which the leader's log no longer has" if bad
                else "everything the consumer read is in the leader's log")
    elif name == "record-committed":
        reproduced = bool(committed)
        what = f"record(s) {_ids(sorted(committed))} committed" if committed else "no record was committed"
    elif name == "consumer-reads":
        reproduced = bool(obs.read)
        what = f"the consumer read {_ids([r for _, r in obs.read])}" if obs.read else "the consumer read nothing"
    elif name == "leader-failover":
        seen = [b for b in obs.leaders if b is not None]
        moved = any(a != b for a, b in zip(seen, seen[1:]))
        reproduced = moved
        what = "leadership moved from one broker to another" if moved else "leadership never moved"
    elif name == "write-after-crash":
        reproduced = bool(obs.acked_after_kill)
        what = (f"record(s) {_ids(sorted(obs.acked_after_kill))} acknowledged after a crash" if obs.acked_after_kill
                else "no write was acknowledged after a crash")
    else:
        reproduced = None
        what = f"{name} is not decided from a real cluster's observations; {where}"
    if lost_acked and name != "acked-survive":
        what += f"; acknowledged record(s) {_ids(lost_acked)} lost"
    return Verdict(reproduced, what, lost_acked, lost_committed, leader, logs)


def _ids(ids) -> str:
    return ", ".join(f"m{r}" for r in ids)
