"""A model: one protocol at one configuration, behind the interface every engine calls.

Stateright's split: a model is its initial states, a successor function and a
deterministic step; engines know nothing else about the protocol. States are packed
ints (``layout.py``); ``decode`` gives the readable state. The step replays an action
from the definitions (``ops_int.py``), the reference that every trace is checked
against; the successor function is the definitions' too, unless the protocol has a
hand-fused one (the Kafka model's ``fused.py``, held to the definitions by test).

A model built for a run gets the run's limits: its tables (the layout's on
construction, the symmetry's and the vector kernel's when an engine asks for them)
are sized before they are built, and refused when they cannot fit the memory limit
(``TablesTooLarge``, a configuration error); while they are built, the time and
memory limits and Ctrl-C stop the run (``TablesStopped``, an incomplete run).
"""

from __future__ import annotations

import importlib
from functools import cached_property
from typing import Any, Callable, Protocol as Interface

from .actions import Action, Catalogue
from .config import ConfigError
from .layout import Layout, layout_bytes
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


class TablesTooLarge(ConfigError):
    """A configuration whose tables alone would pass the memory limit: refused before any is built."""


class TablesStopped(Exception):
    """A limit (time, memory, an interrupt) reached while the model's tables were being built."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason} while building the model's tables")
        self.reason = reason


class BuildLimits(Interface):
    """What table building asks of a run's limits (``checker.engine.Limits`` is one)."""

    def exceeded(self) -> str:
        """The limit reached, or ''."""
        ...

    def memory_room(self) -> int | None:
        """Bytes left under the memory limit, or None without one."""
        ...


def gigabytes(n: float) -> str:
    """Bytes in words: 850 MB, 17.3 GB, 861,274 TB."""
    if n >= 1e12:
        return f"{n / 1e12:,.0f} TB"
    return f"{n / 1e9:,.1f} GB" if n >= 1e9 else f"{n / 1e6:,.0f} MB"


# the knobs that size each part of the tables (``layout_bytes``): what the refusal says to lower
LOWER = {
    "logs": "--max-records, --log-size or --max-leader-epoch",
    "replica fields": "--rf, --max-leader-epoch or --crashes",
}


class Model:
    """A protocol's state machine for one configuration; ``limits``: the run's (see the module docstring)."""

    def __init__(
        self, protocol: Protocol, config: Any, fused: Callable | None = None, limits: BuildLimits | None = None
    ) -> None:
        self.protocol = protocol
        self.config = config
        self.limits = limits
        self.schema = Schema(protocol.fields, config)
        parts = layout_bytes(self.schema)
        self.require_room(sum(parts.values()), "", LOWER[max(parts, key=parts.__getitem__)])
        self.layout = Layout(self.schema, self.tick)
        self.catalogue = Catalogue(protocol, config)
        self.derived = DerivedSuccessors(self.layout, self.catalogue)
        fast = fused(self.layout, self.catalogue) if fused is not None else None
        self.successors = fast if fast is not None else self.derived

    # -- the run's limits while tables are built ---------------------------------------------------
    def tick(self) -> None:
        """Raise TablesStopped once a limit is reached; table building calls it every few thousand entries."""
        reason = self.limits.exceeded() if self.limits is not None else ""
        if reason:
            raise TablesStopped(reason)

    def room(self) -> int | None:
        """Bytes that tables may still take, or None without a memory limit."""
        return self.limits.memory_room() if self.limits is not None else None

    def require_room(self, need: int, which: str, lower: str) -> None:
        """Refuse tables of ``need`` bytes that the memory limit cannot hold (TablesTooLarge)."""
        room = self.room()
        if room == 0:  # not a size to compare: "about 0 MB, more than it leaves (0 MB)" said nothing
            raise TablesTooLarge(
                f"the memory limit leaves no room for {which}tables: this process already holds all of it; "
                f"raise --max-memory or lower {lower}"
            )
        if room is not None and need > room:
            raise TablesTooLarge(
                f"this configuration needs about {gigabytes(need)} of {which}tables, more than the memory "
                f"limit leaves ({gigabytes(room)}); lower {lower}"
            )

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
        return Symmetry(self.layout)  # its tables fill on demand: nothing to check against the limits

    # -- readable states ---------------------------------------------------------------------
    def decode(self, state: int) -> Any:
        return decode(self.layout, self.protocol.classes, state)

    def encode(self, readable: Any) -> int:
        return encode(self.layout, readable)

    def __reduce__(self):
        # pickled by protocol name and configuration (tables and closures are rebuilt): Spark executors
        return (model_for, (self.protocol.name, self.config))
