"""The vector kernel: successors of a whole array of states at once, with NumPy.

A batch of states is an array of keys (``kernel_tables.py``: one uint64 word per
state, or two for larger bounds), shape ``(words, n)``. ``expand(keys)`` splits
the keys into component arrays with shifts and masks, then, for each action
family and each of its parameter values, computes the enabled rows with masks
over table look-ups (fancy indexing) and the successor keys by XOR-ing the
changed components into the parent's key. It returns every successor with its
parent's row and its action index (the scalar catalogue's), duplicates included,
so an engine counts generated states as the scalar engine does.

The scalar model (``successors.py``) is the reference: the tests compare the two
on whole state spaces. Only the core machine is covered (``CoreTables`` raises
``KernelUnsupported`` otherwise). Properties have batch predicates built from the
same tables, and ``canonical`` is the exact symmetry reduction: the smallest key
among all relabellings of the brokers.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .config import Revision
from .kernel_tables import (
    DISABLED,
    UNREPRESENTABLE,
    CoreTables,
    KernelDomainError,
    KernelUnsupported,
)
from .replication import ReplicationModel

__all__ = ["VectorKernel", "KernelUnsupported", "KernelDomainError", "kernel_for"]

U64 = np.uint64
BatchPredicate = Callable[["_Comps"], np.ndarray]


class _Comps:
    """Component arrays of a batch (int64) and the fields the families read, each derived
    on first use: ``loc``, ``nid``, ``qisr``, ``rq``; per replica ``ld``, ``ep``, ``hw``,
    ``ln``, ``isr``; the controller's ``nle`` and ``qlead``."""

    PER_REPLICA = {"ld": "L_LD", "ep": "L_EP", "hw": "L_HW", "ln": "L_LEN", "isr": "L_ISR"}
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
        self.words = keys.view(np.int64)

    def _get(self, name: str) -> np.ndarray:
        f = self.T.field[name]
        return (self.words[f.word] >> f.shift) & f.mask

    def __getattr__(self, name: str) -> Any:
        T = self.T
        value: Any
        if name == "loc":
            value = [self._get(f"local{r}") for r in range(T.rf)]
        elif name in ("nid", "qisr", "rq"):
            value = self._get(name)
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

    def __init__(self, keys: np.ndarray, fields: dict) -> None:
        self.keys = keys
        self.fields = fields
        self.parts: list[tuple[np.ndarray, np.ndarray, int]] = []

    def emit(self, rows: np.ndarray, action: int, changes: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        if not len(rows):
            return
        new = self.keys[:, rows]
        for name, old, value in changes:
            if (value < 0).any():
                raise KernelDomainError(f"an enabled action (index {action}) leaves the kernel's tables in {name}")
            f = self.fields[name]
            new[f.word] ^= ((old ^ value).astype(U64)) << U64(f.shift)
        self.parts.append((new, rows, action))

    def result(self, words: int, action_dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.parts:
            return np.empty((words, 0), U64), np.empty(0, np.int64), np.empty(0, action_dtype)
        keys = np.concatenate([p[0] for p in self.parts], axis=1)
        rows = np.concatenate([p[1] for p in self.parts])
        actions = np.concatenate([np.full(len(p[1]), p[2], dtype=action_dtype) for p in self.parts])
        return keys, rows, actions


class VectorKernel:
    """Batch successors, predicates and canonical forms for one core configuration."""

    def __init__(self, model: ReplicationModel) -> None:
        self.model = model
        self.T = T = CoreTables(model.layout)
        self.words = T.words
        self.exact = T.words == 1  # one word: the key is the state; two: engines use fingerprints
        cat = model.catalogue
        self.n_actions = len(cat)
        self.action_dtype = np.uint8 if len(cat) < 256 else np.uint16
        self.base = cat.base
        self._perm = None
        self._disagree: list[np.ndarray] | None = None

    def emission_rank(self) -> np.ndarray:
        """``rank[action]``: where the scalar successor function lists that action among a
        state's successors. That is catalogue order, except that a state's requests are
        applied newest first: BecomeLeader by descending epoch, BecomeFollower by descending
        epoch and then replica. With it the vector BFS keeps the scalar BFS's discovery order
        and finds the very same traces (a test holds this to ``successors.py``)."""
        cat = self.model.catalogue
        families = list(cat.base)

        def order(a: int) -> tuple:
            action = cat[a]
            args = action.args
            if action.name == "BecomeLeader":
                within: tuple = (-args["epoch"], args["replica"])
            elif action.name == "BecomeFollower":
                within = (-args["epoch"], args["replica"], args["leader"])
            else:
                within = (a,)
            return (families.index(action.name), within)

        listed = sorted(range(len(cat)), key=order)
        rank = np.empty(len(cat), dtype=np.int64)
        rank[listed] = np.arange(len(cat))
        return rank

    # ---- keys ---------------------------------------------------------------------------
    def encode(self, locs, nid, qisr, rq) -> np.ndarray:
        """Keys (words, n) from component arrays."""
        T = self.T
        n = len(nid)
        keys = np.zeros((self.words, n), dtype=U64)
        values = {f"local{r}": x for r, x in enumerate(locs)} | {"nid": nid, "qisr": qisr, "rq": rq}
        for f in T.fields:
            keys[f.word] |= np.asarray(values[f.name]).astype(U64) << U64(f.shift)
        return keys

    def initial_keys(self) -> np.ndarray:
        return self.keys_of_scalars(self.model.init_states())

    def key_of_scalar(self, state: int) -> int:
        """The kernel key (words joined low word first) of a scalar packed state."""
        return self.int_of_key(self.keys_of_scalars([state])[:, 0])

    def scalar_of_key(self, key: int) -> int:
        """The scalar packed state of a kernel key (exact inverse of key_of_scalar)."""
        return self.scalars_of_keys(self.keys_of_ints([key]))[0]

    def keys_of_scalars(self, states) -> np.ndarray:
        """Keys (words, n) of scalar packed states."""
        comps = [self.T.components_of_scalar(s) for s in states]
        locs = [[c[0][r] for c in comps] for r in range(self.T.rf)]
        return self.encode(locs, *([c[i] for c in comps] for i in (1, 2, 3)))

    def scalars_of_keys(self, keys: np.ndarray) -> list[int]:
        """The scalar packed states of keys (words, n)."""
        c = _Comps(self.T, keys)
        to_scalar = self.T.scalar_of_components
        locs = list(zip(*(x.tolist() for x in c.loc)))
        return [to_scalar(lc, n, q, rq) for lc, n, q, rq in zip(locs, c.nid.tolist(), c.qisr.tolist(), c.rq.tolist())]

    def keys_of_ints(self, ints: list[int]) -> np.ndarray:
        m = (1 << 64) - 1
        return np.array([[(k >> (64 * w)) & m for k in ints] for w in range(self.words)], dtype=U64).reshape(
            self.words, len(ints)
        )

    @staticmethod
    def int_of_key(column: np.ndarray) -> int:
        return sum(int(w) << (64 * i) for i, w in enumerate(column))

    def fingerprints(self, keys: np.ndarray) -> np.ndarray:
        """One uint64 per state: the key itself when it is one word, else a splitmix64 fold."""
        if self.words == 1:
            return keys[0]
        h = keys[0] * U64(0x9E3779B97F4A7C15)
        for w in range(1, self.words):
            h ^= keys[w]
            h ^= h >> U64(31)
            h *= U64(0xBF58476D1CE4E5B9)
        h ^= h >> U64(29)
        h *= U64(0x94D049BB133111EB)
        h ^= h >> U64(32)
        return h

    # ---- successors -------------------------------------------------------------------------
    def expand(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every successor of every state: (keys (words, m), parent row (int64), action index)."""
        T = self.T
        c = _Comps(T, keys)
        out = _Out(keys, T.field)
        self._controller(c, out)
        self._become(c, out)
        self._write_and_hw(c, out)
        self._isr_changes(c, out)
        self._fetch(c, out)
        return out.result(self.words, self.action_dtype)

    def _controller(self, c: _Comps, out: _Out) -> None:
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

    def _append(self, c: _Comps, rows: np.ndarray, nle: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """The request sequence with one more request (slot) at epoch nle."""
        T = self.T
        k = nle[rows]
        rq = c.rq[rows]
        new = T.rq_off[k + 1] + (rq - T.rq_off[k]) + slot * T.rq_pow[k]
        return np.where(slot < 0, UNREPRESENTABLE, new)

    def _become(self, c: _Comps, out: _Out) -> None:
        """BecomeLeader and BecomeFollower: a replica applies a newer request.

        Only rows where some replica's epoch is below e can apply the request of epoch e,
        so each epoch works on that subset (most states have applied most requests)."""
        T, B = self.T, self.base
        rf, nep1 = T.rf, T.max_epoch + 1
        fenced = T.revision is Revision.KIP_320
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
            for r in range(rf):
                sub = np.flatnonzero((s_ld == r) & newer[r])
                if len(sub):
                    new = T.L_LH[loc[r][sub]] * T.n_meta + meta_new[sub]
                    out.emit(act[sub], B["BecomeLeader"] + r * nep1 + e, [(f"local{r}", loc[r][sub], new)])
            for lead in range(rf):
                named = s_ld == lead
                if fenced:
                    named &= (T.L_LD[loc[lead]] == lead) & (ep[lead] == e)
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
                    out.emit(act[sub], B["BecomeFollower"] + (r * rf + lead) * nep1 + e,
                             [(f"local{r}", loc[r][sub], new)])

    def _write_and_hw(self, c: _Comps, out: _Out) -> None:
        T, B = self.T, self.base
        rf, mr = T.rf, T.max_records
        fenced = T.revision is Revision.KIP_320
        can_write = c.nid < mr
        for r in range(rf):
            rows = np.flatnonzero(can_write & (c.ld[r] == r) & (c.ln[r] < T.log_size))
            if len(rows):
                new = T.L_WRITE[c.loc[r][rows] * mr + c.nid[rows]]
                out.emit(
                    rows,
                    B["LeaderWrite"] + r,
                    [(f"local{r}", c.loc[r][rows], new), ("nid", c.nid[rows], c.nid[rows] + 1)],
                )
        for r in range(rf):
            h = c.hw[r]
            if fenced:
                ok = h < c.ln[r]
                self_lead = c.ld[r] == r
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
                out.emit(rows, B["LeaderIncHighWatermark"] + r, [(f"local{r}", c.loc[r][rows], T.L_INC_HW[c.loc[r][rows]])])

    def _isr_changes(self, c: _Comps, out: _Out) -> None:
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

    def _fetch(self, c: _Comps, out: _Out) -> None:
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

    # ---- properties ---------------------------------------------------------------------------
    def components(self, keys: np.ndarray) -> _Comps:
        """The decoded batch that predicates read (decode once, evaluate every property)."""
        return _Comps(self.T, keys)

    def predicate(self, name: str) -> BatchPredicate | None:
        """A batch form of a property's predicate over ``components(keys)`` (True where it
        holds), or None when the kernel has none for that property."""
        if name in ("weak-isr", "strong-isr"):
            return self._isr_predicate(strong=name == "strong-isr")
        if name == "leader-in-isr":

            def leader_in_isr(c: _Comps) -> np.ndarray:
                q = c.qlead.astype(np.int64)
                return (q < 0) | ((c.qisr >> np.maximum(q, 0) & 1) != 0)

            return leader_in_isr
        return None

    def _isr_predicate(self, strong: bool) -> BatchPredicate:
        T = self.T
        if self._disagree is None:
            self._disagree = T.isr_disagreement()
        bad = self._disagree
        n_logs, rf = T.n_logs, T.rf

        def disagreements(c: _Comps) -> list[list[np.ndarray]]:
            """[r1][r2]: r1 leads and r2's log lacks its records below the HWM (shared by both ISR forms)."""
            d = c.__dict__.get("disagree")
            if d is None:
                logs = [T.L_LOG[x] for x in c.loc]
                d = [[bad[r1][c.loc[r1] * n_logs + logs[r2]] for r2 in range(rf)] for r1 in range(rf)]
                c.__dict__["disagree"] = d
            return d

        def holds(c: _Comps) -> np.ndarray:
            d = disagreements(c)
            broken = np.zeros(len(c.qisr), dtype=bool)
            for r1 in range(rf):
                members = c.qisr if strong else c.isr[r1]
                for r2 in range(rf):
                    broken |= d[r1][r2] & ((members >> r2 & 1) != 0)
            return ~broken

        return holds

    # ---- symmetry -------------------------------------------------------------------------------
    def _perms(self):
        if self._perm is None:
            self._perm = self.T.permutation_tables()
        return self._perm

    def supports_symmetry(self) -> str:
        """'' when ``canonical`` can run here, else why not (its tables would be too big)."""
        try:
            self._perms()
        except KernelUnsupported as e:
            return str(e)
        return ""

    def __reduce__(self):
        # Ship the model (it pickles by configuration) and rebuild the tables where unpickled:
        # a Spark executor builds them once per process.
        return (kernel_for, (self.model,))

    def images(self, keys: np.ndarray) -> list[np.ndarray]:
        """The keys relabelled by every permutation of the brokers (the identity first)."""
        T = self.T
        perms, local_t, isr_t, rq_t = self._perms()
        c = _Comps(T, keys)
        out = [keys]
        for k in range(1, len(perms)):
            p = perms[k]
            locs = [None] * T.rf
            for i in range(T.rf):
                locs[p[i]] = local_t[k][c.loc[i]]
            out.append(self.encode(locs, c.nid, isr_t[k][c.qisr], rq_t[k][c.rq]))
        return out

    def canonical(self, keys: np.ndarray) -> np.ndarray:
        """The smallest relabelling of each key: one representative per orbit (exact reduction)."""
        images = self.images(keys)
        best = images[0].copy()
        for img in images[1:]:
            if self.words == 1:
                np.minimum(best[0], img[0], out=best[0])
            else:
                hi = self.words - 1
                smaller = img[hi] < best[hi]
                tie = img[hi] == best[hi]
                for w in range(hi - 1, -1, -1):
                    smaller |= tie & (img[w] < best[w])
                    tie &= img[w] == best[w]
                best[:, smaller] = img[:, smaller]
        return best

    def orbit_sizes(self, keys: np.ndarray) -> np.ndarray:
        """How many distinct states each key's orbit holds (for the count before reduction)."""
        fps = np.stack([self.fingerprints(img) for img in self.images(keys)], axis=1)
        fps.sort(axis=1)
        return 1 + np.count_nonzero(fps[:, 1:] != fps[:, :-1], axis=1)

    def canonical_of_scalar(self, state: int) -> int:
        """The kernel's canonical key of a scalar state (trace replay under symmetry)."""
        k = self.keys_of_ints([self.key_of_scalar(state)])
        return self.int_of_key(self.canonical(k)[:, 0])


_RECENT: dict = {}  # config -> kernel of the last few configurations (tables are built once per process)
_RECENT_SIZE = 2


def kernel_for(model: ReplicationModel) -> VectorKernel:
    """The vector kernel of the model's configuration, built once per process and kept for the
    last few configurations: KernelUnsupported if there is none."""
    kernel = _RECENT.get(model.config)
    if kernel is None:
        kernel = VectorKernel(model)
        while len(_RECENT) >= _RECENT_SIZE:
            del _RECENT[next(iter(_RECENT))]
        _RECENT[model.config] = kernel
    return kernel
