"""Hypothesis strategies for type-correct states: every field within its bounds,
reachable or not, so that predicates and encodings are tested beyond what the
search happens to reach. And seeded random walks, for deep reachable states.

Two structural facts of every reachable state are kept, because the actions are
only defined where they hold (the specification's records need an epoch): a
replica that names a leader has a leader epoch, and a crashed broker holds no
partition state in memory."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from isrcheck.model import ModelConfig, PartitionState, Record, ReplicaState, Request
from isrcheck.model.fields import eligible_leaders, unflushed


def replica_sets(rf: int):
    return st.frozensets(st.integers(0, rf - 1), max_size=rf)


def partition_states(config: ModelConfig, distinct_ids: bool = False):
    """Readable states of a configuration; ``distinct_ids``: no record id twice in a log
    (the vector kernel's tables hold no other logs)."""
    rf, mr, ls, me = config.rf, config.max_records, config.logsize, config.max_leader_epoch
    kafka = not config.core
    records = st.builds(Record, st.integers(0, mr - 1), st.integers(0, me))
    opt_epoch = st.one_of(st.none(), st.integers(0, me))
    opt_replica = st.one_of(st.none(), st.integers(0, rf - 1))
    logs = st.lists(records, max_size=ls, unique_by=(lambda rec: rec.id) if distinct_ids else None)

    @st.composite
    def replica(draw):
        alive = draw(st.booleans()) if kafka and (config.crashes or config.power_loss) else True
        leader = draw(opt_replica) if alive else None
        epoch = draw(st.integers(0, me) if leader is not None else opt_epoch) if alive else None
        log = tuple(draw(logs))
        return ReplicaState(
            log=log,
            hw=draw(st.integers(0, ls)),
            flushed=draw(st.integers(0, len(log))) if unflushed(config) else None,  # on disk: a prefix
            leader_epoch=epoch,
            leader=leader,
            isr=draw(replica_sets(rf)) if alive else frozenset(),
            crash_mark=None if alive else draw(st.integers(0, mr)),
            leader_since=draw(opt_epoch) if alive and kafka and config.acks == "all" else None,
        )

    @st.composite
    def state(draw):
        n_req = draw(st.integers(0, me + 1))
        requests = tuple(Request(e, draw(opt_replica), draw(replica_sets(rf))) for e in range(n_req))
        ids = st.frozensets(st.integers(0, mr - 1))
        return PartitionState(
            replicas=tuple(draw(replica()) for _ in range(rf)),
            next_record_id=draw(st.integers(0, mr)),
            quorum_isr=draw(replica_sets(rf)),
            requests=requests,
            crashes=draw(st.integers(0, config.crashes)) if kafka and config.crashes else 0,
            disk_losses=draw(st.integers(0, config.disk_loss)) if kafka and config.disk_loss else 0,
            power_losses=draw(st.integers(0, config.power_loss)) if kafka and config.power_loss else 0,
            acked=draw(ids) if kafka and config.acks != "0" else frozenset(),
            committed=draw(ids) if kafka else frozenset(),
            readable=draw(ids) if kafka and config.consumer else frozenset(),
            elr=draw(replica_sets(rf)) if eligible_leaders(config) else frozenset(),
        )

    return state()


def walk_states(model, walks: int = 40, length: int = 40, seed: int = 7) -> list[int]:
    """The distinct states of seeded random walks from the initial state (deep reachable states)."""
    rng = random.Random(seed)
    seen: dict[int, None] = {}
    for _ in range(walks):
        s = model.init_states()[0]
        seen.setdefault(s)
        for _ in range(length):
            nexts = model.successors(s)
            if not nexts:
                break
            s = rng.choice(nexts)[1]
            seen.setdefault(s)
    return list(seen)


def paths_to_every_family(model, states: list[int], limit: int = 1_000_000) -> list[int]:
    """``states`` plus, for each family that none of them enables, the states of a
    breadth-first shortest path to one that does (rare steps that walks miss, such as
    KIP-966's election of the last known leader after two unclean restarts)."""
    name = [model.catalogue[a].name for a in range(len(model.catalogue))]
    missing = set(name) - {name[a] for s in states for a, _ in model.successors(s)}
    init = model.init_states()[0]
    parent: dict[int, int | None] = {init: None}
    frontier, found = [init], dict.fromkeys(states)
    while missing and frontier and len(parent) < limit:
        nxt = []
        for s in frontier:
            for a, t in model.successors(s):
                if name[a] in missing:
                    missing.discard(name[a])
                    u: int | None = s
                    while u is not None:
                        found.setdefault(u)
                        u = parent[u]
                if t not in parent:
                    parent[t] = s
                    nxt.append(t)
        frontier = nxt
    return list(found)

