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
"""

from __future__ import annotations

from itertools import permutations, product
from math import factorial

from .layout import Layout, replica_reader


class Symmetry:
    def __init__(self, layout: Layout) -> None:
        L = layout
        self.layout = L
        rf = L.rf
        self.rf = rf
        self.perms = list(permutations(range(rf)))  # perm[i] = new label of replica i
        self.perm_index = {}
        for k, p in enumerate(self.perms):
            order = [0] * rf
            for old, new in enumerate(p):
                order[new] = old
            self.perm_index[tuple(order)] = k

        def relabel_mask(p: tuple[int, ...], mask: int) -> int:
            out = 0
            for r in range(rf):
                if mask >> r & 1:
                    out |= 1 << p[r]
            return out

        self.isr_perm = [[relabel_mask(p, m) for m in range(L.n_isr)] for p in self.perms]
        n_slot = (rf + 1) * L.n_isr
        self.slot_perm = [
            [
                L.slot_value(p[L.slot_leader(v)] if L.slot_leader(v) >= 0 else -1, relabel_mask(p, L.slot_isr(v)))
                for v in range(n_slot)
            ]
            for p in self.perms
        ]
        self.meta_perm = [
            [
                L.meta_of(
                    L.meta_hw[m],
                    L.meta_epoch[m],
                    p[L.meta_leader[m]] if L.meta_leader[m] >= 0 else -1,
                    relabel_mask(p, L.meta_isr[m]),
                    L.meta_life[m],
                    L.meta_since[m],
                )
                for m in range(L.n_meta)
            ]
            for p in self.perms
        ]
        # Identity-free signature of a replica's meta, per position: the leader only as
        # none/self/other, the ISR only as (contains self, size).
        self.sig_meta = []
        for r in range(rf):
            table = []
            for m in range(L.n_meta):
                lead = L.meta_leader[m]
                rel = 0 if lead < 0 else (1 if lead == r else 2)
                isr = L.meta_isr[m]
                code = (
                    ((L.meta_hw[m] * L.n_meta_epoch + L.meta_epoch[m] + 1) * 3 + rel) * 2 + (isr >> r & 1)
                ) * (rf + 1) + L.popcount[isr]
                table.append((code * L.n_life + L.meta_life[m]) * L.n_since + L.meta_since[m] + 1)
            self.sig_meta.append(table)
        self.sig_shift = max(max(t) for t in self.sig_meta).bit_length()
        self.full_group = factorial(rf)
        self._build()

    def _build(self) -> None:
        L = self.layout
        rf = self.rf
        R = range(rf)
        SH = L.local_shift
        MB, MM, LM = L.meta_bits, L.meta_mask, L.local_mask
        SHM = L.shared_mask
        QI_SH, QI_M = L.f_quorum_isr.shift, L.f_quorum_isr.mask
        SLOT_SH = [f.shift for f in L.f_slots]
        SLOT_M = L.f_slots[0].mask
        SIG = self.sig_meta
        SIG_SH = self.sig_shift
        PERM_INDEX = self.perm_index
        META_PERM = self.meta_perm
        ISR_PERM = self.isr_perm
        SLOT_PERM = self.slot_perm
        NLE_SH, NLE_M = L.f_next_epoch.shift, L.f_next_epoch.mask
        CTRL_SH, CTRL_M = L.controller_shift, L.controller_mask
        keep_shared = SHM & ~(CTRL_M << CTRL_SH)

        class ControllerPerm(dict):
            """controller bits (quorum ISR, next epoch, request slots) -> relabelled, per relabelling."""

            def __init__(self, k: int) -> None:
                super().__init__()
                self.k = k

            def __missing__(self, ctrl: int) -> int:
                k, s = self.k, ctrl << CTRL_SH
                out = ISR_PERM[k][(s >> QI_SH) & QI_M] << QI_SH | ((s >> NLE_SH) & NLE_M) << NLE_SH
                for e in range((s >> NLE_SH) & NLE_M):
                    out |= SLOT_PERM[k][(s >> SLOT_SH[e]) & SLOT_M] << SLOT_SH[e]
                v = self[ctrl] = out >> CTRL_SH
                return v

        class LocalPerm(dict):
            """replica local -> relabelled local, per relabelling (logs keep their records)."""

            def __init__(self, k: int) -> None:
                super().__init__()
                self.mp = META_PERM[k]

            def __missing__(self, local: int) -> int:
                v = self[local] = (local & ~MM) | self.mp[local & MM]
                return v

        ctrl_perms = [ControllerPerm(k) for k in range(len(self.perms))]
        local_perms = [LocalPerm(k) for k in range(len(self.perms))]
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

        def orders(s: int, sig: list[int]) -> list[tuple[int, ...]]:
            order = tuple(sorted(R, key=sig.__getitem__))
            if len(set(sig)) == rf:
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

        def canonical(s: int) -> int:
            sig = signatures(s)
            if in_order(sig):
                return s  # strictly sorted, so no ties: the state is its own representative
            cands = orders(s, sig)
            locs = raw_locals(s)
            if len(cands) == 1:
                return apply(s, cands[0], locs)
            return min(apply(s, o, locs) for o in cands)

        def orbit_size(s: int) -> int:
            """|orbit| = |group| / |stabiliser|; only tie-preserving relabellings can fix s."""
            sig = signatures(s)
            if len(set(sig)) == rf:
                return self.full_group
            cands = orders(s, sig)
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


class _SigTable(dict):
    """local index -> identity-free signature (log, then the meta signature), filled on demand."""

    def __init__(self, sig_meta: list[int], sig_shift: int, meta_bits: int, meta_mask: int) -> None:
        super().__init__()
        self.sig_meta, self.sig_shift, self.meta_bits, self.meta_mask = sig_meta, sig_shift, meta_bits, meta_mask

    def __missing__(self, local: int) -> int:
        v = self[local] = ((local >> self.meta_bits) << self.sig_shift) | self.sig_meta[local & self.meta_mask]
        return v
