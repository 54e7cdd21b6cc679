"""Helpers shared by the Z3 tests: build and run the symbolic engine, pin concrete states."""

from __future__ import annotations

import z3

from isrcheck.checker import CheckOptions
from isrcheck.checker.z3_engine import Z3Engine
from isrcheck.model import ModelConfig, PartitionState, ReplicationModel
from isrcheck.model.symbolic_space import Space, SymState
from isrcheck.properties import select


def run_z3(config: ModelConfig, properties=None, prove="none", prove_timeout=30.0, **options):
    model = config if config.unbounded else ReplicationModel(config)
    props = select(config, properties)
    return Z3Engine(prove=prove, prove_timeout=prove_timeout).check(model, props, CheckOptions(**options))


def concrete(space: Space, s: SymState, ps: PartitionState) -> z3.ModelRef:
    """A Z3 model that gives ``s`` the values of ``ps`` (bounded spaces), for fast evaluation."""
    m = z3.Model()
    for name, value in space.values(ps).items():
        m.update_value(s.v[name], z3.BoolVal(value) if isinstance(value, bool) else space.c(value))
    return m


def well_formed(ps: PartitionState) -> bool:
    """Arbitrary states, except two shapes that no reachable state has and on which the
    explicit model's arithmetic is undefined: a believed leader without an epoch
    (LeaderWrite reads the epoch as a table index) and a record acknowledged before
    the step that acknowledges it (the acked mask is updated by adding the id's bit,
    which carries into the next id when the bit is already set)."""
    for r, rs in enumerate(ps.replicas):
        if rs.leader == r and rs.leader_epoch is None:
            return False
        if rs.leader == r and rs.hw < len(rs.log) and rs.log[rs.hw].id in ps.acked:
            return False
    return ps.next_record_id not in ps.acked


def reachable(model: ReplicationModel, limit: int = 200_000) -> list[int]:
    """Reachable states in BFS order (the first ``limit``)."""
    seen = set(model.init_states())
    order = list(seen)
    i = 0
    while i < len(order) and len(order) < limit:
        for _, t in model.successors(order[i]):
            if t not in seen:
                seen.add(t)
                order.append(t)
        i += 1
    return order


def spread(states: list[int], n: int) -> list[int]:
    """``n`` states evenly spread over a list (early and late BFS levels alike)."""
    if len(states) <= n:
        return list(states)
    step = len(states) / n
    return [states[int(i * step)] for i in range(n)]
