"""What the vector search keeps per state, kept small: the visited set and the level log.

Bytes resident per distinct state is what bounds the spaces one machine can search.
Of what the search stores, only the visited set is read at every level; the parents
and actions are read only to rebuild a trace. So:

* ``VisitedSet``: the sorted fingerprints, 8 bytes a state, in one buffer with a little
  room to grow. A level is merged into it in place, from the back, a block at a time,
  instead of into a second copy (which doubled the set at every level's end). The
  buffer grows by ``ndarray.resize``: glibc serves big blocks with mmap and grows
  them with mremap, without a copy.
* ``LevelLog``: each level's parents and actions in a file of a temporary folder
  (written once, read back through a memory map to rebuild a trace), in a checkpoint's
  level file once saved there, or in memory where the state graph reads them as arrays.

Past the memory limit the visited set moves to disk (``spill``): ``vector_spill.py``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .vector_spill import DISK_BLOCK, DiskRun, smallest_gap

GROWTH = 1.125  # the visited buffer's room to grow: at most an eighth of it is unused
MERGE_BLOCK = 1 << 20  # old fingerprints moved per step of an in-place merge
SAMPLE_STRIDE = 32  # locate: every 32nd fingerprint kept as a sample (a thirty-second of the set) ...
SAMPLED_FROM = 1 << 21  # ... once the set passes 16 MB, where searchsorted's steps start missing the caches
GALLOP_GAP = 64  # a galloping search pays where a chunk's fingerprints fall closer than this, measured
COMPILED_LEVEL = 1 << 18  # states in a level from which the compiled loops are worth loading (use_compiled) ...
COMPILED_CANONICAL_LEVEL = 1 << 14  # ... and where they make the canonical forms too
# memory left under --max-memory that loading them takes: Numba's 100 to 125 MiB (measured), the
# canonical forms' tables (38 MB at rf 5) and room to spare
COMPILED_ROOM = 224 << 20


class VisitedSet:
    """Sorted, distinct uint64 fingerprints that grow in place; past the memory limit, on
    disk in a ``DiskRun`` (``spill``), where the search out of core then merges each level."""

    def __init__(self, hashed: bool = False, canonical: bool = False) -> None:
        self.hashed = hashed  # hashed fingerprints of wider keys: see ``use_compiled``
        self.canonical = canonical  # canonical forms worth compiling: see ``use_compiled``
        self.compiled = False  # the search runs the compiled loops (``vector_loops.py``), for good
        self._buf = np.empty(0, dtype=np.uint64)
        self.n = 0  # in memory
        self._sample: np.ndarray | None = None  # every SAMPLE_STRIDE-th value of a big set (locate)
        self.disk: DiskRun | None = None

    def spill(self, folder: Path) -> bool:
        """Move the fingerprints in memory to disk (a file in ``folder``, the first time) and
        free their memory; False (and nothing moved) when the folder cannot take them."""
        disk = self.disk or DiskRun(folder)
        values = self.values
        try:
            disk.absorb(values[lo : lo + DISK_BLOCK] for lo in range(0, self.n, DISK_BLOCK))
        except OSError:
            return False
        self.disk = disk
        self._buf, self.n, self._sample = np.empty(0, dtype=np.uint64), 0, None
        return True

    def unseen_on_disk(self, fp: np.ndarray) -> np.ndarray:
        """For sorted, distinct fingerprints: a mask of those not on disk."""
        return self.disk.absent(fp) if self.disk else np.ones(len(fp), dtype=bool)

    @property
    def values(self) -> np.ndarray:
        """The fingerprints (a view, valid until the next ``add``)."""
        return self._buf[: self.n]

    @property
    def nbytes(self) -> int:
        return self._buf.nbytes

    def use_compiled(self, level: int, room: int | None = None) -> None:
        """Before a level of ``level`` states: switch to the compiled loops for good once the set
        of hashed fingerprints passes 16 MB and a level has COMPILED_LEVEL states. A search that
        big repays Numba's import (0.3 s, and 100 to 125 MiB resident for the rest of the run,
        measured); one that ends soon after passing 2 M states, its levels small, would not.
        With ``canonical`` the loops also make the canonical forms (``kernel_symmetry_loops.py``),
        which repays them from levels of COMPILED_CANONICAL_LEVEL states. One-word keys (rf 3's
        searches, 2 to 43 million states) stay on NumPy: there those 125 MiB would be 3 to 60
        bytes a state. Nor do the loops load with less than COMPILED_ROOM bytes of ``room``
        left under the memory limit (None: no limit)."""
        big = self._sample is not None and level >= COMPILED_LEVEL
        canonical = self.canonical and level >= COMPILED_CANONICAL_LEVEL
        fits = room is None or room >= COMPILED_ROOM
        self.compiled = self.compiled or (self.hashed and fits and (big or canonical))

    def locate(self, fp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For sorted fingerprints: where each sorts among the values (``searchsorted``'s left
        side), and a mask of those not here. A big set is searched in two steps: its sample
        (a few MB, mostly in the caches) gives each fingerprint's block of 32 values, five halvings
        inside it the place. NumPy's searchsorted misses the caches on most of its steps
        there: 125 to 310 ns a fingerprint against 65 to 85 at 17 M values, measured. Where the
        fingerprints fall close together (fewer than GALLOP_GAP values apart on average), a
        compiled galloping search does better still (32 ns)."""
        values, n = self.values, self.n
        if not n:
            return np.zeros(len(fp), dtype=np.int64), np.ones(len(fp), dtype=bool)
        if self.compiled and n < GALLOP_GAP * len(fp):
            from .vector_loops import gallop  # Numba, imported where it pays

            return gallop(values, fp)
        if self._sample is None:
            pos = np.searchsorted(values, fp)
        else:
            below = (np.searchsorted(self._sample, fp) - 1) * SAMPLE_STRIDE  # a value < fp there, or -1
            below = np.maximum(below, -1)
            step = SAMPLE_STRIDE  # the place is in (below, below + SAMPLE_STRIDE]
            while step > 1:
                step >>= 1
                mid = np.minimum(below + step, n - 1)
                below = np.where(values.take(mid) < fp, mid, below)
            pos = below + 1
        return pos, values.take(np.minimum(pos, n - 1)) != fp

    def _sampled(self) -> None:
        self._sample = self.values[::SAMPLE_STRIDE].copy() if self.n >= SAMPLED_FROM else None

    def growth(self, k: int) -> int:
        """Bytes that adding k values allocates."""
        need = self.n + k
        return 0 if need <= len(self._buf) else 8 * (max(need, int(len(self._buf) * GROWTH)) - len(self._buf))

    def smallest_gap(self) -> int:
        """The least difference of two neighbours (0 with fewer than two values), a block at a
        time: a difference array of the whole set would be as big as the set. With a disk
        part, the set in memory is spilled first, then the file read once."""
        if self.disk is None:
            return smallest_gap(self.values)
        if self.n and not self.spill(self.disk.folder):  # no room: each part's gaps, not those between them
            return min([g for g in (self.disk.smallest_gap(), smallest_gap(self.values)) if g], default=0)
        return self.disk.smallest_gap()

    def collision_note(self, states: int, generated: int) -> str:
        return collision_note(states, generated, self.smallest_gap())

    def add(self, new: np.ndarray, pos: np.ndarray) -> None:
        """Merge ``new`` (sorted, none already here), given ``pos``: where each sorts among
        the values (``searchsorted``)."""
        k, n = len(new), self.n
        if not k:
            return
        if n + k > len(self._buf):
            self._buf.resize(max(n + k, int(len(self._buf) * GROWTH)), refcheck=False)
        buf = self._buf
        at = pos + np.arange(k)  # where each new value ends up
        first = int(pos[0])  # old values before the first new one stay where they are
        hi = n
        while hi > first:  # from the back: each block moves up by the new values below it
            lo = max(first, hi - MERGE_BLOCK)
            a, b = np.searchsorted(pos, [lo, hi], side="left")  # new values that sort inside the block
            old = np.ones(hi - lo + b - a, dtype=bool)  # the block's destination: False where a new value goes
            old[at[a:b] - (lo + a)] = False
            buf[lo + a : hi + b][old] = buf[lo:hi].copy()
            hi = lo
        buf[at] = new
        self.n = n + k
        self._sampled()


