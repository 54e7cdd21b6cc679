"""Component tables of the vector kernel: a denser state key than ``layout.py``'s, and
every per-component transition as an array, built once per configuration (the core
machine's; ``kernel_kafka.py`` adds the Kafka model's).

Why a second encoding: the packed int of ``layout.py`` spends bits on impossible
combinations (67 bits for the core at rf 3), and NumPy needs keys that fit one
uint64 word. Here a state is a few small integers, each an index into a table of
the values that component can take:

* one **local** per replica: an index into the table of (log, HWM, leader epoch,
  believed leader, cached ISR) tuples that the core can represent; ``local =
  (log * (log_size + 1) + hw) * n_meta + meta``;
* the **next record id**, the **quorum ISR** (a bitmask) and the **request sequence**
  (one index for the whole LeaderAndIsr request list, mixed radix over the slots);
* in the Kafka model, per replica its **life** (alive, or crashed with its crash mark)
  and its **leadership start** (acks=all), and the **crash and disk-loss counters** and
  the **acked, committed and readable** id masks, each a field where it can vary.

The tables leave out what the core cannot reach, which is what makes rf 3 fit in
64 bits (with ``--max-leader-epoch 3`` too). Each exclusion is an invariant of the
core machine, not a guess:

* record ids in one log are distinct: an id is written once, at one offset, and
  copies keep offsets;
* a replica with no leader epoch has no leader and an empty cached ISR, and one
  with an epoch names a real leader (requests without a leader are never applied),
  but for a restarted Kafka broker: fenced at an epoch, no leader, no ISR;
* a believed leader is in its own cached ISR, and a request's leader is in the
  request's ISR (every ISR change keeps the leader; elections pick an ISR member);
* in the Kafka model's keys, a replica's HWM is within its log (every step that moves
  either keeps it so), a leadership start needs a leader and is no later than the
  replica's epoch, and a crashed broker keeps only its log and HWM.

Transitions that would leave these tables yield ``UNREPRESENTABLE``; the kernel
raises ``KernelDomainError`` if an enabled action ever produces one, so an
exclusion that stopped holding (a changed model) fails loudly, never silently.

``kernel_keys.py`` packs the components into keys: one word when they fit (exact
keys), else two (the engine then de-duplicates by 64-bit fingerprints and reports the
collision probability).
"""

from __future__ import annotations

from itertools import permutations
import numpy as np

from .config import Revision
from .kernel_keys import BitFields, KernelUnsupported, MixedRadix
from .layout import NONE, Layout
from .successors import first_nonmatching_offset, kip101_lookup

MAX_TABLE_BYTES = 256 << 20  # tables beyond this are not worth building (the state space would be huge)
DISABLED = -1  # the action is not enabled by this component's value
UNREPRESENTABLE = -2  # the result lies outside the tables: an invariant was broken


