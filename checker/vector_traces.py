"""Traces of the vector search: a stored state's path, rebuilt from its level's parents and
actions and replayed on the scalar model (which checks the kernel at every step)."""

from __future__ import annotations

from typing import Any

from isrcheck.model.kernel import VectorKernel

from .result import Path


def path_to(search: Any, depth: int, row: int) -> Path:
    """Walk parents back to the initial state, then replay the path on the scalar model:
    from the kept levels' keys, or, where only the initial level is kept, by replaying the
    actions from its key."""
    rows, actions = [], []
    while depth >= 0:
        rows.append(row)
        actions.append(int(search.actions[depth][row]))
        row = int(search.parents[depth][row])
        depth -= 1
    rows.reverse()
    actions.reverse()
    kernel, model = search.kernel, search.model
    if search.keep_levels:
        # a column range: a level may be a file of the search out of core (not yet saved)
        chain = [VectorKernel.int_of_key(search.keys[d][:, r : r + 1][:, 0]) for d, r in enumerate(rows)]
    else:
        chain = _replayed_keys(search, VectorKernel.int_of_key(search.keys[0][:, rows[0]]), actions[1:])
    if search.symmetry:
        return Path.replay(model, chain, kernel.canonical_of_scalar)
    states = [kernel.scalar_of_key(k) for k in chain]
    for i, a in enumerate(actions[1:], start=1):
        if model.step(states[i - 1], a) != states[i]:  # pragma: no cover - a kernel bug
            raise AssertionError(f"the vector kernel's step {i} ({model.describe(a)}) disagrees with the model")
    return Path(tuple(states), tuple(actions[1:]))


def _replayed_keys(search: Any, root: int, actions: list[int]) -> list[int]:
    """The stored keys along a path, from its initial key and actions: each action taken
    from the stored (canonical) state, as the search took it."""
    kernel, model = search.kernel, search.model
    norm = kernel.canonical_of_scalar if search.symmetry else kernel.key_of_scalar
    chain, state = [root], kernel.scalar_of_key(root)
    for a in actions:
        chain.append(norm(model.step(state, a)))
        state = kernel.scalar_of_key(chain[-1])
    return chain
