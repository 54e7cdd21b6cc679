"""The Spark engine's visited set as files beside the executors: one per partition and level.

Without them, each level's anti-join reads every earlier level of its partition back from
Spark's block manager into its Python worker: the whole visited set, keys and parents,
pickled through a socket at every level. At rf 4 that was the largest single cost of a run
(the workers spent 25 of their 96 CPU s reading sockets, profiled). Where every executor
runs on the driver's machine (``local[N]``, a standalone master on 127.0.0.1), each
anti-join task instead writes its partition's new keys to a file of a folder they all
reach, and the next levels' tasks map those files (``np.load`` with ``mmap_mode``): no
socket, no unpickling, and a level's task reads only what it searches.

Each file holds one sorted run in the levels' order (``spark_order``), written under a
temporary name and renamed, so a task that runs again (a retry, a recomputed partition)
rewrites the same content and a reader never sees half a file. Every MERGE_EVERY levels or
more (``_worth_merging``) a task also writes the runs so far merged into one
(``merged-<depth>.npy``, replacing the last), so that a level searches a few runs, not one
a level. A task reads only levels before its own (a merged file up to one of them, then
the levels' own files; only these where the merged file is newer), so a recomputed level
finds what it found the first time. A missing file is an error, never an empty level: the
search stops rather than count a state twice. Levels are still cached by Spark with their
parents, for the counterexamples' walks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import numpy as np

from .spark_order import in_order, order_of

MERGE_EVERY = 8  # levels' files a search reads before they are merged into one


def level_file(folder: str, partition: int, depth: int) -> Path:
    return Path(folder) / str(partition) / f"{depth}.npy"


def _merged_files(folder: str, partition: int) -> dict[int, Path]:
    """The partition's merged files by the last level each holds."""
    return {int(p.stem.split("-")[1]): p for p in (Path(folder) / str(partition)).glob("merged-*.npy")}


def _merged_up_to(folder: str, partition: int, depth: int) -> int:
    """The last level of the newest merged file before ``depth`` (0: none)."""
    return max((d for d in _merged_files(folder, partition) if d < depth), default=0)


def _load(path: Path) -> np.ndarray:
    if not path.exists():
        raise FileNotFoundError(f"{path.parent.name}/{path.name} is not in {path.parent.parent}: "
                                "the executors do not share the driver's folder")
    return np.load(path, mmap_mode="r")


def _runs(folder: str, partition: int, depth: int) -> Iterator[np.ndarray]:
    merged = _merged_up_to(folder, partition, depth)
    if merged:
        try:
            yield np.load(Path(folder) / str(partition) / f"merged-{merged}.npy", mmap_mode="r")
        except FileNotFoundError:  # replaced by a newer one meanwhile: the levels' own files
            merged = 0
    for d in range(merged + 1, depth):
        yield _load(level_file(folder, partition, d))


def runs(folder: str, partition: int, depth: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(keys, order values) of the levels before ``depth`` in this partition, in a few sorted runs."""
    for keys in _runs(folder, partition, depth):
        if keys.shape[1]:
            yield keys, order_of(keys)


def save(folder: str, partition: int, depth: int, keys: np.ndarray) -> None:
    """Write this partition's new keys of level ``depth`` (sorted), replacing an earlier attempt's;
    every MERGE_EVERY levels, the runs up to it merged into one file as well."""
    _write(level_file(folder, partition, depth), keys)
    if _worth_merging(folder, partition, depth):
        every = [run for run in _runs(folder, partition, depth + 1) if run.shape[1]]
        merged = in_order(np.concatenate(every, axis=1)) if every else keys[:, :0]
        _write(Path(folder) / str(partition) / f"merged-{depth}.npy", merged)
        for last, old in _merged_files(folder, partition).items():  # at most the levels' size twice on disk
            if last < depth:
                old.unlink(missing_ok=True)


def _worth_merging(folder: str, partition: int, depth: int) -> bool:
    """After level ``depth``: MERGE_EVERY levels' own files since the last merge, holding half as
    many states as it at least (a search's last levels are small: searching them costs less
    than rewriting the set), or four times as many files."""
    base = _merged_up_to(folder, partition, depth + 1)
    since = depth - base
    if since < MERGE_EVERY:
        return False
    runs = [run.shape[1] for run in _runs(folder, partition, depth + 1)]
    merged, tail = (runs[0], sum(runs[1:])) if base else (0, sum(runs))
    return 2 * tail >= merged or since >= 4 * MERGE_EVERY


def _write(path: Path, keys: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    with open(temp, "wb") as f:
        np.save(f, np.ascontiguousarray(keys))
    os.replace(temp, path)
