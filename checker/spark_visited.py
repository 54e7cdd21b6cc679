"""The Spark engine's visited set as files beside the executors: one per partition and level.

Without them, each level's anti-join reads every earlier level of its partition back from
Spark's block manager into its Python worker: the whole visited set, keys and parents,
pickled through a socket at every level. At rf 4 that was the largest single cost of a run
(the workers spent 25 of their 96 CPU s reading sockets, profiled). Where every executor
runs on the driver's machine (``local[N]``, a standalone cluster on this machine), each
anti-join task instead writes its partition's new keys to a file of a folder they all
reach, and the next levels' tasks map those files (``np.load`` with ``mmap_mode``): no
socket, no unpickling, and a level's task reads only what it searches.

Each file holds one sorted run in the levels' order (``spark_order``), written under a
temporary name and renamed, so a task that runs twice (a retry, a recomputed partition)
rewrites the same content and a reader never sees half a file. A task reads only levels
before its own, so a recomputed level finds what it found the first time. A missing file
is an error, never an empty level: the search stops rather than count a state twice.
Levels are still cached by Spark with their parents, for the counterexamples' walks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import numpy as np

from .spark_order import order_of


def level_file(folder: str, partition: int, depth: int) -> Path:
    return Path(folder) / str(partition) / f"{depth}.npy"


def runs(folder: str, partition: int, depth: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(keys, order values) of each level before ``depth`` in this partition, mapped from its file."""
    for d in range(1, depth):
        path = level_file(folder, partition, d)
        if not path.exists():
            raise FileNotFoundError(f"level {d} of partition {partition} is not in {folder}: "
                                    "the executors do not share the driver's folder")
        keys = np.load(path, mmap_mode="r")
        if keys.shape[1]:
            yield keys, order_of(keys)


def save(folder: str, partition: int, depth: int, keys: np.ndarray) -> None:
    """Write this partition's new keys of level ``depth`` (sorted), replacing an earlier attempt's."""
    path = level_file(folder, partition, depth)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f"{depth}.{os.getpid()}.tmp")
    with open(temp, "wb") as f:
        np.save(f, np.ascontiguousarray(keys))
    os.replace(temp, path)