class ChunkedFrontier:
    """A level in memory as the next level is expanded from it: its keys (in the expansion
    order ``VectorSearch._in_memory`` chooses) and each state's row in storage order, cut into
    the chunks' columns, each let go once its chunk has taken it. The expanded part of a wide
    level then no longer waits for the level's end, where the level's new states peak
    (main-job-r3's widest: 29 MiB, measured)."""

    def __init__(self, keys: np.ndarray, rows: np.ndarray, chunk: int) -> None:
        self.shape = keys.shape
        n = keys.shape[1]
        if n <= chunk:  # one chunk: the arrays themselves
            self._chunks = {0: (keys, rows)}
        else:  # copies, so that each goes alone
            self._chunks = {lo: (keys[:, lo : lo + chunk].copy(), rows[lo : lo + chunk].copy()) for lo in range(0, n, chunk)}

    def take(self, start: int) -> tuple[np.ndarray, np.ndarray]:
        """The columns of the chunk at ``start`` (once: a frontier is expanded once)."""
        return self._chunks.pop(start)


class LevelLog:
    """Per level, each state's parent row and action: on disk by default, else in memory.
    On disk each kind is one file the levels are appended to (a file per level cost more
    than the writing itself on small levels), in a temporary folder made at the first write;
    a level is read back through a memory map of its extent. A level saved in a checkpoint
    is read from the checkpoint's file instead (``saved``): a checkpointed search keeps no
    copy in the temporary folder, which a killed run would leave behind."""

    def __init__(self, on_disk: bool) -> None:
        self.on_disk = on_disk  # where levels appended from now on go
        self.folder: tempfile.TemporaryDirectory | None = None
        self.parents = _Levels()  # arrays in memory, or extents of files read through memory maps
        self.actions = _Levels()
        self.states = 0

    def append(self, parents: np.ndarray, actions: np.ndarray) -> None:
        self.states += len(parents)
        if self.on_disk:
            try:
                parents, actions = self._written("parents", parents), self._written("actions", actions)
            except OSError:  # a full or read-only temporary folder: this level stays in memory
                pass
        self.parents.append(parents)
        self.actions.append(actions)

    def _folder(self) -> Path:
        if self.folder is None:
            self.folder = tempfile.TemporaryDirectory(prefix="isrcheck-levels-")
        return Path(self.folder.name)

    def _own_file(self, kind: str, depth: int) -> Path:
        """Where a level out of core keeps its parents or actions (``adopt``)."""
        return self._folder() / f"{kind}-{depth:05d}"

    def _written(self, kind: str, values: np.ndarray) -> "_Extent":
        path = self._folder() / kind
        with open(path, "ab") as f:
            offset = f.tell()
            values.tofile(f)
        return _Extent(path, offset, len(values), values.dtype)

    def adopt(self, parents: Path, actions: Path, n: int, action_dtype: np.dtype) -> None:
        """A level whose parents (uint32) and actions were written elsewhere (out of core):
        its files move into this log's folder."""
        depth = len(self.parents)
        for kind, path, dtype in (("parents", parents, np.dtype(np.uint32)), ("actions", actions, action_dtype)):
            moved = self._own_file(kind, depth)
            os.replace(path, moved)
            getattr(self, kind).append(_Extent(moved, 0, n, dtype))
        self.states += n

    def saved(self, depth: int, path: Path, words: int, action_dtype: np.dtype) -> None:
        """Level ``depth`` is in a checkpoint's level file (``checkpoint_vector``: its keys'
        words, then the parents, then the actions): read from there from now on. A level out
        of core had files of its own here (``adopt``): they go."""
        n = len(self.parents[depth])
        self.parents[depth] = _Extent(path, 8 * words * n, n, np.dtype(np.uint32))
        self.actions[depth] = _Extent(path, (8 * words + 4) * n, n, np.dtype(action_dtype))
        if self.folder is not None:
            for kind in ("parents", "actions"):
                self._own_file(kind, depth).unlink(missing_ok=True)

    def replace(self, parents: list[np.ndarray], actions: list[np.ndarray]) -> None:
        """Levels read from a checkpoint (memory maps of its files, which the run does not write again)."""
        self.parents, self.actions = _Levels(parents), _Levels(actions)
        self.states = sum(len(p) for p in parents)

    def __len__(self) -> int:
        return len(self.parents)


