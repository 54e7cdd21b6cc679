"""A model: one protocol at one configuration, behind the interface every engine calls.

Stateright's split: a model is its initial states, a successor function and a
deterministic step; engines know nothing else about the protocol. States are packed
ints (``layout.py``); ``decode`` gives the readable state. The step replays an action
from the definitions (``ops_int.py``), the reference that every trace is checked
against; the successor function is the definitions' too, unless the protocol has a
hand-fused one (the Kafka model's ``fused.py``, held to the definitions by test).
"""

from __future__ import annotations

import importlib
from functools import cached_property
from typing import Any, Callable

from .actions import Action, Catalogue
from .layout import Layout
from .ops_int import DerivedSuccessors
from .protocol import Protocol
from .schema import Schema
from .state import decode, encode
from .symmetry import Symmetry

_M64 = (1 << 64) - 1


def fingerprint(state: int) -> int:
    """A 64-bit value that is the same in every process: the state itself when it fits,
    else a splitmix64-style fold of its 64-bit words (never ``hash()``, which is salted)."""
    if state <= _M64:
        return state
    h = 0x9E3779B97F4A7C15
    while state:
        h ^= state & _M64
        h = (h * 0xBF58476D1CE4E5B9) & _M64
        h ^= h >> 31
        state >>= 64
    return h


# Every protocol's model and properties, by name: what a process that receives a model by
# name (a Spark executor) builds. "module:attribute" strings, imported on first use.
PROTOCOLS: dict[str, tuple[str, str]] = {
    "kafka": ("isrcheck.model.replication:ReplicationModel", "isrcheck.properties.catalog:BY_NAME"),
    "toy-counters": ("isrcheck.model.toy:counters_model", "isrcheck.model.toy:COUNTER_BY_NAME"),
    "toy-tokens": ("isrcheck.model.toy:tokens_model", "isrcheck.model.toy:TOKEN_BY_NAME"),
}


def _named(where: str) -> Any:
    module, _, attr = where.partition(":")
    return getattr(importlib.import_module(module), attr)


def model_for(protocol: str, config: Any) -> "Model":
    """The model of a protocol (by name) at a configuration."""
    return _named(PROTOCOLS[protocol][0])(config)


def properties_for(protocol: str) -> dict[str, Any]:
    """A protocol's properties by name."""
    return _named(PROTOCOLS[protocol][1])


class Model:
    """A protocol's state machine for one configuration."""

    def __init__(self, protocol: Protocol, config: Any, fused: Callable | None = None) -> None:
        self.protocol = protocol
        self.config = config
        self.schema = Schema(protocol.fields, config)
        self.layout = Layout(self.schema)
        self.catalogue = Catalogue(protocol, config)
        self.derived = DerivedSuccessors(self.layout, self.catalogue)
        self.successors = fused(self.layout, self.catalogue) if fused is not None else self.derived

    # -- the engine interface ---------------------------------------------------------------
    def init_states(self) -> list[int]:
        return [self.layout.initial_state()]

    def step(self, state: int, action: int) -> int | None:
        """The state after ``action``, or None when it is not enabled (the definitions' step)."""
        return self.derived.step(state, action)

    def describe(self, action: int) -> Action:
        return self.catalogue[action]

    @cached_property
    def symmetry(self) -> Symmetry:
        return Symmetry(self.layout)

    # -- readable states ---------------------------------------------------------------------
    def decode(self, state: int) -> Any:
        return decode(self.layout, self.protocol.classes, state)

    def encode(self, readable: Any) -> int:
        return encode(self.layout, readable)

    def __reduce__(self):
        # pickled by protocol name and configuration (tables and closures are rebuilt): Spark executors
        return (model_for, (self.protocol.name, self.config))
