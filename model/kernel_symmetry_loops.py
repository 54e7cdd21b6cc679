"""The vector kernel's canonical forms as one loop compiled by Numba (``kernel_symmetry.py``).

NumPy makes a batch's canonical forms in some thirty passes over the batch: components
read out, signatures, ranks, images by table gathers, tie candidates gathered by pattern,
their images and comparisons. At rf 4 and 5 most states tie somewhere, so the passes run
on many small gathers (152 to 156 ns a successor at rf 5 inside the search, measured). This loop does the same work
one state at a time, with the same tables: read the components, sort the replicas by
signature, relabel, try the relabellings inside the tied groups (less the groups whose
swaps fix the state) and keep the least image. Its keys and orbit sizes are exactly those
of ``KernelSymmetry._canonical_block`` (tests/test_kernel_symmetry_loops.py).

The search uses this loop only where Numba pays (``VisitedSet.use_compiled``).
"""

from __future__ import annotations

from math import factorial
from typing import Any

import numpy as np
from numba import njit

from .kernel_keys import BitFields
from .kernel_ties import tie_groups

I64 = np.int64
RF_MAX = 6  # loops of a known length: unrolled, a third of the time of loops to rf (measured)
PAST_RF = 1 << 62  # the signature of a replica past rf: greater than any
# the two big tables' codes (the relabelled slots: 38 MB at rf 5): int32 halves what their
# look-ups, at random, bring into the caches; one type for every configuration keeps one
# compiled signature (each new one compiles for some 4 s, the first time on a machine)
CODE = np.int32


