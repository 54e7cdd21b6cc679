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
  (written once, read back through a memory map to rebuild a trace), or in memory
  where a checkpoint or the state graph reads them as arrays.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

GROWTH = 1.125  # the visited buffer's room to grow: at most an eighth of it is unused
MERGE_BLOCK = 1 << 20  # old fingerprints moved per step of an in-place merge


class VisitedSet:
    """Sorted, distinct uint64 fingerprints that grow in place."""

    def __init__(self) -> None:
        self._buf = np.empty(0, dtype=np.uint64)
        self.n = 0

    @property
    def values(self) -> np.ndarray:
        """The fingerprints (a view, valid until the next ``add``)."""
        return self._buf[: self.n]

    @property
    def nbytes(self) -> int:
        return self._buf.nbytes

    def growth(self, k: int) -> int:
        """Bytes that adding k values allocates."""
        need = self.n + k
        return 0 if need <= len(self._buf) else 8 * (max(need, int(len(self._buf) * GROWTH)) - len(self._buf))

    def smallest_gap(self) -> int:
        """The least difference of two neighbours (0 with fewer than two values), a block at a
        time: a difference array of the whole set would be as big as the set."""
        values, best = self.values, None
        for lo in range(0, self.n - 1, MERGE_BLOCK):
            gap = int(np.diff(values[lo : lo + MERGE_BLOCK + 1]).min())
            best = gap if best is None else min(best, gap)
        return best or 0

    def replace(self, values: np.ndarray) -> None:
        """Take these sorted values (copied unless the array owns them: it will be resized)."""
        if not (values.flags.owndata and values.flags.c_contiguous and values.dtype == np.uint64):
            values = values.astype(np.uint64, copy=True)
        self._buf, self.n = values, len(values)

    def add(self, new: np.ndarray, pos: np.ndarray) -> None:
        """Merge ``new`` (sorted, none already here), given ``pos``: where each sorts among
        the values (``searchsorted``)."""
        k, n = len(new), self.n
        if not k:
            return
        if n + k > len(self._buf):
            self._buf.resize(max(n + k, int(len(self._buf) * GROWTH)), refcheck=False)
        buf = self._buf
        first = int(pos[0])  # old values before the first new one stay where they are
        hi = n
        while hi > first:  # from the back: each block moves up by the new values below it
            lo = max(first, hi - MERGE_BLOCK)
            a, b = np.searchsorted(pos, [lo, hi], side="left")  # new values that sort inside the block
            below = np.bincount(pos[a:b] - lo, minlength=hi - lo).cumsum()
            below += a
            below += np.arange(lo, hi)
            buf[below] = buf[lo:hi].copy()
            hi = lo
        buf[pos + np.arange(k)] = new
        self.n = n + k


class LevelLog:
    """Per level, each state's parent row and action: on disk by default, else in memory."""

    def __init__(self, on_disk: bool) -> None:
        self.folder = tempfile.TemporaryDirectory(prefix="isrcheck-levels-") if on_disk else None
        self.parents: list[np.ndarray] = []  # in memory, or read-only memory maps of the files
        self.actions: list[np.ndarray] = []
        self.states = 0

    def append(self, parents: np.ndarray, actions: np.ndarray) -> None:
        self.states += len(parents)
        if self.folder is None:
            self.parents.append(parents)
            self.actions.append(actions)
            return
        depth = len(self.parents)
        try:
            parents = _written(Path(self.folder.name) / f"parents-{depth:05d}", parents)
            actions = _written(Path(self.folder.name) / f"actions-{depth:05d}", actions)
        except OSError:  # a full or read-only temporary folder: this level stays in memory
            pass
        self.parents.append(parents)
        self.actions.append(actions)

    def replace(self, parents: list[np.ndarray], actions: list[np.ndarray]) -> None:
        """Levels read from a checkpoint (kept in memory: the run saves them again)."""
        self.parents, self.actions = parents, actions
        self.states = sum(len(p) for p in parents)

    def __len__(self) -> int:
        return len(self.parents)


def _written(path: Path, values: np.ndarray) -> np.ndarray:
    values.tofile(path)
    if not len(values):
        return values
    return np.memmap(path, dtype=values.dtype, mode="r", shape=values.shape)
