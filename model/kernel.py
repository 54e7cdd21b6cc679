"""The vector kernel: successors of a whole array of states at once, run from the definitions.

A batch of states is an array of keys (``kernel_tables.py``, ``kernel_keys.py``),
shape ``(words, n)``. ``expand(keys)`` runs every action of the protocol on the batch
with NumPy, from the definitions traced once into expression graphs (``trace.py``,
``plan.py``): for each action, the guard's conjuncts narrow the rows one after the
other, and the rows left take the action's updates, which become new keys by changing
only the components they touch. It returns every successor with
its parent's row and its action index (duplicates included, so an engine counts
generated states as the scalar engine does). Properties' batch forms run the same way
(``predicate``); ``canonical`` is the exact symmetry reduction (``kernel_symmetry.py``). Keys convert exactly to and from the scalar packed
ints (``kernel_convert.py``). ``KernelUnsupported`` says where the tables or the key
would be too big.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .kernel_convert import ScalarBridge
from .kernel_keys import KernelDomainError, KernelUnsupported
from .kernel_symmetry import KernelSymmetry
from .kernel_tables import KernelTables
from .plan import Batch, Plan

__all__ = ["Batch", "VectorKernel", "KernelUnsupported", "KernelDomainError", "kernel_for"]

U64 = np.uint64
_M64 = (1 << 64) - 1
BatchPredicate = Callable[[Batch], np.ndarray]
# rows a batch of properties decodes and evaluates at once: its values cost some 300 to 500 bytes a
# row (every node of every property, kept for the next property), 170 MiB and 124 ms for a chunk's
# 355,000 new states of the three-record main job at once; 35 MiB and 72 ms by blocks of 65,536, 19
# MiB and 83 ms by blocks of 32,768 (the blocks' arrays stay in the caches), measured; in whole
# searches 32,768 was as fast as 65,536 or faster, and 10 MiB lower at kip320-rf3-e3's peak
PROPERTY_BLOCK = 1 << 15


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
    """Batch successors, predicates and canonical forms for one model."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.T = T = KernelTables(model)
        self.words = T.words
        self.exact = T.words == 1  # one word: the key is the state; more: engines use fingerprints
        cat = model.catalogue
        self.n_actions = len(cat)
        self.action_dtype = np.uint8 if len(cat) < 256 else np.uint16
        self.plan = Plan(T, cat)
        self._bridge = ScalarBridge(T, model.layout)
        self._symmetry: KernelSymmetry | None = None

    def emission_rank(self) -> np.ndarray:
        """``rank[action]``: where the successor function lists that action among a state's
        successors (registry order, ``Catalogue.emission_order``). With it the vector BFS
        keeps the scalar BFS's discovery order and finds the very same traces."""
        return np.asarray(self.model.catalogue.emission_rank(), dtype=np.int64)

    # ---- keys -----------------------------------------------------------------------------------
    def encode(self, values: dict) -> np.ndarray:
        """Keys (words, n) from an array (or list) of values per component."""
        n = len(next(iter(values.values())))
        return self.T.codec.encode(values, n)

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
        b = Batch(self.T, keys)
        names = self.T.names
        columns = [b.component(name).tolist() for name in names]
        to_scalar = self._bridge.scalar
        return [to_scalar(dict(zip(names, row))) for row in zip(*columns)]

    def keys_of_ints(self, ints: list[int]) -> np.ndarray:
        return keys_of_ints(ints, self.words)

    @staticmethod
    def int_of_key(column: np.ndarray) -> int:
        return sum(int(w) << (64 * i) for i, w in enumerate(column))

    @staticmethod
    def fingerprints(keys: np.ndarray) -> np.ndarray:
        """One uint64 per state: the key itself when it is one word, else its words folded,
        each step through splitmix64's finalizer, ``h = mix(mix(k0) ^ k1) ...``. Every step
        must mix fully: keys are bit fields, and two states often differ in the same few
        high bits of two words. The fold this replaced multiplied the first word (which
        carries a difference only upwards) before xoring in the second, so such pairs
        collided with probability about 2^-15, not 2^-64: rf 6's space (14.5 M states) lost
        one state that way (tests/test_kernel.py)."""
        if keys.shape[0] == 1:
            return keys[0]
        h = _mixed(keys[0].copy())
        for w in range(1, keys.shape[0]):
            h ^= keys[w]
            _mixed(h)
        return h

    # ---- successors ----------------------------------------------------------------------------------
    def expand(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every successor of every state: (keys (words, m), parent row (int64), action index),
        duplicates included, action by action (``plan.py``)."""
        return self.plan.expand(keys, self.action_dtype)

    # ---- properties -------------------------------------------------------------------------------------
    def components(self, keys: np.ndarray) -> Batch:
        """The decoded batch that predicates read (decode once, evaluate every property)."""
        return Batch(self.T, keys)

    def evaluate(self, keys: np.ndarray, predicates: list[BatchPredicate]) -> list[np.ndarray]:
        """Each predicate's value (a bool array) on every key, a block of rows at a time."""
        n = keys.shape[1]
        out = [np.empty(n, dtype=bool) for _ in predicates]
        for lo in range(0, n, PROPERTY_BLOCK):
            batch = Batch(self.T, keys[:, lo : lo + PROPERTY_BLOCK])
            for values, pred in zip(out, predicates):
                values[lo : lo + PROPERTY_BLOCK] = pred(batch)
            batch.release()
        return out

    def predicate(self, prop: Any) -> BatchPredicate:
        """The batch form of a property's definition (``prop.holds``) over ``components(keys)``:
        True where it holds."""
        node = self.plan.trace_property(prop.holds)
        return lambda b: b.evaluate(node)

    # ---- symmetry -----------------------------------------------------------------------------------------
    def symmetry(self) -> KernelSymmetry:
        """The batch canonical forms (``kernel_symmetry.py``), built on first use."""
        if self._symmetry is None:
            self._symmetry = KernelSymmetry(self.T)
        return self._symmetry

    def compiles_canonical(self, symmetry: bool) -> bool:
        """Whether a search's canonical forms are worth the compiled loop
        (``kernel_symmetry_loops.py``): from rf 4, where most successors tie. NumPy's cost 84
        (rf 4) to 156 ns (rf 5) a successor, the loop's 77 to 122, measured. At rf 3 the loop
        gained nothing measurable (main-job-4.1, main-job-r3), and a first run of the main job
        on a machine took 7 s more, compiling it."""
        return symmetry and self.T.rf >= 4

    def supports_symmetry(self) -> str:
        """'' when ``canonical`` can run here, else why not (its tables would be too big)."""
        try:
            self.symmetry()
        except KernelUnsupported as e:
            return str(e)
        return ""

    def __reduce__(self):
        # Ship the model (it pickles by configuration) and rebuild the tables where unpickled:
        # a Spark executor builds them once per process.
        return (kernel_for, (self.model,))

    def canonical(self, keys: np.ndarray) -> np.ndarray:
        """One representative per orbit under broker relabelling (exact reduction)."""
        return self.symmetry().canonical(keys)

    def canonical_and_orbits(self, keys: np.ndarray, compiled: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``canonical`` and ``orbit_sizes`` in one pass; ``compiled``: by the compiled loop where
        it applies (``KernelSymmetry.canonical_and_orbits``), the same keys and sizes."""
        return self.symmetry().canonical_and_orbits(keys, compiled)

    def orbit_sizes(self, keys: np.ndarray) -> np.ndarray:
        """How many distinct states each key's orbit holds (for the count before reduction)."""
        return self.symmetry().orbit_sizes(keys)

    def canonical_of_scalar(self, state: int) -> int:
        """The kernel's canonical key of a scalar state (trace replay under symmetry)."""
        k = self.keys_of_ints([self.key_of_scalar(state)])
        return self.int_of_key(self.canonical(k)[:, 0])


_RECENT: dict = {}  # (protocol, config) -> kernel of the last few configurations (tables built once per process)
_RECENT_SIZE = 2


def kernel_for(model: Any) -> VectorKernel:
    """The vector kernel of the model's configuration, built once per process and kept for the
    last few configurations: KernelUnsupported if there is none."""
    key = (model.protocol.name, model.config)
    kernel = _RECENT.get(key)
    if kernel is None:
        kernel = VectorKernel(model)
        while len(_RECENT) >= _RECENT_SIZE:
            del _RECENT[next(iter(_RECENT))]
        _RECENT[key] = kernel
    return kernel


def forget_kernels() -> None:
    """Drop the kernels ``kernel_for`` keeps: a long-lived process that has checked big
    configurations (a test process: 961 MiB resident after test_kernel_kafka, 126 without
    its two kernels) then holds only what it still uses."""
    _RECENT.clear()


def _mixed(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, in place: a bijection of uint64 in which each input bit flips
    each output bit with probability about one half."""
    x ^= x >> U64(30)
    x *= U64(0xBF58476D1CE4E5B9)
    x ^= x >> U64(27)
    x *= U64(0x94D049BB133111EB)
    x ^= x >> U64(31)
    return x
