"""The replication model behind one interface: what every engine and tool calls.

Stateright's split: a model is its initial states, a successor function and a
deterministic step; engines know nothing else about Kafka. States are packed ints
(``layout.py``); ``decode`` gives the readable ``PartitionState``.
"""

from __future__ import annotations

from functools import cached_property

from .actions import Action, Catalogue
from .config import ModelConfig
from .layout import Layout
from .state import PartitionState, decode, encode
from .successors import make_successors
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


class ReplicationModel:
    """One partition's replication protocol for one configuration."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config.validate().require_bounded()
        self.layout = Layout(config)
        self.catalogue = Catalogue(config)
        self.successors = make_successors(self.layout, self.catalogue)

    # -- the engine interface ---------------------------------------------------
    def init_states(self) -> list[int]:
        return [self.layout.initial_state()]

    def step(self, state: int, action: int) -> int | None:
        """The state after ``action``, or None when it is not enabled (off the hot path)."""
        for a, nxt in self.successors(state):
            if a == action:
                return nxt
        return None

    def describe(self, action: int) -> Action:
        return self.catalogue[action]

    @cached_property
    def symmetry(self) -> Symmetry:
        return Symmetry(self.layout)

    # -- readable states --------------------------------------------------------
    def decode(self, state: int) -> PartitionState:
        return decode(self.layout, state)

    def encode(self, ps: PartitionState) -> int:
        return encode(self.layout, ps)

    def __reduce__(self):
        # Pickle by configuration (tables and closures are rebuilt): Spark executors.
        return (ReplicationModel, (self.config,))
