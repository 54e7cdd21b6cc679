"""The vector kernel: successors of a whole array of states at once, with NumPy.

A batch of states is an array of keys (``kernel_tables.py``: one uint64 word per
state, or two for larger bounds), shape ``(words, n)``. ``expand(keys)``
(``kernel_batch.py``) returns every successor with its parent's row and its action
index (the scalar catalogue's), duplicates included, so an engine counts generated
states as the scalar engine does. Keys convert exactly to and from the scalar
packed ints, one by one or a batch at a time.

The scalar model (``successors.py``) is the reference: the tests compare the two
on whole state spaces. The core machine and the Kafka model are both covered
(``kernel_kafka.py`` adds the Kafka features); ``CoreTables`` raises
``KernelUnsupported`` where the tables or the key would be too big. Properties have
batch predicates built from the same tables (``kernel_predicates.py``), and ``canonical`` is the exact symmetry reduction: the smallest key
among all relabellings of the brokers.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from .kernel_batch import Components, Expander
from .kernel_convert import ScalarBridge
from .kernel_predicates import BatchPredicate, batch_predicate
from .kernel_keys import KernelDomainError, KernelUnsupported
from .kernel_tables import CoreTables
from .replication import ReplicationModel

__all__ = ["Components", "VectorKernel", "KernelUnsupported", "KernelDomainError", "kernel_for"]

U64 = np.uint64
_M64 = (1 << 64) - 1


def keys_of_ints(ints, words: int) -> np.ndarray:
    """Keys (words, n) of key integers (words low first)."""
    ints = list(ints)
    if words == 1:
        return np.array(ints, dtype=U64).reshape(1, len(ints))
    return np.array([[(k >> (64 * w)) & _M64 for k in ints] for w in range(words)], dtype=U64).reshape(words, len(ints))


def ints_of_keys(keys: np.ndarray) -> list[int]:
    """The key integers of keys (words, n): the inverse of ``keys_of_ints``."""
    out = keys[0].tolist()
    for w in range(1, keys.shape[0]):
        out = [k | (h << (64 * w)) for k, h in zip(out, keys[w].tolist())]
    return out


class VectorKernel:
    """Batch successors, predicates and canonical forms for one core configuration."""

    def __init__(self, model: ReplicationModel) -> None:
        self.model = model
        self.T = T = CoreTables(model.layout)
        self.words = T.words
        self.exact = T.words == 1  # one word: the key is the state; two: engines use fingerprints
        cat = model.catalogue
        self.n_actions = len(cat)
        self.action_dtype = np.uint8 if len(cat) < 256 else np.uint16
        self.base = cat.base
        self._expander = Expander(T, cat.base, self.action_dtype)
        self._bridge = ScalarBridge(T)
        self._perm = None

    def emission_rank(self) -> np.ndarray:
        """``rank[action]``: where the scalar successor function lists that action among a
        state's successors. That is catalogue order, except that a state's requests are
        applied newest first: BecomeLeader by descending epoch, BecomeFollower by descending
        epoch and then replica. With it the vector BFS keeps the scalar BFS's discovery order
        and finds the very same traces on the core machine (a test holds this to
        ``successors.py``). The Kafka model lists its controller's moves first (failover and
        unclean election right after the shrinks) and a crash beside its disk-loss twin;
        there the order is the scalar one but for a leaderless shrink, which the scalar
        function lists after the other shrinks, so traces have the same lengths, and
        without symmetry the same states, but may be other paths."""
        cat = self.model.catalogue
        families = [f for f in ("ControllerElectLeader", "ControllerShrinkIsr", "ControllerFailover",
                                "ControllerUncleanElect") if f in cat.base]
        families += [f for f in cat.base if f not in families and f != "BrokerCrashDiskLoss"]

        def order(a: int) -> tuple:
            action = cat[a]
            args = action.args
            if action.name == "BecomeLeader":
                within: tuple = (-args["epoch"], args["replica"])
            elif action.name == "BecomeFollower":
                within = (-args["epoch"], args["replica"], args["leader"])
            elif action.name in ("BrokerCrash", "BrokerCrashDiskLoss"):
                return (families.index("BrokerCrash"), (args["replica"], action.name != "BrokerCrash"))
            else:
                within = (a,)
            return (families.index(action.name), within)

        listed = sorted(range(len(cat)), key=order)
        rank = np.empty(len(cat), dtype=np.int64)
        rank[listed] = np.arange(len(cat))
        return rank

    # ---- keys ---------------------------------------------------------------------------
    def encode(self, values: dict) -> np.ndarray:
        """Keys (words, n) from an array (or list) of values per key field."""
        return self.T.codec.encode(values, len(values["nid"]))

    def initial_keys(self) -> np.ndarray:
        return self.keys_of_scalars(self.model.init_states())

    def key_of_scalar(self, state: int) -> int:
        """The kernel key (words joined low word first) of a scalar packed state."""
        return self.int_of_key(self.keys_of_scalars([state])[:, 0])

    def scalar_of_key(self, key: int) -> int:
        """The scalar packed state of a kernel key (exact inverse of key_of_scalar)."""
        return self.scalars_of_keys(self.keys_of_ints([key]))[0]

    def keys_of_scalars(self, states) -> np.ndarray:
        """Keys (words, n) of scalar packed states."""
        comps = [self._bridge.components(s) for s in states]
        return self.encode({name: np.array([c[name] for c in comps], dtype=np.int64) for name in self.T.names})

    def scalars_of_keys(self, keys: np.ndarray) -> list[int]:
        """The scalar packed states of keys (words, n)."""
        c = Components(self.T, keys)
        names = self.T.names
        columns = [c._get(name).tolist() for name in names]
        to_scalar = self._bridge.scalar
        return [to_scalar(dict(zip(names, row))) for row in zip(*columns)]

    def keys_of_ints(self, ints: list[int]) -> np.ndarray:
        return keys_of_ints(ints, self.words)

    @staticmethod
    def int_of_key(column: np.ndarray) -> int:
        return sum(int(w) << (64 * i) for i, w in enumerate(column))

    def fingerprints(self, keys: np.ndarray) -> np.ndarray:
        """One uint64 per state: the key itself when it is one word, else a splitmix64 fold."""
        if self.words == 1:
            return keys[0]
        h = keys[0] * U64(0x9E3779B97F4A7C15)
        for w in range(1, self.words):
            h ^= keys[w]
            h ^= h >> U64(31)
            h *= U64(0xBF58476D1CE4E5B9)
        h ^= h >> U64(29)
        h *= U64(0x94D049BB133111EB)
        h ^= h >> U64(32)
        return h

    # ---- successors -------------------------------------------------------------------------
    def expand(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every successor of every state: (keys (words, m), parent row (int64), action index),
        duplicates included, in families' order (``kernel_batch.py``)."""
        return self._expander.expand(keys)

    # ---- properties ---------------------------------------------------------------------------
    def components(self, keys: np.ndarray) -> Components:
        """The decoded batch that predicates read (decode once, evaluate every property)."""
        return Components(self.T, keys)

    def predicate(self, name: str) -> BatchPredicate | None:
        """A batch form of a property's predicate over ``components(keys)`` (True where it
        holds), or None when the kernel has none for that property."""
        return batch_predicate(self.T, name)

    # ---- symmetry -------------------------------------------------------------------------------
    def _perms(self):
        if self._perm is None:
            self._perm = self.T.permutation_tables()
        return self._perm

    def supports_symmetry(self) -> str:
        """'' when ``canonical`` can run here, else why not (its tables would be too big)."""
        try:
            self._perms()
        except KernelUnsupported as e:
            return str(e)
        return ""

    def __reduce__(self):
        # Ship the model (it pickles by configuration) and rebuild the tables where unpickled:
        # a Spark executor builds them once per process.
        return (kernel_for, (self.model,))

    def images(self, keys: np.ndarray) -> Iterator[np.ndarray]:
        """The keys relabelled by every permutation of the brokers (the identity first), one
        at a time. Only the components that name brokers change (``kernel_keys.py``)."""
        T = self.T
        yield keys
        yield from T.codec.images(keys, self._perms(), T.rf, T.replica_fields)

    def canonical(self, keys: np.ndarray) -> np.ndarray:
        """The smallest relabelling of each key: one representative per orbit (exact reduction).
        Each relabelling is folded in as soon as it is made, so one is in memory at a time."""
        best = None
        for img in self.images(keys):
            if best is None:
                best = img.copy()
            elif self.words == 1:
                np.minimum(best[0], img[0], out=best[0])
            else:
                hi = self.words - 1
                smaller = img[hi] < best[hi]
                tie = img[hi] == best[hi]
                for w in range(hi - 1, -1, -1):
                    smaller |= tie & (img[w] < best[w])
                    tie &= img[w] == best[w]
                best[:, smaller] = img[:, smaller]
        return best

    def orbit_sizes(self, keys: np.ndarray) -> np.ndarray:
        """How many distinct states each key's orbit holds (for the count before reduction)."""
        fps = np.stack([self.fingerprints(img) for img in self.images(keys)], axis=1)
        fps.sort(axis=1)
        return 1 + np.count_nonzero(fps[:, 1:] != fps[:, :-1], axis=1)

    def canonical_of_scalar(self, state: int) -> int:
        """The kernel's canonical key of a scalar state (trace replay under symmetry)."""
        k = self.keys_of_ints([self.key_of_scalar(state)])
        return self.int_of_key(self.canonical(k)[:, 0])


_RECENT: dict = {}  # config -> kernel of the last few configurations (tables are built once per process)
_RECENT_SIZE = 2


def kernel_for(model: ReplicationModel) -> VectorKernel:
    """The vector kernel of the model's configuration, built once per process and kept for the
    last few configurations: KernelUnsupported if there is none."""
    kernel = _RECENT.get(model.config)
    if kernel is None:
        kernel = VectorKernel(model)
        while len(_RECENT) >= _RECENT_SIZE:
            del _RECENT[next(iter(_RECENT))]
        _RECENT[model.config] = kernel
    return kernel
