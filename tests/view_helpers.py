"""Traces for the view tests, made by the real checker and by a replayed random walk."""

from __future__ import annotations

import random
from functools import lru_cache

from isrcheck.checker import CheckOptions
from isrcheck.cli.runner import CheckRun, run_check
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import BY_NAME
from isrcheck.traces import Trace, trace_from_path

KIP101 = ModelConfig(rf=2, protocol="hw-truncation", core=True)
DISK_LOSS = ModelConfig(rf=2, protocol="kip-320", disk_loss=1)


@lru_cache(maxsize=None)
def checked_trace(config: ModelConfig, prop: str, symmetry: bool = False) -> Trace:
    """The trace check-model saves for ``prop`` (BFS: the shortest)."""
    run = CheckRun(config, properties=(prop,), options=CheckOptions(symmetry=symmetry), trace_dir=None)
    return run_check(run).traces[prop]


def kip101_trace() -> Trace:
    """The KIP-101 counterexample: hw-truncation, rf 2, weak-isr (the check-model command of the brief)."""
    return checked_trace(KIP101, "weak-isr")


@lru_cache(maxsize=None)
def walk_model(rf: int = 5) -> ReplicationModel:
    """The model of the long walk, built once (its tables take seconds at rf 5)."""
    return ReplicationModel(
        ModelConfig(rf=rf, protocol="kip-101", max_records=4, max_leader_epoch=5, crashes=2, disk_loss=1,
                    acks="1", min_isr=2)
    )


@lru_cache(maxsize=None)
def long_walk_trace(steps: int = 40, rf: int = 5, prop: str = "acked-survive") -> Trace:
    """A ``steps``-action random walk over the rf-``rf`` model whose last state breaks ``prop``.

    Seeds are tried in order, so the trace is the same on every run. The walk keeps
    ``prop`` until its last step, which breaks it, as a counterexample's would.
    """
    model = walk_model(rf)
    holds = BY_NAME[prop].compile(model)  # the packed-int predicate: no decoding on the walk
    for seed in range(1000):
        rng = random.Random(seed)
        state = model.init_states()[0]
        states, actions = [state], []
        for i in range(steps):
            wanted = i == steps - 1
            options = [(a, s) for a, s in model.successors(state) if holds(s) != wanted]
            if not options:
                break
            a, state = rng.choice(options)
            states.append(state)
            actions.append(a)
        if len(actions) == steps:
            return trace_from_path(model, states, actions, prop, "always", BY_NAME[prop].doc)
    raise AssertionError("no random walk found")
