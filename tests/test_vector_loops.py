"""The loops Numba compiles (``checker/vector_loops.py``) give exactly what the NumPy code they
stand for gives, on their own and inside a search that uses them from its first level."""

from __future__ import annotations

import numpy as np
import pytest

import isrcheck.checker.vector_store as store
from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.checker.vector_arrays import first_in_groups, radix_argsort
from isrcheck.checker.vector_loops import gallop, sorted_firsts
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select

TOP = np.uint64((1 << 64) - 1)


def _fingerprints(rng, m: int, distinct: int) -> np.ndarray:
    """m uniform fingerprints drawn from ``distinct`` values (repeats), the extremes among them."""
    pool = rng.integers(0, 1 << 63, max(1, distinct), dtype=np.int64).astype(np.uint64) * np.uint64(2)
    pool[:2] = [0, TOP] if len(pool) > 1 else [0]
    return rng.choice(pool, m)


@pytest.mark.parametrize("m,distinct", [(0, 1), (1, 1), (2, 1), (7, 3), (1000, 1), (1000, 900), (70_000, 50_000)])
@pytest.mark.parametrize("prio_type", [np.uint32, np.int64])
def test_sorted_firsts_is_the_radix_argsort_and_first_in_groups(m, distinct, prio_type):
    rng = np.random.default_rng(m + distinct)
    fp = _fingerprints(rng, m, distinct)
    prio = rng.integers(0, 1 << 31, m).astype(prio_type)
    index, least, values = sorted_firsts(fp, prio)
    want = first_in_groups(fp, radix_argsort(fp), prio)
    for got, expected in zip((index, least, values), want):
        assert got.dtype == expected.dtype and got.tolist() == expected.tolist()
    assert len(values) == len(np.unique(fp))


@pytest.mark.parametrize("n,m", [(0, 5), (1, 3), (50, 1), (5000, 100), (5000, 4000), (20_000, 20)])
def test_gallop_is_searchsorted_and_membership(n, m):
    rng = np.random.default_rng(n * 7 + m)
    values = np.unique(_fingerprints(rng, n, n)) if n else np.empty(0, dtype=np.uint64)
    fp = np.unique(np.concatenate([rng.choice(values, m // 2) if n else values,
                                   _fingerprints(rng, m - m // 2, m), np.array([0, TOP], dtype=np.uint64)]))
    pos, fresh = gallop(values, fp)
    assert pos.tolist() == np.searchsorted(values, fp).tolist()
    assert fresh.tolist() == (~np.isin(fp, values)).tolist()


@pytest.mark.parametrize("processes", [False, True])
def test_a_search_on_the_compiled_loops_from_its_first_level_finds_the_same(monkeypatch, processes):
    """rf 4's keys are two words (hashed fingerprints): with every visited set counted big, each
    chunk is sorted by ``sorted_firsts`` and most are located by ``gallop``."""
    config = ModelConfig(rf=4, min_isr=2, max_records=1, max_leader_epoch=1)
    model, props = ReplicationModel(config), select(config, None)
    engine = BfsEngine(kernel="vector", workers=2, processes=processes)
    plain = engine.check(model, props, CheckOptions(symmetry=True, explore_all=True))
    calls = []
    real = store.VisitedSet.locate
    monkeypatch.setattr(store, "SAMPLED_FROM", 1)
    monkeypatch.setattr(store, "COMPILED_LEVEL", 0)
    monkeypatch.setattr(store.VisitedSet, "locate", lambda self, fp: calls.append(self.compiled) or real(self, fp))
    compiled = engine.check(model, props, CheckOptions(symmetry=True, explore_all=True))
    assert processes or any(calls)  # forked workers' calls are not seen here
    stats = lambda r: (r.stats.states, r.stats.generated, r.stats.depth, r.stats.full_states, r.search_note)
    assert stats(compiled) == stats(plain)
    assert [(p.name, p.status, p.trace_length) for p in compiled.properties] == [
        (p.name, p.status, p.trace_length) for p in plain.properties]


def test_load_compiles_every_signature_the_search_calls():
    """bench/ loads the loops before its memory baseline: for both priority widths."""
    from isrcheck.checker.vector_loops import _sorted_firsts, load

    load()
    widths = {str(sig[1].dtype) for sig in _sorted_firsts.signatures}
    assert {"uint32", "int64"} <= widths


def test_the_compiled_loops_are_loaded_for_big_levels_of_a_big_set_of_hashed_fingerprints(monkeypatch):
    """Numba's import is paid only where the search is big and has big levels left; once paid,
    the loops stay (a one-word set never switches)."""
    monkeypatch.setattr(store, "SAMPLED_FROM", 100)
    small, big = np.arange(50, dtype=np.uint64), np.arange(200, dtype=np.uint64)
    canonical_level = store.COMPILED_CANONICAL_LEVEL
    for hashed, canonical, values, level, expected in [
        (True, False, small, 1 << 20, False), (True, False, big, 1000, False),
        (True, False, big, store.COMPILED_LEVEL, True), (False, False, big, 1 << 20, False),
        # where they make the canonical forms too: from smaller levels of any set
        (True, True, small, canonical_level - 1, False), (True, True, small, canonical_level, True),
        (False, True, big, 1 << 20, False),
    ]:
        visited = store.VisitedSet(hashed=hashed, canonical=canonical)
        visited.add(values, np.zeros(len(values), dtype=np.int64))
        visited.use_compiled(level)
        assert visited.compiled is expected, (hashed, canonical, len(values), level)
        visited.use_compiled(0)
        assert visited.compiled is expected  # for good
    visited = store.VisitedSet(hashed=True, canonical=True)  # not where the memory limit leaves too little
    visited.use_compiled(1 << 20, room=store.COMPILED_ROOM - 1)
    assert not visited.compiled
    visited.use_compiled(1 << 20, room=store.COMPILED_ROOM)
    assert visited.compiled
