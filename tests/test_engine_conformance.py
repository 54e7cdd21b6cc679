"""Every engine runs any protocol: two toy models with exact counts, through every engine.

The toys (``model/toy.py``) are written as the Kafka model is, so each engine meets
them through the same small interface: a model's initial states, successors, step and
symmetry; its vector kernel and symbolic form, derived from the definitions. Their
counts are worked out by hand below, not taken from a run:

* counters (limit L): every pair (a, b) in 0..L is reachable, (L + 1)**2 states; a state
  has a successor per counter below L, so (L + 1) * L * 2 successors plus the initial
  state are generated; the deepest state (L, L) is 2L + 1 states from the start;
  ``a-below-limit`` breaks first at a = L, L + 1 states deep; ``both-full`` is (L, L).
* tokens (rf brokers): a set V of visited brokers and a holder, none or in V:
  2**rf + rf * 2**(rf - 1) states; up to relabelling, V's size and whether someone holds
  the token: 2 * rf + 1. With the token free a state has rf successors, else one.
  ``one-visited`` breaks first after grab, release, grab (4 states); ``all-visited``
  needs rf grabs and rf - 1 releases (2 * rf states).
"""

from __future__ import annotations

import pytest

from isrcheck.checker import BfsEngine, CheckOptions, get_engine
from isrcheck.model.toy import COUNTER_PROPERTIES, TOKEN_PROPERTIES, ToyConfig, counters_model, tokens_model

L, RF = 3, 3
COUNTERS = dict(
    states=(L + 1) ** 2, full=(L + 1) ** 2, generated=(L + 1) * L * 2 + 1, depth=2 * L + 1,
    lengths={"sum-bounded": None, "a-below-limit": L + 1, "both-full": 2 * L + 1},
    status={"sum-bounded": "holds", "a-below-limit": "violated", "both-full": "holds"},
)
free = 2**RF  # states with the token free
held = RF * 2 ** (RF - 1)  # states with a holder, who is in V
TOKENS = dict(
    states=free + held, full=free + held, generated=free * RF + held + 1, depth=2 * RF + 1,
    reduced=2 * RF + 1, reduced_generated=(RF + 1) * RF + RF + 1,
    lengths={"holder-visited": None, "one-visited": 4, "all-visited": 2 * RF},
    status={"holder-visited": "holds", "one-visited": "violated", "all-visited": "holds"},
)
TOYS = {
    "counters": (counters_model, COUNTER_PROPERTIES, COUNTERS),
    "tokens": (tokens_model, TOKEN_PROPERTIES, TOKENS),
}
EXPLICIT = {
    "bfs-scalar": lambda: BfsEngine(kernel="scalar", workers=1),
    "bfs-vector": lambda: BfsEngine(kernel="vector", workers=1),
    "bfs-parallel": lambda: BfsEngine(kernel="scalar", workers=2),
    "bfs-vector-processes": lambda: BfsEngine(kernel="vector", workers=2, processes=True),
}


def check(toy: str, engine, symmetry: bool = False, **options):
    make, props, _ = TOYS[toy]
    model = make(ToyConfig(rf=RF, limit=L))
    return engine.check(model, props, CheckOptions(explore_all=True, symmetry=symmetry, **options))


def verdicts(result) -> dict:
    return {p.name: (p.status, p.trace_length) for p in result.properties}


def expected(toy: str) -> dict:
    want = TOYS[toy][2]
    return {name: (want["status"][name], want["lengths"][name]) for name in want["status"]}


@pytest.mark.parametrize("engine", list(EXPLICIT))
@pytest.mark.parametrize("toy", list(TOYS))
def test_each_explicit_engine_counts_the_toys_states_exactly(toy, engine):
    result = check(toy, EXPLICIT[engine]())
    want = TOYS[toy][2]
    assert (result.stats.states, result.stats.generated, result.stats.depth) == (
        want["states"], want["generated"], want["depth"],
    )
    assert verdicts(result) == expected(toy)
    assert result.kernel == ("vector" if engine.startswith("bfs-vector") else "scalar")
    assert result.processes == (engine in ("bfs-parallel", "bfs-vector-processes"))


@pytest.mark.parametrize("engine", list(EXPLICIT))
def test_each_explicit_engine_reduces_the_tokens_by_symmetry_exactly(engine):
    result = check("tokens", EXPLICIT[engine](), symmetry=True)
    assert (result.stats.states, result.stats.full_states, result.stats.generated) == (
        TOKENS["reduced"], TOKENS["states"], TOKENS["reduced_generated"],
    )
    assert verdicts(result) == expected("tokens")


@pytest.mark.parametrize("toy", list(TOYS))
def test_the_symbolic_engine_finds_the_same_shortest_traces_and_proves_what_holds(toy):
    result = check(toy, get_engine("z3", prove="induction", prove_timeout=30.0), max_depth=2 * max(L, RF) + 2)
    found = verdicts(result)
    for name, (status, length) in expected(toy).items():
        assert found[name] == (("proved" if status == "holds" and length is None else status), length), name


@pytest.mark.spark
@pytest.mark.parametrize("kernel", ["scalar", "vector"])
@pytest.mark.parametrize("toy", list(TOYS))
def test_spark_in_local_mode_counts_the_toys_states_exactly(toy, kernel):
    from isrcheck.checker.spark_engine import SparkEngine

    result = check(toy, SparkEngine(master="local[2]", partitions=3, kernel=kernel))
    want = TOYS[toy][2]
    assert (result.stats.states, result.stats.generated, result.stats.depth) == (
        want["states"], want["generated"], want["depth"],
    )
    assert verdicts(result) == expected(toy)
