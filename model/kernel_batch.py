"""The vector kernel's successor function: every action family over a batch of states.

``Expander.expand(keys)`` splits the keys into component arrays with shifts and masks
(``Components``), then, for each action family and each of its parameter values,
computes the enabled rows with masks over table look-ups (fancy indexing) and the
successor keys by XOR-ing the changed components into the parent's key. Families
that only some rows can take (requests not yet applied by every replica, the true
leader's ISR changes) work on that subset of rows. The rules are those of
``successors.py``, revision by revision, with the Kafka model's conditions where it
has them (crashed brokers take no step, min.insync.replicas, acks, the history
fields) and its own families in ``kernel_kafka.py``; the tests compare the two
successor by successor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .config import Revision
from .kernel_kafka import KafkaFamilies, add_kafka_tables
from .kernel_keys import KernelDomainError
from .kernel_tables import DISABLED, UNREPRESENTABLE, CoreTables

U64 = np.uint64


class Components:
    """Component arrays of a batch (int64) and the fields the families read, each derived
    on first use: ``loc``, ``nid``, ``qisr``, ``rq``; per replica ``ld``, ``ep``, ``hw``,
    ``ln``, ``isr``, and the Kafka model's ``life`` and ``since``; the controller's ``nle``
    and ``qlead``; the Kafka model's ``crashes``, ``disk``, ``acked``, ``committed`` and
    ``readable`` (zeros where a configuration does not keep them)."""

    PER_REPLICA = {"ld": "L_LD", "ep": "L_EP", "hw": "L_HW", "ln": "L_LEN", "isr": "L_ISR"}
    SHARED = ("crashes", "disk", "acked", "committed", "readable")
    loc: list[np.ndarray]
    ld: list[np.ndarray]
    ep: list[np.ndarray]
    hw: list[np.ndarray]
    ln: list[np.ndarray]
    isr: list[np.ndarray]
    nid: np.ndarray
    qisr: np.ndarray
    rq: np.ndarray
    nle: np.ndarray
    qlead: np.ndarray

    def __init__(self, T: CoreTables, keys: np.ndarray) -> None:
        self.T = T
        self.keys = keys
        self._decoded: dict = {}  # the codec's own: a replica's slot, read once for its components

    def _zeros(self) -> np.ndarray:
        return np.zeros(self.keys.shape[1], dtype=np.int64)

    def _get(self, name: str) -> np.ndarray:
        """One component's values (int64), as the key codec reads them."""
        return self.T.codec.get(self.keys, name, self._decoded)

    def __getattr__(self, name: str) -> Any:
        T = self.T
        value: Any
        if name == "loc":
            value = [self._get(f"local{r}") for r in range(T.rf)]
        elif name in ("life", "since"):  # the Kafka model's per-replica fields (0 where not kept)
            value = [self._get(f"{name}{r}") if f"{name}{r}" in T.bound else self._zeros() for r in range(T.rf)]
        elif name in T.bound:
            value = self._get(name)
        elif name in self.SHARED:
            value = self._zeros()
        elif name in self.PER_REPLICA:
            table = getattr(T, self.PER_REPLICA[name])
            value = [table[x] for x in self.loc]
        elif name == "nle":
            value = T.RQ_NLE[self.rq]
        elif name == "qlead":
            value = T.RQ_QLEAD[self.rq]
        else:
            raise AttributeError(name)
        setattr(self, name, value)
        return value