class CompiledSymmetry:
    """One kernel symmetry's tables laid out as flat arrays for ``_canonical``."""

    def __init__(self, sym: Any) -> None:
        T, rf, n_perms = sym.T, sym.rf, len(sym.perms)
        names = [f"slot{r}" for r in range(rf)] + list(sym.shared)
        codec = T.codec
        self.bit_fields = isinstance(codec, BitFields)
        if self.bit_fields:
            fields = [codec.field[name] for name in names]
            word, shift, radix = ([getattr(f, a) for f in fields] for a in ("word", "shift", "mask"))
            radix = [m + 1 for m in radix]
        else:  # a mixed radix in one word: a component is (key // unit) % radix
            word, shift, radix = [0] * len(names), [codec.unit[n] for n in names], [codec.radix[n] for n in names]
        as_u64 = lambda v: np.array(v, dtype=np.uint64)  # noqa: E731
        layout = (np.array(word, dtype=I64), as_u64(shift), as_u64(radix))
        sets = [(names.index(name), is_set) for name, is_set in sym.shared_sets]
        refs, ref_width = sym.references if sym.references is not None else (np.zeros(1, I64), 0)
        rq_refs, rq_bits = sym.request_references if sym.request_references is not None else (np.zeros((rf, 1), I64), 0)
        rq = names.index(sym.requests) if sym.requests in sym.shared else -1
        shared = [sym.shared[name] for name in names[rf:]]
        offsets = np.concatenate([[0], np.cumsum([len(t) for t in shared])]).astype(I64)
        tie_of = [sym.ties.get(p, np.zeros(0, I64)) for p in range(1 << (rf - 1))]
        big_of = [[g for g in tie_groups(p) if g[1] > 2] for p in range(1 << (rf - 1))]
        self.tables = (
            rf, self.bit_fields, *layout,
            sym.signature, np.array([c for c, _ in sets], dtype=I64), np.array([s for _, s in sets], dtype=np.bool_),
            refs.astype(I64), ref_width, rq_refs.astype(I64), rq_bits,
            sym.perm_of_code, np.stack(sym.label).astype(I64), sym.compose, sym.slot_table.astype(CODE), T.n_slots,
            _codes(np.concatenate(shared)) if shared else np.zeros(1, CODE), offsets, np.diff(offsets) // n_perms,
            rq, T.n_slot + 1 if rq >= 0 else 0, T.rq_off if rq >= 0 else np.zeros(1, I64),
            T.RQ_NLE if rq >= 0 else np.zeros(1, I64),
            np.stack(T.RQ_SLOT_T).astype(I64) if rq >= 0 else np.zeros((1, 1), I64),
            T.rq_pow.astype(I64) if rq >= 0 else np.zeros(1, I64),
            *_ragged(tie_of), *_ragged([[b for b, _ in big] for big in big_of]),
            _ragged([[factorial(s) for _, s in big] for big in big_of])[1],
            np.array(sym.swap, dtype=I64), sym.full_group,
        )

    @staticmethod
    def fits(sym: Any) -> bool:
        """Whether the loop applies: rf within its unrolled loops, and every signature below
        PAST_RF, the signature it gives the places past rf."""
        own = int(sym.signature.max()).bit_length() + len(sym.shared_sets)
        return sym.rf <= RF_MAX and own + sym._reference_bits() <= 62

    def canonical_and_orbits(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keys = np.ascontiguousarray(keys)  # one compiled signature: a view would compile another
        best = np.empty_like(keys)
        orbits = np.empty(keys.shape[1], dtype=I64)
        _canonical(keys, best, orbits, *self.tables)
        return best, orbits


def _codes(table: np.ndarray) -> np.ndarray:
    """A table of codes (slots, shared fields' values) as CODE: they fit, whatever the tables."""
    assert not len(table) or (0 <= table.min() and table.max() < 1 << 31), "codes past 32 bits"
    return table.astype(CODE)


def _ragged(lists: list) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, values) of a list of integer lists."""
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(I64)
    values = np.array([v for x in lists for v in x], dtype=I64)
    return offsets, values if len(values) else np.zeros(1, I64)


@njit(cache=True, nogil=True)
def _read(key, comps, bit_fields, word, shift, radix):  # pragma: no cover - compiled
    for c in range(len(comps)):
        v = key[word[c]]
        comps[c] = np.int64((v >> shift[c]) & (radix[c] - 1)) if bit_fields else np.int64((v // shift[c]) % radix[c])


@njit(cache=True, nogil=True, inline="always")
def _relabel(out, comps, k, moved, rf, bit_fields, word, shift, label, slot_table, n_slots,
             shared, offsets, sizes, rq, rq_stride, rq_off, rq_nle, rq_digits, rq_pow):  # pragma: no cover
    """``out``, a copy of the key whose components are ``comps``, relabelled in place by perms[k]
    (``KernelSymmetry._image`` for one key). Inlined into its callers by Numba: a call passing
    arrays costs about as much as the work (their reference counts)."""
    for i in range(RF_MAX):
        if i < rf:
            moved[label[i, k]] = slot_table[k * n_slots + comps[i]]
    for c in range(len(comps)):  # no branch on a change: xor or add nothing
        old = comps[c]
        if c < rf:
            new = moved[c]
        elif c == rq:
            new = rq_off[rq_nle[old]]
            for e in range(rq_digits.shape[0]):
                new += shared[offsets[c - rf] + k * rq_stride + rq_digits[e, old]] * rq_pow[e]
        else:
            new = shared[offsets[c - rf] + k * sizes[c - rf] + old]
        w = word[c]
        if bit_fields:
            out[w] ^= np.uint64(old ^ new) << shift[c]
        else:  # modulo 2^64, as the mixed radix's own update
            out[w] = out[w] + np.uint64(new) * shift[c] - np.uint64(old) * shift[c]


@njit(cache=True, nogil=True)
def _canonical(keys, best, orbits, rf, bit_fields, word, shift, radix, signature, set_comp, set_is_set,
               refs, ref_width, rq_refs, rq_bits, perm_of_code, label, compose, slot_table, n_slots,
               shared, offsets, sizes, rq, rq_stride, rq_off, rq_nle, rq_digits, rq_pow,
               tie_off, tie_list, big_off, big_bits, big_fact, swap, full_group):  # pragma: no cover
    words, n = keys.shape
    n_comps = len(word)
    comps = np.empty(n_comps, I64)
    cur_comps = np.empty(n_comps, I64)
    sig = np.empty(RF_MAX, I64)
    rank = np.empty(RF_MAX, I64)
    moved = np.empty(rf, I64)
    cur = np.empty(words, np.uint64)
    img = np.empty(words, np.uint64)
    for s in range(n):
        for c in range(n_comps):
            v = keys[word[c], s]
            comps[c] = np.int64((v >> shift[c]) & (radix[c] - 1)) if bit_fields else np.int64((v // shift[c]) % radix[c])
        for r in range(RF_MAX):  # the signatures (KernelSymmetry._sorting); past rf, distinct and last
            if r < rf:
                x = signature[r, comps[r]]
                for q in range(len(set_comp)):
                    v = comps[set_comp[q]]
                    x = (x << 1) | (((v >> r) & 1) if set_is_set[q] else np.int64(v == r + 1))
                sig[r] = x
            else:
                sig[r] = PAST_RF + r
        ties = 0  # bit i * RF_MAX + j: replicas i < j tie
        for i in range(RF_MAX):
            for j in range(i + 1, RF_MAX):
                ties |= np.int64(sig[i] == sig[j]) << (i * RF_MAX + j)
        if ties and (ref_width or rq_bits):  # refined where two tie (_refine)
            total = 0
            if ref_width:
                for r in range(rf):
                    total += refs[comps[r]]
            for r in range(rf):
                if ref_width:
                    sig[r] = (sig[r] << ref_width) | ((total >> (r * ref_width)) & ((1 << ref_width) - 1))
                if rq_bits:
                    sig[r] = (sig[r] << rq_bits) | rq_refs[r, comps[rq]]
            ties = 0
            for i in range(RF_MAX):
                for j in range(i + 1, RF_MAX):
                    ties |= np.int64(sig[i] == sig[j]) << (i * RF_MAX + j)
        rank[:] = 0  # each pair compared once, without branches: signatures compare at random
        for i in range(RF_MAX):
            for j in range(i + 1, RF_MAX):
                before = np.int64(sig[i] <= sig[j])  # i keeps the lower label on a tie
                rank[j] += before
                rank[i] += 1 - before
        code, power = 0, 1
        for i in range(RF_MAX):
            if i < rf:
                code += rank[i] * power
                power *= rf
        k = perm_of_code[code]
        pattern = 0
        if ties:  # the positions of i and j, and those between, are one tied group
            for i in range(rf):
                for j in range(i + 1, rf):
                    if (ties >> (i * RF_MAX + j)) & 1:
                        pattern |= (1 << rank[j]) - (1 << rank[i])
        makers, factor = 1, 1
        q, end = -1, 0  # q = -1: the sorting relabelling k; then the relabellings inside the tied groups
        while q < end:
            kk = k if q < 0 else compose[tie_list[q], k]
            for w in range(words):
                img[w] = keys[w, s]
            if kk:
                _relabel(img, comps, kk, moved, rf, bit_fields, word, shift, label, slot_table, n_slots,
                         shared, offsets, sizes, rq, rq_stride, rq_off, rq_nle, rq_digits, rq_pow)
            if q < 0:
                cur[:] = img
                if pattern and big_off[pattern + 1] > big_off[pattern]:  # KernelSymmetry._fixed_groups
                    pattern, factor = _fixed_groups(cur, cur_comps, img, moved, pattern, rf, bit_fields, word, shift,
                                                    radix, label, slot_table, n_slots, shared, offsets, sizes, rq,
                                                    rq_stride, rq_off, rq_nle, rq_digits, rq_pow, big_off, big_bits,
                                                    big_fact, swap)
                q, end = tie_off[pattern], tie_off[pattern + 1]  # none where no tie is left
                continue
            order = 0  # the image against the least so far, the last word most significant
            for w in range(words - 1, -1, -1):
                if img[w] != cur[w]:
                    order = -1 if img[w] < cur[w] else 1
                    break
            if order < 0:
                cur[:] = img
                makers = 1
            elif order == 0:
                makers += 1
            q += 1
        for w in range(words):
            best[w, s] = cur[w]
        orbits[s] = full_group // (makers * factor)


@njit(cache=True, nogil=True)
def _fixed_groups(cur, cur_comps, img, moved, pattern, rf, bit_fields, word, shift, radix, label, slot_table,
                  n_slots, shared, offsets, sizes, rq, rq_stride, rq_off, rq_nle, rq_digits, rq_pow, big_off,
                  big_bits, big_fact, swap):  # pragma: no cover - compiled
    """The tie pattern less the groups of three or more whose neighbour swaps all fix the sorted
    image ``cur``, and the product of their sizes' factorials."""
    _read(cur, cur_comps, bit_fields, word, shift, radix)
    fixes = 0
    for j in range(rf - 1):
        tested = False
        for g in range(big_off[pattern], big_off[pattern + 1]):
            tested = tested or (big_bits[g] >> j) & 1
        if tested:
            img[:] = cur
            _relabel(img, cur_comps, swap[j], moved, rf, bit_fields, word, shift, label, slot_table, n_slots,
                     shared, offsets, sizes, rq, rq_stride, rq_off, rq_nle, rq_digits, rq_pow)
            same = True
            for w in range(len(cur)):
                same = same and img[w] == cur[w]
            if same:
                fixes |= 1 << j
    pruned, factor = pattern, 1
    for g in range(big_off[pattern], big_off[pattern + 1]):
        if fixes & big_bits[g] == big_bits[g]:
            pruned &= ~big_bits[g]
            factor *= big_fact[g]
    return pruned, factor
