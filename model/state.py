"""Readable partition states: what traces, views, properties' references and Z3 use.

The packed int of ``layout.py`` is for the hot path; these frozen dataclasses are
for people and for cross-checks. ``decode`` and ``encode`` are exact inverses.
Leader and epoch use ``None`` where the specification writes None and Nil.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .layout import NONE, Layout


@dataclass(frozen=True, slots=True)
class Record:
    id: int
    epoch: int

    def __str__(self) -> str:
        return f"m{self.id}@e{self.epoch}"


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """What one broker holds: its log on disk and its in-memory view of the partition.

    ``leader_epoch`` of a restarted broker is one below the quorum epoch at its
    restart: it ignores requests addressed to its previous incarnation (KIP-380).
    ``crash_mark`` is the next record id at the moment it crashed (None while alive).
    ``leader_since`` is the epoch in which a believed leader's current leadership began:
    produce requests it appended since then wait in its purgatory for the HWM (kept by
    the Kafka model with acks=all; None otherwise).
    """

    log: tuple[Record, ...]
    hw: int
    leader_epoch: int | None
    leader: int | None
    isr: frozenset[int]
    alive: bool = True
    crash_mark: int | None = None
    leader_since: int | None = None

    @property
    def leo(self) -> int:
        return len(self.log)


@dataclass(frozen=True, slots=True)
class Request:
    """A LeaderAndIsr request; every request carries a fresh leader epoch."""

    leader_epoch: int
    leader: int | None
    isr: frozenset[int]


@dataclass(frozen=True, slots=True)
class QuorumState:
    """The controller's truth (ZooKeeper or KRaft)."""

    leader_epoch: int | None
    leader: int | None
    isr: frozenset[int]


@dataclass(frozen=True, slots=True)
class PartitionState:
    replicas: tuple[ReplicaState, ...]
    quorum: QuorumState
    requests: tuple[Request, ...]
    next_record_id: int
    next_leader_epoch: int
    crashes: int = 0
    disk_losses: int = 0
    acked: frozenset[int] = field(default_factory=frozenset)
    committed: frozenset[int] = field(default_factory=frozenset)
    readable: frozenset[int] = field(default_factory=frozenset)

    def presumes_leadership(self, replica: int) -> bool:
        return self.replicas[replica].leader == replica

    def is_true_leader(self, replica: int) -> bool:
        rs = self.replicas[replica]
        return (
            self.quorum.leader == replica
            and rs.leader == replica
            and rs.leader_epoch == self.quorum.leader_epoch
        )

    def true_leader(self) -> int | None:
        q = self.quorum.leader
        return q if q is not None and self.is_true_leader(q) else None


def _opt(value: int) -> int | None:
    return None if value == NONE else value


def _unopt(value: int | None) -> int:
    return NONE if value is None else value


def _members(mask: int) -> frozenset[int]:
    return frozenset(r for r in range(mask.bit_length()) if mask >> r & 1)


def _mask(members: frozenset[int]) -> int:
    m = 0
    for r in members:
        m |= 1 << r
    return m


def decode(layout: Layout, state: int) -> PartitionState:
    L = layout
    replicas = []
    for r in range(L.rf):
        local = L.local(state, r)
        meta, log = local & L.meta_mask, local >> L.meta_bits
        life = L.meta_life[meta]
        replicas.append(
            ReplicaState(
                log=tuple(Record(L.record_id(c), L.record_epoch(c)) for c in L.logs[log]),
                hw=L.meta_hw[meta],
                leader_epoch=_opt(L.meta_epoch[meta]),
                leader=_opt(L.meta_leader[meta]),
                isr=_members(L.meta_isr[meta]),
                alive=life == 0,
                crash_mark=None if life == 0 else life - 1,
                leader_since=_opt(L.meta_since[meta]),
            )
        )
    next_epoch = L.f_next_epoch.get(state)
    requests = []
    for e in range(next_epoch):
        slot = L.f_slots[e].get(state)
        requests.append(Request(e, _opt(L.slot_leader(slot)), _members(L.slot_isr(slot))))
    quorum_leader = requests[-1].leader if requests else None
    quorum = QuorumState(
        leader_epoch=next_epoch - 1 if next_epoch else None,
        leader=quorum_leader,
        isr=_members(L.f_quorum_isr.get(state)),
    )

    def ids(f) -> frozenset[int]:
        return _members(f.get(state)) if f is not None else frozenset()

    return PartitionState(
        replicas=tuple(replicas),
        quorum=quorum,
        requests=tuple(requests),
        next_record_id=L.f_next_id.get(state),
        next_leader_epoch=next_epoch,
        crashes=L.f_crashes.get(state) if L.f_crashes else 0,
        disk_losses=L.f_disk_losses.get(state) if L.f_disk_losses else 0,
        acked=ids(L.f_acked),
        committed=ids(L.f_committed),
        readable=ids(L.f_readable),
    )


