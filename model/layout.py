"""The packed encoding of a partition state: one Python int, plus lookup tables.

Why: the successor function and the visited set are the hot path. A state is one
int (hashable, 40 bytes, exact, no collisions); every field is read with a shift
and a mask or a list lookup, and every update is an addition of a delta. Nothing
in here depends on ``hash()`` of strings, so keys are the same in every process.

Layout, low bits first::

    shared fields | replica 0 local | replica 1 local | ...

Shared fields: next record id, quorum ISR, next leader epoch, one LeaderAndIsr
request slot per epoch (leader and ISR; the request set is a sequence ordered by
epoch because every request carries a fresh epoch), and the Kafka features'
counters and history masks. The quorum's leader and epoch are derived: the epoch
is ``next leader epoch - 1`` and the leader is the one named by that request.

A replica local is ``log << META_BITS | meta``: the log is an index into the table
of all logs (tuples of record codes ``id * epochs + epoch``), the meta an index
into a mixed-radix table of (HWM, leader epoch, believed leader, cached ISR, life),
so that changing one field is an addition of ``delta * unit``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from .config import ModelConfig

NONE = -1  # no leader / no epoch (the specification's None and Nil)


def _bits(max_value: int) -> int:
    return max(1, int(max_value).bit_length())


@dataclass(frozen=True)
class Field:
    shift: int
    bits: int

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    def get(self, state: int) -> int:
        return (state >> self.shift) & self.mask


class Layout:
    """Tables and bit positions for one ModelConfig (built once, shared by every state)."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        rf, mr, ls, me = config.rf, config.max_records, config.logsize, config.max_leader_epoch
        self.rf, self.max_records, self.log_size, self.max_epoch = rf, mr, ls, me
        self.kafka = not config.core
        self.all_replicas = (1 << rf) - 1

        # ---- records and logs -------------------------------------------------
        self.n_epochs = me + 1  # record epochs 0..me
        self.n_records = mr * self.n_epochs
        logs: list[tuple[int, ...]] = [()]
        for length in range(1, ls + 1):
            logs.extend(product(range(self.n_records), repeat=length))
        self.logs = logs
        self.log_index = {log: i for i, log in enumerate(logs)}
        n_logs = len(logs)
        self.log_len = [len(g) for g in logs]
        self.log_last_epoch = [g[-1] % self.n_epochs if g else NONE for g in logs]
        # record code at offset o (or -1), flattened [log * ls + o]
        self.log_rec_at = [g[o] if o < len(g) else -1 for g in logs for o in range(ls)]
        # log after appending record code r (or -1 when full), flattened [log * n_records + r]
        self.log_append = [
            self.log_index[g + (r,)] if len(g) < ls else -1 for g in logs for r in range(self.n_records)
        ]
        # log truncated to length t (or -1 when t > len), flattened [log * (ls + 1) + t]
        self.log_trunc = [self.log_index[g[:t]] if t <= len(g) else -1 for g in logs for t in range(ls + 1)]
        # ids present in the first k entries (k clamped to len), flattened [log * (ls + 1) + k]
        self.log_prefix_ids = [
            _id_mask(g[: min(k, len(g))], self.n_epochs) for g in logs for k in range(ls + 1)
        ]
        self.log_ids = [_id_mask(g, self.n_epochs) for g in logs]
        self.n_logs = n_logs

        # ---- replica meta: hw, epoch, leader, isr, life, leading since -----------
        # life: 0 alive; 1 + m crashed, m = next record id at the crash (for write-after-crash)
        # since: the epoch in which a believed leader's current leadership began (its
        # delayed produces wait in its purgatory since then); -1 when not leading. Kept
        # only where acks=all needs it.
        self.n_life = 1 + (mr + 1 if self.kafka and config.crashes > 0 else 0)
        self.n_since = me + 2 if self.kafka and config.acks == "all" else 1
        self.n_isr = 1 << rf
        self.n_leader = rf + 1
        self.n_meta_epoch = me + 2  # -1..me
        self.u_since = 1
        self.u_life = self.n_since
        self.u_isr = self.u_life * self.n_life
        self.u_leader = self.u_isr * self.n_isr
        self.u_epoch = self.u_leader * self.n_leader
        self.u_hw = self.u_epoch * self.n_meta_epoch
        self.n_meta = self.u_hw * (ls + 1)
        self.meta_hw: list[int] = []
        self.meta_epoch: list[int] = []
        self.meta_leader: list[int] = []
        self.meta_isr: list[int] = []
        self.meta_life: list[int] = []
        self.meta_since: list[int] = []
        for hw, ep, ld, isr, life, since in product(
            range(ls + 1),
            range(-1, me + 1),
            range(-1, rf),
            range(self.n_isr),
            range(self.n_life),
            range(-1, self.n_since - 1),
        ):
            self.meta_hw.append(hw)
            self.meta_epoch.append(ep)
            self.meta_leader.append(ld)
            self.meta_isr.append(isr)
            self.meta_life.append(life)
            self.meta_since.append(since)
        self.popcount = [bin(m).count("1") for m in range(1 << max(rf, mr))]

        self.meta_bits = _bits(self.n_meta - 1)
        self.meta_mask = (1 << self.meta_bits) - 1
        self.local_bits = self.meta_bits + _bits(n_logs - 1)
        self.local_mask = (1 << self.local_bits) - 1

        # ---- shared fields ------------------------------------------------------
        shift = 0

        def field(max_value: int) -> Field:
            nonlocal shift
            f = Field(shift, _bits(max_value))
            shift += f.bits
            return f

        # quorum ISR, next epoch and the request slots are adjacent: together they are
        # the controller's state, one key for the successor function's per-quorum cache
        self.f_next_id = field(mr)
        self.f_quorum_isr = field(self.all_replicas)
        self.f_next_epoch = field(me + 1)
        self.slot_bits = _bits((rf + 1) * self.n_isr - 1)
        self.f_slots = [field((rf + 1) * self.n_isr - 1) for _ in range(me + 1)]
        self.controller_shift = self.f_quorum_isr.shift
        self.controller_mask = (1 << (shift - self.controller_shift)) - 1
        self.f_crashes = field(config.crashes) if self.kafka else None
        self.f_disk_losses = field(config.disk_loss) if self.kafka else None
        self.f_acked = field((1 << mr) - 1) if self.kafka else None
        self.f_committed = field((1 << mr) - 1) if self.kafka else None
        self.f_readable = field((1 << mr) - 1) if self.kafka and config.consumer else None
        self.shared_bits = shift
        self.shared_mask = (1 << shift) - 1
        self.local_shift = [shift + r * self.local_bits for r in range(rf)]
        self.state_bits = shift + rf * self.local_bits

    # ---- small helpers used off the hot path ------------------------------------
    def meta_of(self, hw: int, epoch: int, leader: int, isr: int, life: int = 0, since: int = -1) -> int:
        return (
            hw * self.u_hw
            + (epoch + 1) * self.u_epoch
            + (leader + 1) * self.u_leader
            + isr * self.u_isr
            + life * self.u_life
            + (since + 1) * self.u_since
        )

    def slot_value(self, leader: int, isr: int) -> int:
        return (leader + 1) * self.n_isr + isr

    def slot_leader(self, slot: int) -> int:
        return slot // self.n_isr - 1

    def slot_isr(self, slot: int) -> int:
        return slot % self.n_isr

    def record(self, rid: int, epoch: int) -> int:
        return rid * self.n_epochs + epoch

    def record_id(self, code: int) -> int:
        return code // self.n_epochs

    def record_epoch(self, code: int) -> int:
        return code % self.n_epochs

    def local_info(self) -> "LocalInfo":
        """Per-local tuples (hw, epoch, leader, isr, log length, log, meta, life, since), filled on first use."""
        return LocalInfo(self)

    def local(self, state: int, replica: int) -> int:
        return (state >> self.local_shift[replica]) & self.local_mask

    def initial_state(self) -> int:
        """Every log empty, no leader anywhere, the quorum ISR holding every replica."""
        meta = self.meta_of(0, NONE, NONE, 0)
        state = self.all_replicas << self.f_quorum_isr.shift
        for r in range(self.rf):
            state |= meta << self.local_shift[r]
        return state