class _Out:
    """Successor chunks: keys, parent rows and action indices, concatenated at the end."""

    def __init__(self, keys: np.ndarray, codec) -> None:
        self.keys = keys
        self.codec = codec
        self.parts: list[tuple[np.ndarray, np.ndarray, int]] = []

    def emit(self, rows: np.ndarray, action: int, changes: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        if not len(rows):
            return
        new = self.keys[:, rows]
        for name, old, value in changes:
            if (value < 0).any():
                raise KernelDomainError(f"an enabled action (index {action}) leaves the kernel's tables in {name}")
        self.codec.update(new, changes)
        self.parts.append((new, rows, action))

    def result(self, words: int, action_dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.parts:
            return np.empty((words, 0), U64), np.empty(0, np.int64), np.empty(0, action_dtype)
        keys = np.concatenate([p[0] for p in self.parts], axis=1)
        rows = np.concatenate([p[1] for p in self.parts])
        actions = np.concatenate([np.full(len(p[1]), p[2], dtype=action_dtype) for p in self.parts])
        return keys, rows, actions


class Expander(KafkaFamilies):
    """The action families over batches, for one configuration (the core machine's, and
    the Kafka model's with ``kernel_kafka.py``)."""

    def __init__(self, T: CoreTables, base: dict[str, int], action_dtype: type) -> None:
        self.T, self.base, self.action_dtype = T, base, action_dtype
        self.kafka = T.kafka
        if T.kafka:
            cfg = T.layout.config
            add_kafka_tables(T)
            self.acks_all, self.acks_one, self.min_isr = cfg.acks == "all", cfg.acks == "1", cfg.min_isr

    def expand(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every successor of every state: (keys (words, m), parent row (int64), action index)."""
        c = Components(self.T, keys)
        out = _Out(keys, self.T.codec)
        if self.kafka:
            self._kafka_controller(c, out)
        else:
            self._controller(c, out)
        self._become(c, out)
        self._write_and_hw(c, out)
        self._isr_changes(c, out)
        self._fetch(c, out)
        if self.kafka:
            self._crash_restart(c, out)
        return out.result(self.T.words, self.action_dtype)

    def _controller(self, c: Components, out: _Out) -> None:
        T, B = self.T, self.base
        room = c.nle <= T.max_epoch
        if not room.any():
            return
        nle = c.nle.astype(np.int64)
        for r in range(T.rf):
            bit = 1 << r
            has = (c.qisr & bit) != 0
            rows = np.flatnonzero(room & has & (c.qlead != r))
            if len(rows):
                q = c.qisr[rows]
                slot = T.SLOT_OF[(r + 1) * T.n_isr + q]
                out.emit(rows, B["ControllerElectLeader"] + r, [("rq", c.rq[rows], self._append(c, rows, nle, slot))])
            is_lead = c.qlead == r
            rows = np.flatnonzero(room & (is_lead | has))
            if len(rows):
                q = c.qisr[rows]
                lead = is_lead[rows]
                ni = np.where(lead & (q == bit), q, q & ~bit)
                nl = np.where(lead, -1, c.qlead[rows].astype(np.int64))
                slot = T.SLOT_OF[(nl + 1) * T.n_isr + ni]
                out.emit(
                    rows,
                    B["ControllerShrinkIsr"] + r,
                    [("rq", c.rq[rows], self._append(c, rows, nle, slot)), ("qisr", q, ni)],
                )

    def _append(self, c: Components, rows: np.ndarray, nle: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """The request sequence with one more request (slot) at epoch nle."""
        T = self.T
        k = nle[rows]
        rq = c.rq[rows]
        new = T.rq_off[k + 1] + (rq - T.rq_off[k]) + slot * T.rq_pow[k]
        return np.where(slot < 0, UNREPRESENTABLE, new)

    def _become(self, c: Components, out: _Out) -> None:
        """BecomeLeader and BecomeFollower: a replica applies a newer request.

        Only rows where some replica's epoch is below e can apply the request of epoch e,
        so each epoch works on that subset (most states have applied most requests)."""
        T, B = self.T, self.base
        rf, nep1 = T.rf, T.max_epoch + 1
        fenced = T.revision is Revision.KIP_320
        kafka = self.kafka
        leader_needs_answer = kafka and T.revision is not Revision.HW_TRUNCATION
        track_since = "since0" in T.bound
        oldest = np.minimum.reduce(c.ep) if rf > 1 else c.ep[0]
        for e in range(nep1):
            act = np.flatnonzero((c.nle > e) & (oldest < e))
            if not len(act):
                continue
            slot = T.RQ_SLOT_T[e][c.rq[act]]
            s_ld = T.SLOT_LD[slot]
            meta_new = T.META_BY_SLOT[e * (T.n_slot + 1) + slot.astype(np.int64)]
            loc = [x[act] for x in c.loc]
            ep = [x[act] for x in c.ep]
            newer = [x < e for x in ep]
            if kafka:  # crashed brokers take no step
                alive = [x[act] == 0 for x in c.life]
                newer = [n & a for n, a in zip(newer, alive)]
            for r in range(rf):
                sub = np.flatnonzero((s_ld == r) & newer[r])
                if len(sub):
                    rows = act[sub]
                    new = T.L_LH[loc[r][sub]] * T.n_meta + meta_new[sub]
                    changes = [(f"local{r}", loc[r][sub], new)]
                    if kafka:
                        if track_since:  # a new leadership: its purgatory starts empty
                            since = c.since[r][rows]
                            changes.append((f"since{r}", since, np.where(T.L_LD[loc[r][sub]] != r, e + 1, since)))
                        true_leader = (c.qlead[rows] == r) & (c.nle[rows] == e + 1)
                        self._expose(c, rows, T.L_PREFIX_IDS[loc[r][sub]], true_leader, changes)
                    out.emit(rows, B["BecomeLeader"] + r * nep1 + e, changes)
            for lead in range(rf):
                named = s_ld == lead
                if fenced:
                    named &= (T.L_LD[loc[lead]] == lead) & (ep[lead] == e)
                if leader_needs_answer:  # the truncation point comes from the leader
                    named &= alive[lead]
                if not named.any():
                    continue
                for r in range(rf):
                    if r == lead:
                        continue
                    sub = np.flatnonzero(named & newer[r])
                    if not len(sub):
                        continue
                    nlh = T.TRUNC[T.L_LOG[loc[lead][sub]] * T.n_lh + T.L_LH[loc[r][sub]]]
                    keep = nlh != DISABLED
                    sub, nlh = sub[keep], nlh[keep]
                    new = np.where(nlh < 0, UNREPRESENTABLE, nlh * T.n_meta + meta_new[sub])
                    changes = [(f"local{r}", loc[r][sub], new)]
                    if track_since:  # NotLeader: the pending produces fail
                        since = c.since[r][act[sub]]
                        changes.append((f"since{r}", since, 0 * since))
                    out.emit(act[sub], B["BecomeFollower"] + (r * rf + lead) * nep1 + e, changes)

    def _write_and_hw(self, c: Components, out: _Out) -> None:
        T, B = self.T, self.base
        rf, mr = T.rf, T.max_records
        fenced = T.revision is Revision.KIP_320
        kafka = self.kafka
        can_write = c.nid < mr
        if kafka:
            qep = c.nle.astype(np.int64) - 1
        for r in range(rf):
            ok = can_write & (c.ld[r] == r) & (c.ln[r] < T.log_size)
            if kafka and self.acks_all:
                ok &= T.L_ISR_POP[c.loc[r]] >= self.min_isr  # else NotEnoughReplicas
            rows = np.flatnonzero(ok)
            if len(rows):
                new = T.L_WRITE[c.loc[r][rows] * mr + c.nid[rows]]
                nid = c.nid[rows]
                changes = [(f"local{r}", c.loc[r][rows], new), ("nid", nid, nid + 1)]
                if kafka:
                    if self.acks_one:
                        acked = c.acked[rows]
                        changes.append(("acked", acked, acked | (1 << nid)))
                    true_leader = (c.qlead[rows] == r) & (c.ep[r][rows] == qep[rows])
                    self._expose(c, rows, T.L_PREFIX_IDS[np.maximum(new, 0)], true_leader, changes)
                out.emit(rows, B["LeaderWrite"] + r, changes)
        for r in range(rf):
            h = c.hw[r]
            if fenced:
                ok = h < c.ln[r]
                self_lead = c.ld[r] == r
                if kafka:
                    ok &= self_lead  # only a believed leader advances its HWM
                for f in range(rf):
                    member = (c.isr[r] >> f & 1) != 0
                    good = self_lead & (c.ld[f] == r) & (c.ep[f] == c.ep[r]) & (h < c.ln[f])
                    ok &= ~member | good
            else:
                ok = (c.ld[r] == r) & (h < T.log_size)
                for f in range(rf):
                    member = (c.isr[r] >> f & 1) != 0
                    ok &= ~member | ((c.ld[f] == r) & (h < c.ln[f]))
            rows = np.flatnonzero(ok)
            if len(rows):
                loc = c.loc[r][rows]
                new = T.L_INC_HW[loc]
                changes = [(f"local{r}", loc, new)]
                if kafka:
                    if self.acks_all:
                        # appended during this leadership: its delayed produce completes (with
                        # a smaller ISR the producer gets NotEnoughReplicasAfterAppend instead)
                        done = (T.L_HW_REC_EPOCH[loc] >= c.since[r][rows] - 1) & (T.L_ISR_POP[loc] >= self.min_isr)
                        acked = c.acked[rows]
                        changes.append(("acked", acked, np.where(done, acked | T.L_HW_ID_BIT[loc], acked)))
                    true_leader = (c.qlead[rows] == r) & (c.ep[r][rows] == qep[rows])
                    self._expose(c, rows, T.L_PREFIX_IDS[np.maximum(new, 0)], true_leader, changes)
                out.emit(rows, B["LeaderIncHighWatermark"] + r, changes)

    def _isr_changes(self, c: Components, out: _Out) -> None:
        """LeaderShrinkIsr and LeaderExpandIsr, by the true leader only (a subset of rows)."""
        T, B = self.T, self.base
        rf = T.rf
        fenced = T.revision is Revision.KIP_320
        qep = c.nle.astype(np.int64) - 1
        for r in range(rf):
            act = np.flatnonzero((c.qlead == r) & (c.ld[r] == r) & (c.ep[r] == qep))
            if not len(act):
                continue
            loc_r = c.loc[r][act]
            ci, end, h, ep_r = T.L_ISR[loc_r], T.L_LEN[loc_r], T.L_HW[loc_r], T.L_EP[loc_r]
            expand_ok = T.L_EXPAND_OK[loc_r] if fenced else None
            qisr = c.qisr[act]
            for f in range(rf):
                if f == r:
                    continue
                loc_f = c.loc[f][act]
                ld_f, ln_f = T.L_LD[loc_f], T.L_LEN[loc_f]
                member = (ci >> f & 1) != 0
                follows = ld_f == r
                if fenced:
                    same_epoch = follows & (T.L_EP[loc_f] == ep_r)
                    lagging = ~same_epoch | (ln_f < end)
                    if self.kafka:
                        # Kafka 2.1+: the follower's log end has reached the HWM and the start of
                        # the leader's epoch (Partition.isFollowerInSync)
                        caught_up = same_epoch & (ln_f >= h) & (ln_f >= T.L_EPOCH_START[loc_r])
                    else:
                        caught_up = same_epoch & ~((h > 0) & (h > ln_f)) & expand_ok
                else:
                    lagging = ~(follows & ((end == 0) | (end <= ln_f)))
                    caught_up = follows & ~((h > 0) & ~((h <= end) & (h <= ln_f)))
                for family, enabled, shrink in (
                    ("LeaderShrinkIsr", member & lagging, True),
                    ("LeaderExpandIsr", ~member & caught_up, False),
                ):
                    sub = np.flatnonzero(enabled)
                    if not len(sub):
                        continue
                    old = ci[sub].astype(np.int64)
                    ni = old & ~(1 << f) if shrink else old | (1 << f)
                    loc = loc_r[sub]
                    out.emit(
                        act[sub],
                        B[family] + r * rf + f,
                        [(f"local{r}", loc, T.L_SETISR[loc * T.n_isr + ni]), ("qisr", qisr[sub], ni)],
                    )

    def _fetch(self, c: Components, out: _Out) -> None:
        T, B = self.T, self.base
        rf = T.rf
        fenced = T.revision is Revision.KIP_320
        room = [c.ln[f] < T.log_size for f in range(rf)]
        for lead in range(rf):
            leads = c.ld[lead] == lead
            if not leads.any():
                continue
            for f in range(rf):
                if f == lead:
                    continue  # a replica never fetches from itself
                ok = leads & (c.ld[f] == lead) & room[f] & (c.ln[f] < c.ln[lead])
                if fenced:
                    ok &= c.ep[f] == c.ep[lead]
                rows = np.flatnonzero(ok)
                if not len(rows):
                    continue
                lf = c.loc[f][rows]
                nlh = T.FETCH[T.L_LH[lf] * T.n_lh + T.L_LH[c.loc[lead][rows]]]
                new = np.where(nlh < 0, UNREPRESENTABLE, nlh * T.n_meta + T.L_META[lf])
                out.emit(rows, B["FollowerFetch"] + f * rf + lead, [(f"local{f}", lf, new)])
