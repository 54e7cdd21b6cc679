"""Readable states: what traces, views, tests and the Z3 decoder use.

The classes are made from the state schema (``state_classes``): a per-replica record
with one attribute per replica field and a state with ``replicas`` and one attribute
per shared field, frozen dataclasses both, so that a field added to the schema appears
here by itself. A protocol may give them base classes for what is derived rather than
stored (Kafka's: whether a broker is alive, the quorum's leader and epoch).
``None`` stands where the specification writes None and Nil.

``encode`` and ``decode`` convert to and from the packed int of ``layout.py``; they
are exact inverses on every state the configuration can represent.
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from typing import Any

from .layout import Layout
from .schema import NO_DEFAULT, Field, LogKind, RequestsKind, mask_of, members


@dataclass(frozen=True, slots=True)
class Record:
    id: int
    epoch: int

    def __str__(self) -> str:
        return f"m{self.id}@e{self.epoch}"


@dataclass(frozen=True, slots=True)
class Request:
    """A LeaderAndIsr request; every request carries a fresh leader epoch."""

    leader_epoch: int
    leader: int | None
    isr: frozenset[int]


@dataclass(frozen=True, slots=True)
class QuorumState:
    """The controller's truth (ZooKeeper or KRaft)."""

    leader_epoch: int | None
    leader: int | None
    isr: frozenset[int]


def state_classes(fields: tuple[Field, ...], replica_base: type = object, state_base: type = object) -> tuple[type, type]:
    """(replica class, state class): one attribute per field in declaration order, those
    with a default after those without (as dataclasses require)."""

    def specs(chosen: list[Field]) -> list[tuple]:
        plain = [(f.name, Any) for f in chosen if f.default is NO_DEFAULT]
        return plain + [(f.name, Any, field(default=f.default)) for f in chosen if f.default is not NO_DEFAULT]

    replica = make_dataclass(
        "ReplicaState", specs([f for f in fields if f.replica]), bases=(replica_base,), frozen=True, slots=True
    )
    state = make_dataclass(
        "PartitionState",
        [("replicas", tuple), *specs([f for f in fields if not f.replica])],
        bases=(state_base,),
        frozen=True,
        slots=True,
    )
    return replica, state


class EncodeError(ValueError):
    """A readable state that this configuration cannot represent."""


def readable_value(f: Field, view: Any, layout: Layout) -> Any:
    """A field's readable value from what ``Layout.unpack`` gives."""
    if isinstance(f.kind, LogKind):
        return tuple(Record(c // layout.n_epochs, c % layout.n_epochs) for c in view)
    if isinstance(f.kind, RequestsKind):
        return tuple(Request(e, None if ld < 0 else ld, members(isr)) for e, (ld, isr) in enumerate(view))
    return f.kind.readable(view)


def view_value(f: Field, value: Any, layout: Layout) -> Any:
    """``readable_value``'s inverse; EncodeError for what the configuration's bounds exclude."""
    cfg = layout.config
    if isinstance(f.kind, LogKind):
        if len(value) > layout.log_size:
            raise EncodeError(f"a log is longer than the log size {layout.log_size}")
        for rec in value:
            if not (0 <= rec.id < layout.max_records and 0 <= rec.epoch <= layout.max_epoch):
                raise EncodeError(f"record {rec} is outside the bounds")
        return tuple(layout.record(rec.id, rec.epoch) for rec in value)
    if isinstance(f.kind, RequestsKind):
        if len(value) > layout.max_epoch + 1:
            raise EncodeError("more requests than leader epochs")
        out = []
        for e, req in enumerate(value):
            _check(req.leader_epoch == e, "requests ordered by epoch, one per epoch")
            _check(req.leader is None or 0 <= req.leader < layout.rf, "a request's leader")
            _check(all(0 <= m < layout.rf for m in req.isr), "a request's ISR")
            out.append((-1 if req.leader is None else req.leader, mask_of(req.isr)))
        return tuple(out)
    if not f.kept(cfg):
        _check(value == f.default, f"{f.name} (this configuration does not keep it)")
        return f.kind.view(value)
    try:
        code = f.kind.code(value, cfg)
    except (TypeError, ValueError):
        raise EncodeError(f"{f.name} {value!r} is not a value of its kind") from None
    _check(isinstance(code, int) and 0 <= code < f.kind.size(cfg), f"{f.name} {value!r}")
    return f.kind.view(value)


def decode(layout: Layout, classes: tuple[type, type], state: int) -> Any:
    """The readable state of a packed int."""
    replica_cls, state_cls = classes
    views = layout.unpack(state)
    schema = layout.schema
    replicas = tuple(
        replica_cls(**{f.name: readable_value(f, views[f.name][r], layout) for f in schema.replica_fields})
        for r in range(layout.rf)
    )
    shared = {f.name: readable_value(f, views[f.name], layout) for f in schema.shared_fields}
    return state_cls(replicas=replicas, **shared)


def encode(layout: Layout, state: Any) -> int:
    """The packed int of a readable state; EncodeError if a value is out of bounds."""
    schema = layout.schema
    if len(state.replicas) != layout.rf:
        raise EncodeError(f"expected {layout.rf} replicas, found {len(state.replicas)}")
    views: dict[str, Any] = {}
    for f in schema.replica_fields:
        values = []
        for r, rs in enumerate(state.replicas):
            try:
                values.append(view_value(f, getattr(rs, f.name), layout))
            except EncodeError as e:
                raise EncodeError(f"replica {r}: {e}") from None
        views[f.name] = values
    for f in schema.shared_fields:
        views[f.name] = view_value(f, getattr(state, f.name), layout)
    try:
        return layout.pack(views)
    except KeyError:
        raise EncodeError("a log outside the table of logs") from None


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise EncodeError(f"{what} is out of range for this configuration")