def _id_mask(log: tuple[int, ...], n_epochs: int) -> int:
    mask = 0
    for code in log:
        mask |= 1 << (code // n_epochs)
    return mask


class LocalInfo(dict):
    """local index -> (hw, epoch, leader, isr, log length, log, meta, life, since).

    A dict filled on demand rather than a full table: the product of logs and metas
    grows fast with the bounds, while the locals that states reach stay few. A hit is
    one C-level dict lookup, so ``zip(*[info[l] for l in locals])`` unpacks a state's
    replicas in two steps.
    """

    def __init__(self, layout: Layout) -> None:
        super().__init__()
        self.layout = layout

    def __missing__(self, local: int) -> tuple[int, ...]:
        L = self.layout
        meta, log = local & L.meta_mask, local >> L.meta_bits
        value = (
            L.meta_hw[meta],
            L.meta_epoch[meta],
            L.meta_leader[meta],
            L.meta_isr[meta],
            L.log_len[log],
            log,
            meta,
            L.meta_life[meta],
            L.meta_since[meta],
        )
        self[local] = value
        return value


def replica_reader(tables: list, shifts: list[int], mask: int):
    """``f(state) -> (tables[0][local 0], tables[1][local 1], ...)``, unrolled for this rf.

    Why generated code: reading every replica's local is on the hot path of the
    successor function, the canonicaliser and the properties; an unrolled
    expression with constant shifts does it without a loop, a zip or a list.
    """
    names = {f"t{i}": t for i, t in enumerate(tables)}
    body = ", ".join(f"t{i}[(s >> {sh}) & {mask}]" for i, sh in enumerate(shifts))
    return eval(f"lambda s: ({body},)", names)  # noqa: S307 - built from ints and local names only