class CoreTables:
    """Every table of the core machine's components for one configuration."""

    def __init__(self, layout: Layout) -> None:
        cfg = layout.config
        self.layout = L = layout
        self.kafka = kafka = not cfg.core
        self.rf = rf = cfg.rf
        self.max_records = mr = cfg.max_records
        self.log_size = ls = cfg.logsize
        self.max_epoch = me = cfg.max_leader_epoch
        self.revision = cfg.revision
        self.n_isr = n_isr = 1 << rf
        ne = me + 1
        self.ls1 = ls1 = ls + 1

        # ---- logs: sequences of record codes (id * ne + epoch) with distinct ids ------
        self.logs = [g for g in L.logs if len({c // ne for c in g}) == len(g)]
        self.log_index = {g: i for i, g in enumerate(self.logs)}
        self.n_logs = n_logs = len(self.logs)
        self.n_lh = n_lh = n_logs * ls1

        # ---- metas: (epoch, leader, isr); 0 is the replica that has heard of no leader
        self.metas = [(NONE, NONE, 0)] + [
            (e, ld, isr) for e in range(me + 1) for ld in range(rf) for isr in range(n_isr) if isr >> ld & 1
        ]
        if kafka and cfg.crashes:
            # a restarted broker: fenced at an epoch (KIP-380), no leader heard of yet
            self.metas += [(e, NONE, 0) for e in range(me + 1)]
        self.meta_index = {m: i for i, m in enumerate(self.metas)}
        self.n_meta = n_meta = len(self.metas)
        self.n_local = n_local = n_lh * n_meta

        # ---- request slots (leader, isr), and request sequences --------------------------
        self.slots = [(NONE, isr) for isr in range(n_isr)] + [
            (ld, isr) for ld in range(rf) for isr in range(n_isr) if isr >> ld & 1
        ]
        self.slot_index = {s: i for i, s in enumerate(self.slots)}
        self.n_slot = n_slot = len(self.slots)  # also the "absent" marker in RQ_SLOT
        self.rq_pow = np.array([n_slot**k for k in range(me + 3)], dtype=np.int64)
        self.rq_off = np.concatenate([[0], np.cumsum(self.rq_pow)]).astype(np.int64)  # first index of length k
        self.n_rq = n_rq = int(self.rq_off[me + 2])

        size = n_local * (64 + 8 * (mr + n_isr) + rf * n_logs) + 8 * n_lh * (n_lh + n_logs) + n_rq * (2 * me + 6)
        if size > MAX_TABLE_BYTES:
            raise KernelUnsupported(
                f"the vector kernel's tables would take {size >> 20:,} MiB for these bounds "
                f"(at most {MAX_TABLE_BYTES >> 20} MiB)"
            )
        # the Kafka model's per-replica life (0 alive, 1 + crash mark) and leadership start
        # (epoch + 1, 0 when not leading), and its counters and history masks, each a field
        # of its own where it can vary (``layout.py`` says what they mean)
        self.n_life, self.n_since = L.n_life, L.n_since
        self.replica_fields = [name for name, n in (("life", self.n_life), ("since", self.n_since)) if n > 1]
        shared = {"crashes": L.f_crashes if kafka and cfg.crashes else None,
                  "disk": L.f_disk_losses if kafka and cfg.disk_loss else None,
                  "acked": L.f_acked if kafka and cfg.acks != "0" else None,
                  "committed": L.f_committed, "readable": L.f_readable}
        self.shared = {name: f for name, f in shared.items() if f is not None}
        # every component and its number of values, in key order
        self.bound = {f"local{r}": n_local for r in range(rf)}
        self.bound |= {f"{name}{r}": n for r in range(rf) for name, n in
                       (("life", self.n_life), ("since", self.n_since)) if n > 1}
        self.bound |= {"nid": mr + 1, "qisr": n_isr, "rq": n_rq}
        shared_bound = {"crashes": cfg.crashes + 1, "disk": cfg.disk_loss + 1}
        self.bound |= {name: shared_bound.get(name, 1 << mr) for name in self.shared}
        self.names = list(self.bound)

        self._local_tables(L)
        self._request_tables()
        self._pair_tables(L)
        self.codec = self._codec()
        self.words = self.codec.words
        self.key_bits = self.codec.bits

    def _codec(self) -> BitFields | MixedRadix:
        """The Kafka model's keys in one mixed-radix word where they fit, else bit fields
        (the core machine's keys are bit fields: one word at rf 3)."""
        if self.kafka:
            try:
                return MixedRadix(self.bound, self.replica_combinations(), self.rf)
            except KernelUnsupported:
                pass
        return BitFields(self.bound)

    def replica_combinations(self) -> np.ndarray:
        """Every (local, life, since + 1) a replica can be in, shape (n, 3): its HWM within its
        log, a leadership start only with a leader and no later than its epoch, and, once
        crashed, nothing but its log and HWM on disk."""
        out = []
        ls1, n_meta = self.ls1, self.n_meta
        for local in range(self.n_local):
            lh, m = divmod(local, n_meta)
            lg, hw = divmod(lh, ls1)
            if hw > len(self.logs[lg]):
                continue
            e, ld, _ = self.metas[m]
            out.append((local, 0, 0))
            if self.n_since > 1 and ld >= 0:
                out.extend((local, 0, since) for since in range(1, e + 2))
            if m == 0:
                out.extend((local, life, 0) for life in range(1, self.n_life))
        return np.array(out, dtype=np.int64)

    # ---- per-local tables ----------------------------------------------------------------
    def _local_tables(self, L: Layout) -> None:
        rf, ls, ls1, n_meta, mr = self.rf, self.log_size, self.ls1, self.n_meta, self.max_records
        ne = self.max_epoch + 1
        meta_ep = np.array([m[0] for m in self.metas], dtype=np.int8)
        meta_ld = np.array([m[1] for m in self.metas], dtype=np.int8)
        meta_isr = np.array([m[2] for m in self.metas], dtype=np.int8)
        log_len = np.array([len(g) for g in self.logs], dtype=np.int8)
        local = np.arange(self.n_local, dtype=np.int64)
        self.L_META = (local % n_meta).astype(np.int64)
        self.L_LH = local // n_meta
        self.L_LOG = self.L_LH // ls1
        self.L_HW = (self.L_LH % ls1).astype(np.int8)
        self.L_EP = meta_ep[self.L_META]
        self.L_LD = meta_ld[self.L_META]
        self.L_ISR = meta_isr[self.L_META]
        self.L_LEN = log_len[self.L_LOG]

        # HWM + 1 (the increment's guards keep it within the log size)
        self.L_INC_HW = np.where(self.L_HW < ls, local + n_meta, UNREPRESENTABLE).astype(np.int64)

        # index of log[:h] for every log and h, or DISABLED when the log is shorter than h
        self.PREFIX_AT = np.full(self.n_logs * ls1, DISABLED, dtype=np.int64)
        for i, g in enumerate(self.logs):
            for h in range(len(g) + 1):
                self.PREFIX_AT[i * ls1 + h] = self.log_index[g[:h]]
        self.L_PREFIX = self.PREFIX_AT[self.L_LOG * ls1 + self.L_HW]

        # append record (id, own epoch): [local * mr + id]
        write = np.full(self.n_local * mr, DISABLED, dtype=np.int64)
        # the cached ISR replaced: [local * n_isr + isr]
        setisr = np.full(self.n_local * self.n_isr, UNREPRESENTABLE, dtype=np.int64)
        expand_ok = np.zeros(self.n_local, dtype=bool)
        for m, (e, ld, isr) in enumerate(self.metas):
            for lh in range(self.n_lh):
                lg, hw = divmod(lh, ls1)
                g = self.logs[lg]
                l_ = lh * n_meta + m
                if e >= 0:
                    for new_isr in range(self.n_isr):
                        nm = self.meta_index.get((e, ld, new_isr))
                        if nm is not None:
                            setisr[l_ * self.n_isr + new_isr] = lh * n_meta + nm
                    # fenced expansion, the leader's side: its HWM has reached the start of its epoch
                    expand_ok[l_] = hw == len(g) or (hw < len(g) and g[hw] % ne == e)
                    if len(g) < ls:
                        for rid in range(mr):
                            ng = self.log_index.get(g + (rid * ne + e,))
                            target = UNREPRESENTABLE if ng is None else (ng * ls1 + hw) * n_meta + m
                            write[l_ * mr + rid] = target
        self.L_WRITE, self.L_SETISR, self.L_EXPAND_OK = write, setisr, expand_ok
        self.LD_IS = [self.L_LD == r for r in range(rf)]
        self.ISR_HAS = [(self.L_ISR >> r & 1).astype(bool) for r in range(rf)]

    # ---- controller: slots and request sequences -------------------------------------------
    def _request_tables(self) -> None:
        rf, me, n_isr, n_slot = self.rf, self.max_epoch, self.n_isr, self.n_slot
        self.SLOT_LD = np.array([s[0] for s in self.slots] + [-2], dtype=np.int8)  # absent: -2
        self.SLOT_ISR = np.array([s[1] for s in self.slots] + [0], dtype=np.int8)
        # slot index by (leader + 1) * n_isr + isr
        self.SLOT_OF = np.full((rf + 1) * n_isr, UNREPRESENTABLE, dtype=np.int64)
        for i, (ld, isr) in enumerate(self.slots):
            self.SLOT_OF[(ld + 1) * n_isr + isr] = i
        # meta of a replica that applies the request of slot s at epoch e: [e * (n_slot + 1) + s]
        self.META_BY_SLOT = np.full((me + 1) * (n_slot + 1), DISABLED, dtype=np.int64)
        for e in range(me + 1):
            for i, (ld, isr) in enumerate(self.slots):
                if ld >= 0:
                    self.META_BY_SLOT[e * (n_slot + 1) + i] = self.meta_index[(e, ld, isr)]
        # request sequences: rq = off[k] + sum(slot_i * n_slot**i) for a sequence of length k
        rq_slot = np.full((self.n_rq, me + 1), n_slot, dtype=np.int8 if n_slot < 127 else np.int16)
        rq_nle = np.zeros(self.n_rq, dtype=np.int8)
        for k in range(me + 2):
            lo, n = int(self.rq_off[k]), int(self.rq_pow[k])
            digits = np.arange(n, dtype=np.int64)
            rq_nle[lo : lo + n] = k
            for i in range(k):
                rq_slot[lo : lo + n, i] = digits % n_slot
                digits //= n_slot
        self.RQ_SLOT = rq_slot
        self.RQ_SLOT_T = [np.ascontiguousarray(rq_slot[:, e]) for e in range(me + 1)]
        self.RQ_NLE = rq_nle
        last = rq_slot[np.arange(self.n_rq), np.maximum(rq_nle.astype(np.int64) - 1, 0)]
        self.RQ_QLEAD = np.where(rq_nle > 0, self.SLOT_LD[last.astype(np.int64)], NONE).astype(np.int8)

    # ---- two-component tables: truncation and fetch --------------------------------------------
    def _pair_tables(self, L: Layout) -> None:
        ls, ls1, ne = self.log_size, self.ls1, self.max_epoch + 1
        rev = self.revision
        logs = self.logs
        # BecomeFollower's new (log, hw) of a follower: [leader log * n_lh + follower lh]
        tr = np.full(self.n_logs * self.n_lh, DISABLED, dtype=np.int64)
        # FollowerFetch's new (log, hw) of a follower: [follower lh * n_lh + leader lh]
        fetch = np.full(self.n_lh * self.n_lh, DISABLED, dtype=np.int64)
        for lead_log, gl in enumerate(logs):
            for lh in range(self.n_lh):
                lg, hw = divmod(lh, ls1)
                g = logs[lg]
                if rev is Revision.KIP_320:
                    to = first_nonmatching_offset(gl, g)
                elif rev is Revision.HW_TRUNCATION:
                    to = hw
                elif not g:
                    to = 0
                elif rev is Revision.KIP_101:
                    to = kip101_lookup(gl, g[-1] % ne, ne)
                    if to < 0:
                        to = hw
                else:
                    to = first_nonmatching_offset(gl, g)
                if to <= len(g):  # the specification disables a truncation past the log end
                    tr[lead_log * self.n_lh + lh] = self.log_index[g[:to]] * ls1 + min(to, hw)
        for lh_f in range(self.n_lh):
            lg_f, _ = divmod(lh_f, ls1)
            g = logs[lg_f]
            o = len(g)
            for lh_l in range(self.n_lh):
                lg_l, hw_l = divmod(lh_l, ls1)
                gl = logs[lg_l]
                if o >= len(gl) or o >= ls:
                    continue
                ng = self.log_index.get(g + (gl[o],))
                fetch[lh_f * self.n_lh + lh_l] = (
                    UNREPRESENTABLE if ng is None else ng * ls1 + min(hw_l, o + 1)
                )
        self.TRUNC, self.FETCH = tr, fetch

    # ---- property tables ----------------------------------------------------------------------
    def isr_disagreement(self) -> list[np.ndarray]:
        """Per replica r1: ``table[local1 * n_logs + log2]`` is True where r1 believes it leads,
        its HWM is positive, and the log log2 does not hold r1's exact records below that HWM
        (the weak-isr and strong-isr predicates OR these over the ISR members)."""
        ls1 = self.ls1
        prefix_len = np.array([len(g) for g in self.logs], dtype=np.int64)
        # starts[p, g]: log g begins with log p
        starts = self.PREFIX_AT.reshape(self.n_logs, ls1)[:, prefix_len] == np.arange(self.n_logs)[None, :]
        starts = starts.T  # [p, g]
        p = self.L_PREFIX
        agrees = np.where((p >= 0)[:, None], starts[np.maximum(p, 0)], False)  # [local, log]
        out = []
        for r in range(self.rf):
            leads = (self.L_LD == r) & (self.L_HW > 0)
            out.append((leads[:, None] & ~agrees).ravel())
        return out

    # ---- relabelling tables for symmetry -------------------------------------------------------
    def permutation_tables(self) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray, np.ndarray]:
        """(perms, local, qisr, rq) with ``perm[i]`` the new label of replica i and
        ``table[k, value]`` the value relabelled by perms[k]; the identity comes first."""
        rf, n_isr = self.rf, self.n_isr
        perms = list(permutations(range(rf)))
        size = 4 * len(perms) * (self.n_local + self.n_rq)
        if size > MAX_TABLE_BYTES:
            raise KernelUnsupported(
                f"the symmetry tables would take {size >> 20:,} MiB (at most {MAX_TABLE_BYTES >> 20} MiB)"
            )

        def mask(p: tuple[int, ...], m: int) -> int:
            return sum(1 << p[r] for r in range(rf) if m >> r & 1)

        isr_t = np.array([[mask(p, m) for m in range(n_isr)] for p in perms], dtype=np.int64)
        meta_t = np.array(
            [
                [self.meta_index[(e, p[ld] if ld >= 0 else NONE, mask(p, isr))] for (e, ld, isr) in self.metas]
                for p in perms
            ],
            dtype=np.int64,
        )
        slot_t = np.array(
            [
                [self.slot_index[(p[ld] if ld >= 0 else NONE, mask(p, isr))] for (ld, isr) in self.slots]
                + [self.n_slot]
                for p in perms
            ],
            dtype=np.int64,
        )
        local_t = np.stack([self.L_LH * self.n_meta + meta_t[k][self.L_META] for k in range(len(perms))])
        local_t = local_t.astype(np.int32)
        rq_t = np.empty((len(perms), self.n_rq), dtype=np.int32)
        for k in range(len(perms)):
            out = self.rq_off[self.RQ_NLE.astype(np.int64)].copy()
            for i in range(self.max_epoch + 1):
                present = self.RQ_NLE > i
                out += np.where(present, slot_t[k][self.RQ_SLOT[:, i].astype(np.int64)] * self.rq_pow[i], 0)
            rq_t[k] = out
        return perms, local_t, isr_t, rq_t