class EncodeError(ValueError):
    """A readable state that this configuration cannot represent."""


def encode(layout: Layout, ps: PartitionState) -> int:
    """The packed int of a readable state; raises EncodeError if a value is out of bounds."""
    L = layout
    if len(ps.replicas) != L.rf:
        raise EncodeError(f"expected {L.rf} replicas, found {len(ps.replicas)}")
    state = 0
    for r, rs in enumerate(ps.replicas):
        codes = []
        for rec in rs.log:
            if not (0 <= rec.id < L.max_records and 0 <= rec.epoch <= L.max_epoch):
                raise EncodeError(f"record {rec} of replica {r} is outside the bounds")
            codes.append(L.record(rec.id, rec.epoch))
        log = L.log_index.get(tuple(codes))
        if log is None:
            raise EncodeError(f"log of replica {r} is longer than the log size {L.log_size}")
        life = 0 if rs.alive else 1 + (rs.crash_mark or 0)
        _check(0 <= rs.hw <= L.log_size, f"hw {rs.hw} of replica {r}")
        _check(-1 <= _unopt(rs.leader_epoch) <= L.max_epoch, f"leader epoch of replica {r}")
        _check(-1 <= _unopt(rs.leader) < L.rf, f"leader of replica {r}")
        _check(all(0 <= m < L.rf for m in rs.isr), f"ISR of replica {r}")
        _check(life < L.n_life, f"liveness of replica {r}")
        _check(-1 <= _unopt(rs.leader_since) < L.n_since - 1, f"leadership start of replica {r}")
        meta = L.meta_of(rs.hw, _unopt(rs.leader_epoch), _unopt(rs.leader), _mask(rs.isr), life, _unopt(rs.leader_since))
        state |= ((log << L.meta_bits) | meta) << L.local_shift[r]
    _check(0 <= ps.next_record_id <= L.max_records, "next record id")
    _check(0 <= ps.next_leader_epoch <= L.max_epoch + 1, "next leader epoch")
    _check(len(ps.requests) == ps.next_leader_epoch, "one request per leader epoch")
    last = ps.requests[-1] if ps.requests else None
    _check(
        ps.quorum.leader == (last.leader if last else None)
        and ps.quorum.leader_epoch == (last.leader_epoch if last else None),
        "the quorum's leader and epoch (they are those of the newest request)",
    )
    state |= ps.next_record_id << L.f_next_id.shift
    state |= ps.next_leader_epoch << L.f_next_epoch.shift
    state |= _mask(ps.quorum.isr) << L.f_quorum_isr.shift
    for e, req in enumerate(ps.requests):
        _check(req.leader_epoch == e, "requests ordered by epoch")
        state |= L.slot_value(_unopt(req.leader), _mask(req.isr)) << L.f_slots[e].shift
    for f, value in (
        (L.f_crashes, ps.crashes),
        (L.f_disk_losses, ps.disk_losses),
        (L.f_acked, _mask(ps.acked)),
        (L.f_committed, _mask(ps.committed)),
        (L.f_readable, _mask(ps.readable)),
    ):
        if f is None:
            _check(not value, "a history or counter that this configuration does not keep")
        else:
            _check(0 <= value <= f.mask, "a counter or history mask")
            state |= value << f.shift
    return state


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise EncodeError(f"{what} is out of range for this configuration")
