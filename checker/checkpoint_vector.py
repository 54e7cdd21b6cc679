"""Checkpoints of the vector kernel's search: one file per completed level, an atomic manifest.

The vector search (``bfs_vector.py``) works a level at a time and keeps each level
as three arrays: the states' kernel keys, their parents' rows in the level before,
and the actions that reached them. Those arrays are the checkpoint: when a level is
complete its file ``level-NNNNN.bin`` (keys, parents, actions, raw) is written,
fsynced and listed with its size and CRC-32 in the manifest, which is then replaced
atomically (``checkpoint.write_manifest``: the frame, sealing and checks every isrcheck
checkpoint shares). Levels are never rewritten, so a checkpoint costs one write of
each state's 10 to 20 bytes; the visited set and the frontier are derived from the
levels on resume, exactly as the search built them.

Once saved, a level's file is the search's only copy of it: its keys, parents and
actions are read from the file when a trace asks (memory maps), so a checkpointed
search holds no level in memory and can go out of core like any other; a level of a
search out of core is written from its file a block at a time.

A kill at any moment leaves the previous manifest or the new one, each listing only
whole files; a level file the manifest does not list is ignored, and replaced when
the search reaches that level again. Counters are those of the last complete level,
so a resumed search redoes at most the level it was in, and counts it once.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from isrcheck.files import atomic_write

from .checkpoint import MANIFEST, CheckpointError, count, found_states, header, malformed, read_manifest, seconds
from .checkpoint import open_saved, whole, write_manifest
from .vector_store import mapped_keys, read_mapped

FORMAT = "isrcheck-vector-checkpoint-1"


def level_name(depth: int) -> str:
    return f"level-{depth:05d}.bin"


@dataclass
class Levels:
    """The saved part of a vector search: per level, keys (words, n), parents and actions."""

    keys: list[np.ndarray]
    parents: list[np.ndarray]
    actions: list[np.ndarray]
    generated: int
    full_states: int
    found: dict[str, tuple[int, int]]  # property -> (level, row)
    elapsed: float
    exhausted: bool  # the last level was expanded and had no new state


class VectorCheckpointWriter:
    """Saves a vector search's completed levels into a folder; ``save`` after each level."""

    def __init__(self, folder: Path, ident: dict[str, Any], levels: list[dict[str, Any]] | None = None) -> None:
        self.folder = Path(folder)
        self.ident = ident
        self.levels: list[dict[str, Any]] = list(levels or [])  # per level: states, size, crc

    def save(self, search: Any, elapsed: float, exhausted: bool = False) -> list[tuple[int, Path]]:
        """Write the levels not yet on disk, then the manifest with the search's counters; the
        levels written, and their files. A level is written a block at a time: its keys may
        be a file of the search out of core (``[:, a:b]`` column ranges), as big as the disk."""
        self.folder.mkdir(parents=True, exist_ok=True)
        written = []
        for depth in range(len(self.levels), len(search.keys)):
            parents, tally = search.parents[depth], [0, 0]  # CRC-32 and size, as the parts are written
            parts = _level_parts(search.keys[depth], parents, search.actions[depth])
            path = atomic_write(self.folder / level_name(depth), _tallied(parts, tally))
            self.levels.append({"states": int(len(parents)), "size": tally[1], "crc": tally[0]})
            written.append((depth, path))
        write_manifest(self.folder, {
            **header(FORMAT, self.ident),
            "words": int(search.kernel.words),
            "action_dtype": np.dtype(search.kernel.action_dtype).str,
            "levels": self.levels,
            "generated": search.generated_at_level_end,
            "full_states": search.full_states,
            "found": {name: [d, row] for name, (d, row) in search.found.items()},
            "elapsed": elapsed,
            "exhausted": exhausted,
        })
        return written


BLOCK = 1 << 20  # states written or checked at a time


def _tallied(parts: Iterator[memoryview], tally: list[int]) -> Iterator[memoryview]:
    """The parts, each added to ``tally`` (CRC-32, size) as it goes by."""
    for part in parts:
        tally[0], tally[1] = zlib.crc32(part, tally[0]), tally[1] + part.nbytes
        yield part


