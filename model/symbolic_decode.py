"""Readable states from Z3 models: what a symbolic counterexample becomes before it is replayed.

Each field the space keeps is read back by its kind (``symbolic_space.py``); the others
take their constant. Induction states of the unbounded mode may count millions of epochs
or record ids: past ``SPARSE`` of them only the requests and ids the state refers to are
kept (a state for reading, never for encoding).
"""

from __future__ import annotations

from typing import Any, Iterable

import z3

from .ops import NONE
from .schema import Brokers, Ids, LogKind, RequestsKind
from .state import Record, Request

SPARSE = 32


def decode(space: Any, model: z3.ModelRef, s: Any) -> Any:
    cls_replica, cls_state = space.protocol.classes
    schema, v = space.schema, s.v

    def num(term: z3.ExprRef) -> int:
        return space.num(model, term)

    def flag(term: z3.ExprRef) -> bool:
        return z3.is_true(model.eval(term, model_completion=True))

    def read(f: Any, r: int) -> Any:
        if not f.kept(space.cfg):
            return schema.init_value(f)
        name, k = space._prefix(f, r), f.kind
        if isinstance(k, LogKind):
            return tuple(Record(num(v[f"{name}.id{o}"]), num(v[f"{name}.ep{o}"])) for o in range(num(v[f"{name}.len"])))
        if isinstance(k, RequestsKind):
            return _requests(space, model, v, name, num, flag, replicas)
        if isinstance(k, Brokers):
            return frozenset(m for m in range(space.rf) if flag(v[f"{name}.{m}"]))
        if isinstance(k, Ids):
            return frozenset(i for i in _ids(space, v, num, replicas) if flag(_holds(space, v, name, i)))
        return k.readable(num(v[name]))

    replicas: list[Any] = []
    for r in range(space.rf):
        replicas.append(cls_replica(**{f.name: read(f, r) for f in schema.replica_fields}))
    shared = {f.name: read(f, -1) for f in schema.shared_fields if not isinstance(f.kind, Ids)}
    shared.update({f.name: read(f, -1) for f in schema.shared_fields if isinstance(f.kind, Ids)})
    return cls_state(replicas=tuple(replicas), **shared)


def _holds(space: Any, v: dict, name: str, i: int) -> Any:
    return z3.Select(v[name], i) if space.mr is None else v[f"{name}.{i}"]


def _ids(space: Any, v: dict, num: Any, replicas: list) -> Iterable[int]:
    if space.mr is not None:
        return range(space.mr)
    nid = num(v["next_record_id"]) if "next_record_id" in v else SPARSE
    if nid <= SPARSE:
        return range(nid)
    return sorted({x.id for rs in replicas for x in rs.log} | set(range(SPARSE)))


def _requests(space: Any, model: Any, v: dict, name: str, num: Any, flag: Any, replicas: list) -> tuple:
    n = num(v[f"{name}.n"])
    epochs: Iterable[int] = range(n)
    if n > SPARSE:  # an induction state of the unbounded mode: the epochs anything refers to
        named = {n - 1} | {rs.leader_epoch or 0 for rs in replicas} | {x.epoch for rs in replicas for x in rs.log}
        epochs = sorted(e for e in named if 0 <= e < n)
    out = []
    for e in epochs:
        if space.me is None:
            leader = num(z3.Select(v[f"{name}.leader"], e))
            isr = frozenset(m for m in range(space.rf) if flag(z3.Select(v[f"{name}.isr{m}"], e)))
        else:
            leader = num(v[f"{name}.e{e}.leader"])
            isr = frozenset(m for m in range(space.rf) if flag(v[f"{name}.e{e}.isr{m}"]))
        out.append(Request(e, None if leader == NONE else leader, isr))
    return tuple(out)
