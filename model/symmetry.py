"""Exact symmetry reduction over replica identities.

Replicas are interchangeable: relabelling brokers maps reachable states to
reachable states and keeps every property's verdict. ``canonical(state)`` maps a
state to one representative of its orbit under all relabellings: the smallest
packed int among the relabellings that sort the replicas by an
identity-free signature. Because the signature does not depend on the labels, the
set of sorting relabellings of ``p(s)`` is that of ``s`` composed with ``p^-1``, so
both give the same minimum: the reduction is exact, not merely sound. Ties in the
signature (identical replicas) are resolved by trying every order inside the tie.

``orbit_size(state)`` counts the distinct states of the orbit, so that the full
state count can be reported beside the reduced one without a second search.

The tables come from the state schema: every field whose kind names brokers
(``Kind.brokers``) is relabelled, in a replica's meta and among the shared fields.
"""

from __future__ import annotations

from functools import partial
from itertools import permutations, product
from math import factorial, prod

from .layout import Layout, replica_reader
from .schema import Brokers, RequestsKind, relabel_mask


class _Memo(dict):
    """key -> f(key), computed on first use: a dict lookup after (relabelled blocks and locals)."""

    def __init__(self, f) -> None:
        super().__init__()
        self.f = f

    def __missing__(self, key: int) -> int:
        v = self[key] = self.f(key)
        return v


def _orders(sig: list[int]) -> list[tuple[int, ...]]:
    """The replica orders that sort ``sig``: one, or every order of the tied groups."""
    order = tuple(sorted(range(len(sig)), key=sig.__getitem__))
    if len(set(sig)) == len(sig):
        return [order]
    groups: list[list[int]] = []
    prev = None
    for r in order:
        if sig[r] != prev:
            groups.append([])
            prev = sig[r]
        groups[-1].append(r)
    choices = [list(permutations(g)) for g in groups]
    return [tuple(x for part in combo for x in part) for combo in product(*choices)]