def _level_parts(keys: Any, parents: np.ndarray, actions: np.ndarray) -> Iterator[memoryview]:
    """A level file's bytes in blocks: each key word in turn, then the parents, the actions."""
    words, n = keys.shape
    for w in range(words):
        for lo in range(0, n, BLOCK):
            yield np.ascontiguousarray(keys[:, lo : lo + BLOCK][w]).data
    for column in (parents, actions):
        for lo in range(0, n, BLOCK):
            yield np.ascontiguousarray(column[lo : lo + BLOCK]).data


def load(folder: Path, ident: dict[str, Any], words: int, action_dtype: Any) -> tuple[Levels, list[dict[str, Any]]]:
    """Read and verify a vector checkpoint for a kernel of ``words`` key words; CheckpointError if unusable."""
    folder = Path(folder)
    m = read_manifest(folder, FORMAT, ident)
    mpath = folder / MANIFEST
    with malformed(mpath):
        if count(m, "words", 1, 64) != words or m["action_dtype"] != np.dtype(action_dtype).str:
            raise CheckpointError(f"checkpoint in {folder} was written for another key layout")
        if not isinstance(m["levels"], list) or not m["levels"] or type(m["exhausted"]) is not bool:
            raise ValueError("levels is not a non-empty list")
        entries = [_entry(level, words, action_dtype) for level in m["levels"]]
        sizes = [e["states"] for e in entries]

        def where(value: Any) -> tuple[int, int]:
            if not isinstance(value, list) or len(value) != 2:
                raise ValueError("a deciding state is not [level, row]")
            depth = whole(value[0], "a deciding level", 0, len(sizes) - 1)
            return depth, whole(value[1], "a deciding row", 0, sizes[depth] - 1)

        saved = Levels([], [], [], count(m, "generated"), count(m, "full_states"), found_states(m, where),
                       seconds(m), m["exhausted"])
    for depth, entry in enumerate(entries):
        _read_level(folder, depth, entry, words, np.dtype(action_dtype), saved, sizes)
    return saved, entries


def _entry(level: Any, words: int, action_dtype: Any) -> dict[str, int]:
    if not isinstance(level, dict):
        raise ValueError("a level entry is not a map")
    n = count(level, "states", 1)
    size = count(level, "size", 0, 2**48)
    if size != n * (8 * words + 4 + np.dtype(action_dtype).itemsize):
        raise ValueError("a level's size does not fit its state count")
    return {"states": n, "size": size, "crc": count(level, "crc", 0, 2**32 - 1)}


def _read_level(folder: Path, depth: int, entry: dict, words: int, action_dtype: np.dtype, saved: Levels,
                sizes: list[int]) -> None:
    name, size = level_name(depth), entry["size"]
    crc, seen = 0, 0
    try:
        with open_saved(folder, name) as f:
            while seen <= size:
                data = f.read(min(8 * BLOCK, size + 1 - seen))
                if not data:
                    break
                crc, seen = zlib.crc32(data, crc), seen + len(data)
    except OSError as e:
        raise CheckpointError(f"checkpoint in {folder} is unreadable: {name} ({e.strerror or e})") from None
    if seen != size:
        words_ = "shorter" if seen < size else "longer"
        raise CheckpointError(f"checkpoint in {folder} is truncated: {name} is {words_} than the manifest says")
    if crc != entry["crc"]:
        raise CheckpointError(f"checkpoint in {folder} is corrupted: {name} does not match its checksum")
    n = entry["states"]
    keys = mapped_keys(folder / name, words, n)
    parents = np.memmap(folder / name, dtype=np.uint32, mode="r", shape=(n,), offset=8 * words * n)
    actions = np.memmap(folder / name, dtype=action_dtype, mode="r", shape=(n,), offset=8 * words * n + 4 * n)
    if depth and len(parents) and int(read_mapped(parents).max()) >= sizes[depth - 1]:
        raise CheckpointError(f"checkpoint in {folder} is inconsistent: {name} names a parent that is not there")
    saved.keys.append(keys)
    saved.parents.append(parents)
    saved.actions.append(actions)
