"""Hypothesis strategies for type-correct states: every field within its bounds,
reachable or not, so that predicates and encodings are tested beyond what the
search happens to reach.

Two structural facts of every reachable state are kept, because the actions are
only defined where they hold (the specification's records need an epoch): a
replica that names a leader has a leader epoch, and a crashed broker holds no
partition state in memory."""

from __future__ import annotations

from hypothesis import strategies as st

from isrcheck.model import ModelConfig, PartitionState, QuorumState, Record, ReplicaState, Request


def replica_sets(rf: int):
    return st.frozensets(st.integers(0, rf - 1), max_size=rf)


def partition_states(config: ModelConfig):
    rf, mr, ls, me = config.rf, config.max_records, config.logsize, config.max_leader_epoch
    kafka = not config.core
    records = st.builds(Record, st.integers(0, mr - 1), st.integers(0, me))
    opt_epoch = st.one_of(st.none(), st.integers(0, me))
    opt_replica = st.one_of(st.none(), st.integers(0, rf - 1))

    @st.composite
    def replica(draw):
        alive = draw(st.booleans()) if kafka and config.crashes else True
        leader = draw(opt_replica) if alive else None
        epoch = draw(st.integers(0, me) if leader is not None else opt_epoch) if alive else None
        return ReplicaState(
            log=tuple(draw(st.lists(records, max_size=ls))),
            hw=draw(st.integers(0, ls)),
            leader_epoch=epoch,
            leader=leader,
            isr=draw(replica_sets(rf)) if alive else frozenset(),
            alive=alive,
            crash_mark=None if alive else draw(st.integers(0, mr)),
            leader_since=draw(opt_epoch) if alive and kafka and config.acks == "all" else None,
        )

    @st.composite
    def state(draw):
        n_req = draw(st.integers(0, me + 1))
        requests = tuple(Request(e, draw(opt_replica), draw(replica_sets(rf))) for e in range(n_req))
        last = requests[-1] if requests else None
        quorum = QuorumState(
            last.leader_epoch if last else None,
            last.leader if last else None,
            draw(replica_sets(rf)),
        )
        ids = st.frozensets(st.integers(0, mr - 1)) if kafka else st.just(frozenset())
        return PartitionState(
            replicas=tuple(draw(replica()) for _ in range(rf)),
            quorum=quorum,
            requests=requests,
            next_record_id=draw(st.integers(0, mr)),
            next_leader_epoch=n_req,
            crashes=draw(st.integers(0, config.crashes)) if kafka else 0,
            disk_losses=draw(st.integers(0, config.disk_loss)) if kafka else 0,
            acked=draw(ids),
            committed=draw(ids),
            readable=draw(ids) if kafka and config.consumer else frozenset(),
        )

    return state()