class Symmetry:
    def __init__(self, layout: Layout) -> None:
        L = self.layout = layout
        cfg = L.config
        self.rf = rf = L.rf
        self.perms = list(permutations(range(rf)))  # perm[i] = new label of replica i
        self.perm_index = {}
        for k, p in enumerate(self.perms):
            order = [0] * rf
            for old, new in enumerate(p):
                order[new] = old
            self.perm_index[tuple(order)] = k
        kept = [f for f in L.meta_fields if f.kept(cfg)]
        self.meta_perm = [self._relabelled_metas(kept, p) for p in self.perms]
        # Identity-free signature of a replica's meta, per position: each field's code, but a
        # broker only as none/self/other and a set of brokers only as (contains self, size),
        # computed per meta index on first use (no NumPy here: the Spark executors' scalar
        # tasks import this module without it).
        parts = [self._signature_parts(kept, r) for r in range(rf)]
        self.sig_meta = [_Memo(partial(_signature, p)) for p in parts]
        self.sig_shift = (prod(scale for _, _, _, scale in parts[0]) - 1).bit_length()
        self.full_group = factorial(rf)
        self._shared_block()
        self._build()

    def _signature_parts(self, kept: list, r: int) -> list[tuple[int, int, list[int], int]]:
        """Per kept meta field: its unit and radix in the meta index, the signature part of each
        of its codes seen from replica ``r``, and how many parts there are."""
        L, rf = self.layout, self.rf
        parts = []
        for f in kept:
            n = L.radix[f.name]
            if isinstance(f.kind, Brokers):
                part = [(c >> r & 1) * (rf + 1) + L.popcount[c] for c in range(n)]
                scale = 2 * (rf + 1)
            elif f.kind.brokers:  # one broker or none, coded leader + 1
                part = [0 if c == 0 else 1 if c - 1 == r else 2 for c in range(n)]
                scale = 3
            else:
                part, scale = list(range(n)), n
            parts.append((L.unit[f.name], n, part, scale))
        return parts

    def _relabelled_metas(self, kept: list, perm: tuple[int, ...]) -> _Memo:
        """Meta index -> the meta index with its broker fields relabelled by ``perm``, computed on
        first use: a table per permutation would hold rf! * n_meta entries (9 GB at rf 6 on
        4.1, whose AlterPartition proposal multiplies the metas by rf + 1), while a search
        meets a small part of them."""
        L = self.layout
        moves = [(L.unit[f.name], L.radix[f.name], [f.kind.relabel(c, perm) for c in range(L.radix[f.name])])
                 for f in kept if f.kind.brokers]

        def relabel(meta: int) -> int:
            for unit, radix, moved in moves:
                c = meta // unit % radix
                meta += (moved[c] - c) * unit
            return meta

        return _Memo(relabel)

    def _shared_block(self) -> None:
        """The shared bits that name brokers (the quorum ISR and the requests: the controller's
        state), as one block relabelled through a cache, and how to relabel it."""
        L = self.layout
        named = [f for f in L.schema.shared_fields if f.kept(L.config) and f.kind.brokers]
        parts = []  # (shift, mask, relabel of the field's value) inside the block
        for f in named:
            bf = L.shared[f.name]
            if isinstance(f.kind, RequestsKind):
                parts.append((bf.shift, bf.mask, None))  # the count: kept
                for slot in L.slots:
                    parts.append((slot.shift, slot.mask, "slot"))
            else:
                parts.append((bf.shift, bf.mask, f.kind))
        self.block_shift = min((p[0] for p in parts), default=0)
        end = max((p[0] + p[1].bit_length() for p in parts), default=0)
        self.block_mask = (1 << (end - self.block_shift)) - 1
        self.block_parts = [(sh - self.block_shift, m, how) for sh, m, how in parts]

    def relabel_block(self, k: int, block: int) -> int:
        """The controller block's value with brokers relabelled by ``perms[k]``."""
        L, p = self.layout, self.perms[k]
        out = block
        for sh, m, how in self.block_parts:
            v = (block >> sh) & m
            if how is None:
                continue
            if how == "slot":
                ld, isr = L.slot_leader(v), L.slot_isr(v)
                w = L.slot_value(p[ld] if ld >= 0 else -1, relabel_mask(isr, p)) if v else 0
            else:
                w = how.relabel(v, p)
            out += (w - v) << sh
        return out

    def _build(self) -> None:
        """Compile ``canonical`` and ``orbit_size`` for this layout: unrolled readers, memoised relabellings."""
        L = self.layout
        rf = self.rf
        R = range(rf)
        SH = L.local_shift
        MB, MM, LM = L.meta_bits, L.meta_mask, L.local_mask
        SIG = self.sig_meta
        SIG_SH = self.sig_shift
        PERM_INDEX = self.perm_index
        META_PERM = self.meta_perm
        CTRL_SH, CTRL_M = self.block_shift, self.block_mask
        keep_shared = L.shared_mask & ~(CTRL_M << CTRL_SH)
        relabel_block = self.relabel_block

        ctrl_perms = [_Memo(partial(relabel_block, k)) for k in range(len(self.perms))]
        local_perms = [_Memo(lambda local, mp=META_PERM[k]: (local & ~MM) | mp[local & MM])  # logs keep their records
                       for k in range(len(self.perms))]
        raw_locals = eval(  # noqa: S307 - unrolled from ints only, like layout.replica_reader
            "lambda s: (" + ", ".join(f"(s >> {sh}) & {LM}" for sh in SH) + ",)"
        )

        def apply(s: int, order: tuple[int, ...], locs: tuple[int, ...]) -> int:
            k = PERM_INDEX[order]
            lp = local_perms[k]
            out = (s & keep_shared) | (ctrl_perms[k][(s >> CTRL_SH) & CTRL_M] << CTRL_SH)
            for j in R:
                out |= lp[locs[order[j]]] << SH[j]
            return out

        sig_tables = [_SigTable(SIG[r], SIG_SH, MB, MM) for r in R]
        signatures = replica_reader(sig_tables, SH, LM)
        in_order = eval("lambda g: " + " < ".join(f"g[{i}]" for i in range(rf)) if rf > 1 else "lambda g: True")  # noqa: S307

        def canonical(s: int) -> int:
            sig = signatures(s)
            if in_order(sig):
                return s  # strictly sorted, so no ties: the state is its own representative
            cands = _orders(sig)
            locs = raw_locals(s)
            if len(cands) == 1:
                return apply(s, cands[0], locs)
            return min(apply(s, o, locs) for o in cands)

        def orbit_size(s: int) -> int:
            """|orbit| = |group| / |stabiliser|; only tie-preserving relabellings can fix s."""
            sig = signatures(s)
            if len(set(sig)) == rf:
                return self.full_group
            cands = _orders(sig)
            locs = raw_locals(s)
            images = {apply(s, o, locs) for o in cands}
            return self.full_group * len(images) // len(cands)

        self._apply = apply
        self.canonical = canonical
        self.orbit_size = orbit_size

    def relabel(self, state: int, perm: tuple[int, ...]) -> int:
        """The state with replica i renamed perm[i] (used by tests and trace display)."""
        order = [0] * self.rf
        for old, new in enumerate(perm):
            order[new] = old
        L = self.layout
        return self._apply(state, tuple(order), tuple(L.local(state, r) for r in range(self.rf)))


def _signature(parts: list[tuple[int, int, list[int], int]], meta: int) -> int:
    sig = 0
    for unit, radix, part, scale in parts:
        sig = sig * scale + part[meta // unit % radix]
    return sig


class _SigTable(dict):
    """local index -> identity-free signature (log, then the meta signature), filled on demand."""

    def __init__(self, sig_meta: _Memo, sig_shift: int, meta_bits: int, meta_mask: int) -> None:
        super().__init__()
        self.sig_meta, self.sig_shift, self.meta_bits, self.meta_mask = sig_meta, sig_shift, meta_bits, meta_mask

    def __missing__(self, local: int) -> int:
        v = self[local] = ((local >> self.meta_bits) << self.sig_shift) | self.sig_meta[local & self.meta_mask]
        return v
