"""The vector search past its memory limit: the visited set, the level being built and the
queue on disk, as TLC's disk fingerprint set and disk state queue keep them.

* ``DiskRun``: the visited set, one sorted file of fingerprints, with each block's first
  value in memory. A level is checked against it in one ordered pass that reads only the
  blocks its fingerprints fall in, then merged into it in one streaming pass.
* ``LevelRuns``: each chunk's new states, a sorted run in a file; at the level's end the
  runs are merged (each state once, with its first discovery), checked against the
  visited set, sorted into the scalar BFS's order by priority in a second merge, and
  written out as the next queue (``FrontierFile``, in storage order: a state's row is
  its place in the file) and the level's parents and actions. What stays in memory is
  the merge budget's buffers (the runs' read blocks, the states being sorted by
  priority): nothing grows with the level.

Files are read and written with plain reads and writes, never memory maps: a map's pages
count in the resident set the memory limit is measured on.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

import numpy as np

from .vector_arrays import NO_PRIO, first_in_groups

DISK_BLOCK = 1 << 16  # fingerprints a visited-set read or write moves at a time (512 KiB)
# bytes of a level's merge buffers (its runs' read buffers, shared; the states it sorts by
# priority at a time), at most: a merge's transients are a few times this
MERGE_BUDGET = 8 << 20
MIN_BUDGET = 1 << 20


class DiskRun:
    """Sorted, distinct uint64 fingerprints in a file, with each block's first value in memory."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / "visited-0"
        self.n = 0
        self.firsts = np.empty(0, dtype=np.uint64)  # each block's first fingerprint
        self.merges = 0

    def absent(self, fp: np.ndarray) -> np.ndarray:
        """For sorted, distinct fingerprints: a mask of those not in the file, reading only
        the blocks that could hold them, in order."""
        out = np.ones(len(fp), dtype=bool)
        if not self.n or not len(fp):
            return out
        block_of = np.searchsorted(self.firsts, fp, side="right") - 1  # -1: below the first value
        blocks = np.unique(block_of[block_of >= 0])
        if not len(blocks):
            return out
        bounds = np.searchsorted(block_of, np.append(blocks, blocks[-1] + 1))
        with open(self.path, "rb") as f:
            for b, lo, hi in zip(blocks.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
                f.seek(b * DISK_BLOCK * 8)
                values = np.fromfile(f, dtype=np.uint64, count=DISK_BLOCK)
                at = np.minimum(np.searchsorted(values, fp[lo:hi]), len(values) - 1)
                out[lo:hi] = values[at] != fp[lo:hi]
        return out

    def absorb(self, blocks: Iterable[np.ndarray]) -> None:
        """Merge sorted fingerprints (sorted blocks, none already here) into a new file that
        replaces this one: one streaming pass over both."""
        path = self.folder / f"visited-{self.merges + 1}"
        writer = _BlockWriter(path)
        try:
            for block in merged_sorted([file_blocks(self.path, np.uint64, DISK_BLOCK, self.n), iter(blocks)]):
                writer.write(block)
        except BaseException:
            writer.close()
            path.unlink(missing_ok=True)
            raise
        writer.close()
        self.path.unlink(missing_ok=True)
        self.path, self.merges = path, self.merges + 1
        self.n, self.firsts = writer.n, np.array(writer.firsts, dtype=np.uint64)

    def smallest_gap(self) -> int:
        """The least difference of two neighbours in the file (0 with fewer than two), in one
        pass: read once, for the collision estimate at the end of a run."""
        best, last = 0, None
        for block in file_blocks(self.path, np.uint64, DISK_BLOCK, self.n):
            gaps = [smallest_gap(block)] if len(block) > 1 else []
            if last is not None:
                gaps.append(int(block[0]) - last)
            best, last = min([g for g in [best, *gaps] if g], default=0), int(block[-1])
        return best


class _BlockWriter:
    """Sorted fingerprints appended to a file, remembering every DISK_BLOCK-th one."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "wb")
        self.n, self.firsts = 0, []

    def write(self, values: np.ndarray) -> None:
        self.firsts.extend(values[(-self.n) % DISK_BLOCK :: DISK_BLOCK].tolist())
        values.tofile(self.file)
        self.n += len(values)

    def close(self) -> None:
        self.file.close()


def smallest_gap(values: np.ndarray, block: int = 1 << 20) -> int:
    """The least difference of neighbours in sorted values, a block at a time (0 with fewer than two)."""
    best = None
    for lo in range(0, len(values) - 1, block):
        gap = int(np.diff(values[lo : lo + block + 1]).min())
        best = gap if best is None else min(best, gap)
    return best or 0


def file_blocks(path: Path, dtype: np.dtype | type, block: int, n: int | None = None) -> Iterator[np.ndarray]:
    """A file of ``dtype`` records (its first ``n``, or all), a block at a time."""
    if n == 0 or not path.exists():
        return
    with open(path, "rb") as f:
        left = n if n is not None else -1
        while left:
            values = np.fromfile(f, dtype=dtype, count=block if left < 0 else min(block, left))
            if not len(values):
                return
            left -= len(values) if left > 0 else 0
            yield values


def merged_sorted(sources: list[Iterator[np.ndarray]], key: Callable[[np.ndarray], np.ndarray] = lambda a: a
                  ) -> Iterator[np.ndarray]:
    """The union of sorted sources (each yields blocks, sorted within and across, no key
    twice in one source), as sorted blocks: each step takes from every source what sorts
    up to the smallest of their buffers' last keys, so a source whose buffer ends there is
    used up and read again. Equal keys from several sources come out in the same block."""
    bufs = [_next_nonempty(s) for s in sources]
    while True:
        live = [i for i, b in enumerate(bufs) if b is not None]
        if not live:
            return
        bound = min(key(bufs[i])[-1] for i in live)
        taken = []
        for i in live:
            cut = int(np.searchsorted(key(bufs[i]), bound, side="right"))
            taken.append(bufs[i][:cut])
            bufs[i] = bufs[i][cut:] if cut < len(bufs[i]) else _next_nonempty(sources[i])
        out = np.concatenate(taken) if len(taken) > 1 else taken[0]
        yield out[np.argsort(key(out), kind="stable")] if len(taken) > 1 else out


def _next_nonempty(source: Iterator[np.ndarray]) -> np.ndarray | None:
    for block in source:
        if len(block):
            return block
    return None


class SpilledLevel(NamedTuple):
    """A level merged on disk, in files of the spill folder."""

    n: int
    frontier: "FrontierFile"  # the keys in storage order: the next level's queue
    fingerprints: Path  # sorted: to merge into the visited set
    parents: Path  # uint32 per state, in storage order
    actions: Path  # per state, in storage order
    first_rows: list[int]  # per pending property, the storage row of the first state deciding it (-1: none)
    orbits: int  # the states' orbit sizes summed (0 without symmetry)


class LevelRuns:
    """A level's chunks' new states as sorted runs on disk, merged at the level's end."""

    def __init__(self, folder: Path, depth: int, words: int, pending: int, orbits: bool,
                 budget: int = MERGE_BUDGET) -> None:
        fields = [("fp", "<u8"), ("prio", "<i8"), ("keys", "<u8", (words,))]
        fields += [("orbits", "<u4")] if orbits else []
        self.dtype, self.words, self.pending = np.dtype(fields), words, pending
        self.by_prio = np.dtype([("prio", "<i8"), ("keys", "<u8", (words,))])
        self.folder, self.prefix = folder, f"level-{depth:05d}"
        self.runs: list[tuple[Path, int]] = []
        self.budget = budget  # bytes: see MERGE_BUDGET
        self.chunks: list[np.ndarray] = []  # chunks' records not yet written
        self.deciding = np.full(pending, NO_PRIO, dtype=np.int64)  # per pending property: New.deciding

    def add(self, new: Any) -> None:
        """One chunk's new states (``vector_arrays.New``), sorted by fingerprint; written as a
        run once the chunks held reach the budget (a run per chunk would make a level's merge
        read hundreds of runs a few records at a time under a tight limit)."""
        if not len(new.fp):
            return
        records = np.empty(len(new.fp), dtype=self.dtype)
        records["fp"], records["prio"], records["keys"] = new.fp, new.prio, new.keys.T
        np.minimum(self.deciding, new.deciding, out=self.deciding)
        if new.orbits is not None:
            records["orbits"] = new.orbits
        self.chunks.append(records)
        if sum(c.nbytes for c in self.chunks) >= self.budget:
            self._fp_run()

    def _fp_run(self) -> None:
        """The chunks held, as one run sorted by fingerprint, each state once."""
        if self.chunks:
            records = np.concatenate(self.chunks) if len(self.chunks) > 1 else self.chunks[0]
            self.chunks.clear()
            order = np.argsort(records["fp"], kind="stable")  # the chunks' sorted runs merged (timsort)
            self.runs.append(self._written(_each_once(records, order), "run"))

    def _written(self, records: np.ndarray, kind: str) -> tuple[Path, int]:
        path = self.folder / f"{self.prefix}-{kind}-{len(self.runs):06d}"
        records.tofile(path)
        return path, len(records)

    def merge(self, absent: Callable[[np.ndarray], np.ndarray], actions: int, by_rank: np.ndarray) -> SpilledLevel:
        """Two streaming passes. By fingerprint: each state once with its smallest priority
        (its first discovery), less those ``absent`` says are visited; the fingerprints are
        written sorted, and priorities and keys as runs sorted by priority. By priority: the
        runs merged into storage order, written as the queue's keys, the parents (priority
        over ``actions``) and the actions (``by_rank`` of the remainder)."""
        self._fp_run()
        first, orbits = [int(best) for best in self.deciding], 0  # no state on disk decides a pending property
        fps = self.folder / f"{self.prefix}-fingerprints"
        runs, self.runs, buffered = self.runs, [], []
        with open(fps, "wb") as fp_out:
            for records in merged_sorted(self._sources(runs, self.dtype), key=lambda r: r["fp"]):
                records = _each_once(records, np.arange(len(records)))
                records = records[absent(records["fp"])]
                records["fp"].tofile(fp_out)
                if "orbits" in self.dtype.names:
                    orbits += int(records["orbits"].sum(dtype=np.int64))
                by_prio = np.empty(len(records), dtype=self.by_prio)
                by_prio["prio"], by_prio["keys"] = records["prio"], records["keys"]
                buffered.append(by_prio)
                if sum(b.nbytes for b in buffered) >= self.budget:
                    self._sorted_run(buffered)
        self._sorted_run(buffered)
        for path, _ in runs:
            path.unlink()
        frontier = FrontierFile(self.folder / f"{self.prefix}-queue", self.words)
        parents, actions_path = self.folder / f"{self.prefix}-parents", self.folder / f"{self.prefix}-actions"
        rows = [-1] * self.pending
        with open(frontier.path, "wb") as keys_out, open(parents, "wb") as p_out, open(actions_path, "wb") as a_out:
            for records in merged_sorted(self._sources(self.runs, self.by_prio), key=lambda r: r["prio"]):
                prio = records["prio"]
                for i, best in enumerate(first):
                    if rows[i] < 0 and best <= prio[-1]:
                        rows[i] = frontier.n + int(np.searchsorted(prio, best))
                np.ascontiguousarray(records["keys"]).tofile(keys_out)
                parent, rank = np.divmod(prio, actions)
                parent.astype(np.uint32).tofile(p_out)
                by_rank[rank].tofile(a_out)
                frontier.n += len(records)
        for path, _ in self.runs:
            path.unlink()
        return SpilledLevel(frontier.n, frontier, fps, parents, actions_path, rows, orbits)

    def _sources(self, runs: list[tuple[Path, int]], dtype: np.dtype) -> list[Iterator[np.ndarray]]:
        """Each run read a block at a time, the blocks sharing the budget."""
        block = max(64, self.budget // max(1, len(runs)) // dtype.itemsize)  # many runs: small reads
        return [file_blocks(p, dtype, block, n) for p, n in runs]

    def _sorted_run(self, buffered: list[np.ndarray]) -> None:
        """What pass one has buffered, sorted by priority and written as a run."""
        if buffered:
            records = np.concatenate(buffered)
            buffered.clear()
            self.runs.append(self._written(records[np.argsort(records["prio"])], "by-prio"))


def _each_once(records: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The records (``order`` sorts them by fingerprint) each fingerprint once, in that
    order, carrying its group's smallest priority: ``first_in_groups`` on records."""
    index, prio, _ = first_in_groups(records["fp"], order, records["prio"])
    out = records[index]
    out["prio"] = prio
    return out


class FrontierFile:
    """A level's keys on disk, read like the in-memory frontier array (``shape``, and
    ``[:, a:b]`` column slices), with ``pread``: no file position shared between reads."""

    def __init__(self, path: Path, words: int, n: int = 0) -> None:
        self.path, self.words, self.n = path, words, n
        self.fd: int | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.words, self.n

    def __getitem__(self, index: tuple[slice, slice]) -> np.ndarray:
        rows, cols = index
        assert rows == slice(None) and cols.step is None, "a frontier file is read by column ranges"
        lo, hi, _ = cols.indices(self.n)
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY)
        width = 8 * self.words
        data = os.pread(self.fd, (hi - lo) * width, lo * width) if hi > lo else b""
        return np.frombuffer(data, dtype=np.uint64).reshape(-1, self.words).T.copy()

    def remove(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.path.unlink(missing_ok=True)


def spill_folder() -> tempfile.TemporaryDirectory:
    """The temporary folder a search's files past memory go in (under $TMPDIR)."""
    return tempfile.TemporaryDirectory(prefix="isrcheck-spill-")