def collision_note(states: int, generated: int, gap: int) -> str:
    """The chance that two distinct states shared a fingerprint, so that one was never explored:
    TLC's two estimates (from the counts, and from the least difference ``gap`` between the
    fingerprints kept), in words a Kafka engineer reads without TLC's manual."""
    optimistic = states * (generated - states) / 2.0**64
    actual = 1.0 / float(gap) if gap else 0.0
    return (f"states are told apart by 64-bit fingerprints: the chance that two were taken for one (one left "
            f"unexplored) is about {optimistic:.1E} from the counts, {actual:.1E} from the fingerprints seen")


class _Extent(NamedTuple):
    """A level's values in a file: where, and how many of which type."""

    path: Path
    offset: int
    n: int
    dtype: np.dtype

    def read(self) -> np.ndarray:
        if not self.n:
            return np.empty(0, dtype=self.dtype)
        return np.memmap(self.path, dtype=self.dtype, mode="r", offset=self.offset, shape=(self.n,))


class _Levels(Sequence):
    """One array per level: those on disk are read (mapped) when asked for."""

    def __init__(self, items: Iterable = ()) -> None:
        self._items: list = list(items)

    def append(self, item: "np.ndarray | _Extent") -> None:
        self._items.append(item)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> np.ndarray:  # type: ignore[override]
        item = self._items[i]
        return item.read() if isinstance(item, _Extent) else item

    def __setitem__(self, i: int, item: "np.ndarray | _Extent") -> None:
        self._items[i] = item


def mapped_keys(path: Path, words: int, n: int) -> np.memmap:
    """A saved level's keys, read from its file when asked for (``memmap``): once a level is
    saved, the search keeps no copy of it."""
    return np.memmap(path, dtype=np.uint64, mode="r", shape=(words, n))


def read_mapped(array: np.ndarray) -> np.ndarray:
    """A copy of an array, read from its file if it is a memory map: mapped pages a search
    reads would stay in its resident set, which the memory limit measures."""
    if not isinstance(array, np.memmap):
        return array
    return np.fromfile(array.filename, dtype=array.dtype, count=array.size, offset=array.offset).reshape(array.shape)
