"""The canonical forms compiled by Numba (``model/kernel_symmetry_loops.py``) are exactly the
NumPy ones (``KernelSymmetry._canonical_block``): the same keys and orbit sizes on the
successors a search meets (sorted and unsorted replicas, ties of two and more), on arbitrary
representable states, for both codecs and for one to three words; and a search that makes
them from its first level finds what one on NumPy finds."""

from __future__ import annotations

import numpy as np
import pytest

import isrcheck.checker.vector_store as store
import isrcheck.model.kernel_symmetry_loops as loops
from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.kernel import KernelDomainError, kernel_for
from isrcheck.properties import select

from .test_kernel import random_keys

CONFIGS = {  # codec and words: the main job is one mixed-radix word, the others bit fields
    "main-job-3.9": ModelConfig(rf=3, min_isr=2, kafka_version="3.9"),
    "rf3-4.1": ModelConfig(rf=3, min_isr=2, max_records=1),
    "rf3-acks1-unclean-disk-loss": ModelConfig(rf=3, min_isr=1, acks="1", disk_loss=1, unclean_election=True,
                                               kafka_version="3.9"),
    "rf4-min-isr2": ModelConfig(rf=4, min_isr=2, max_records=1),
    "rf5-min-isr3-3.9": ModelConfig(rf=5, min_isr=3, max_records=1, max_leader_epoch=1, kafka_version="3.9"),
    "rf5-two-records": ModelConfig(rf=5, min_isr=3, max_records=2, max_leader_epoch=1),
    "rf6": ModelConfig(rf=6, min_isr=4, max_records=1, max_leader_epoch=1),  # the widest the loop takes (RF_MAX)
}


def _successors(kernel, levels: int, cap: int = 4000) -> np.ndarray:
    """The raw successors of the first levels (before canonical forms), a few thousand a level."""
    keys, found = kernel.initial_keys(), []
    for _ in range(levels):
        succ, _, _ = kernel.expand(keys)
        found.append(succ[:, :cap])
        keys = np.unique(kernel.canonical(succ), axis=1)[:, :cap]
    return np.concatenate(found, axis=1)


def _agree(sym, keys: np.ndarray) -> None:
    want_keys, want_orbits = sym.canonical_and_orbits(keys)
    got_keys, got_orbits = sym.canonical_and_orbits(keys, compiled=True)
    assert got_keys.dtype == want_keys.dtype and got_orbits.tolist() == want_orbits.tolist()
    assert (got_keys == want_keys).all()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_compiled_canonical_forms_are_the_numpy_ones(name):
    kernel = kernel_for(ReplicationModel(CONFIGS[name]))
    sym = kernel.symmetry()
    assert sym._compiled() is not None  # the loop applies to every configuration here
    keys = _successors(kernel, levels=12)
    assert keys.shape[1] > 5_000 and keys.shape[0] == kernel.words
    _agree(sym, keys)
    canon, orbits = sym.canonical_and_orbits(keys)
    assert min(orbits) < sym.full_group in orbits  # tied replicas and distinct ones both met
    assert (canon != keys).any(axis=0).any()  # and states the sorting relabels
    _agree(sym, np.ascontiguousarray(keys[:, ::-1]))  # order and layout do not matter
    _agree(sym, keys[:, :0])


@pytest.mark.parametrize("name", ["rf3-acks1-unclean-disk-loss", "rf4-min-isr2", "rf5-two-records"])
def test_compiled_canonical_forms_agree_on_arbitrary_representable_states(name):
    """Reachable or not, wherever NumPy's canonical forms are defined (a value outside the
    tables raises there, and such blocks are skipped)."""
    kernel = kernel_for(ReplicationModel(CONFIGS[name]))
    sym = kernel.symmetry()
    compared = 0
    for seed in range(40):
        keys = random_keys(kernel, 50, seed=seed)
        try:
            sym.canonical_and_orbits(keys)
        except KernelDomainError:
            continue
        _agree(sym, keys)
        compared += keys.shape[1]
    assert compared >= 500


def test_where_the_loop_does_not_fit_the_numpy_forms_are_used(monkeypatch):
    monkeypatch.setattr(loops.CompiledSymmetry, "fits", staticmethod(lambda sym: False))
    kernel = kernel_for(ReplicationModel(ModelConfig(rf=4, min_isr=2, max_records=1, crashes=0)))
    sym = kernel.symmetry()
    sym.compiled = None
    keys = _successors(kernel, levels=6)
    assert sym._compiled() is None
    _agree(sym, keys)
    sym.compiled = None  # the kernel is kept for the process: let the next test build the loop


@pytest.mark.parametrize("processes", [False, True])
def test_a_search_making_compiled_canonical_forms_from_its_first_level_finds_the_same(monkeypatch, processes):
    config = ModelConfig(rf=5, min_isr=3, max_records=1, max_leader_epoch=1, kafka_version="3.9")
    model, props = ReplicationModel(config), select(config, None)
    engine = BfsEngine(kernel="vector", workers=2, processes=processes)
    options = CheckOptions(symmetry=True, explore_all=True, max_depth=16)
    monkeypatch.setattr(store, "COMPILED_CANONICAL_LEVEL", 1 << 40)
    plain = engine.check(model, props, options)
    calls = []
    real = loops.CompiledSymmetry.canonical_and_orbits
    monkeypatch.setattr(store, "COMPILED_CANONICAL_LEVEL", 0)
    monkeypatch.setattr(loops.CompiledSymmetry, "canonical_and_orbits",
                        lambda self, keys: calls.append(keys.shape[1]) or real(self, keys))
    compiled = engine.check(model, props, options)
    initial = kernel_for(model).initial_keys().shape[1]  # canonical before the first level: NumPy's
    assert processes or sum(calls) == compiled.stats.generated - initial  # forked workers' calls are not seen here
    stats = lambda r: (r.stats.states, r.stats.generated, r.stats.depth, r.stats.full_states, r.search_note)
    assert stats(compiled) == stats(plain) and plain.stats.states > 10_000
    assert [(p.name, p.status, p.trace_length) for p in compiled.properties] == [
        (p.name, p.status, p.trace_length) for p in plain.properties]
