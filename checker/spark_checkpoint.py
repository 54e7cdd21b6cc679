"""Checkpoints of the Spark engine's search: one folder of files per level, an atomic manifest.

A level-synchronous BFS has natural checkpoints: its completed levels. In the
job that computes a level, every task writes its partition of the level's new
states (the sorted keys and their parents, as the engine stores them) to
``DIR/level-NNNN/part-PPPPP-of-QQQQQ.pkl`` (temporary file, fsync, rename), and
returns the file's size and CRC-32 with its summary; once the level is complete
the driver replaces ``DIR/manifest.json`` atomically (``checkpoint.write_manifest``). The manifest lists every completed
level with its files, sizes and checksums, and the search's counters (states per
level, generated, states before symmetry, the deciding state of every property
found), under the frame every isrcheck checkpoint has (format, versions,
configuration and options, engine "spark": ``checkpoint.header``).

A kill at any moment leaves the previous manifest or the new one, each listing
only files that are whole on disk; files of a level the manifest does not list
are ignored, and replaced when the search reaches that level again. A file's
content depends only on the level, the partition and the partition count (both
in its name), so a late write of a killed run's worker cannot change it.

Resume checks the manifest (``checkpoint.read_manifest``), then the size and
checksum of every listed file, before Spark starts and before anything is
written. The executors read the levels back into RDDs with the engine's
partitioner; a level saved with another partition count is re-keyed by
fingerprint as it is read, so any partition count gives the same search.
Spark's own checkpoint directory is not used for this: local mode keeps no
files there, and its files are private to one application.

While a run saves, these files are also its levels' only durable copy: the engine
reads every completed level back from them (``rebuild``) instead of having Spark
checkpoint it too, so each level is written once. Partition ``i`` of a level saved
with the engine's partition count is its file ``i``, read under an empty RDD that
carries the engine's partitioner (``anchor``): no shuffle, and a block lost with an
executor is read again from its file by Spark's own lineage.

The functions run on executors import no pyspark (this module is shipped with
the package).
"""

from __future__ import annotations

import os
import pickle
import shutil
import uuid
import zlib
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from . import checkpoint
from .checkpoint import MANIFEST, CheckpointError
from .spark_tasks import Record, identity, partition_of

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import RDD, SparkContext

FORMAT = "isrcheck-spark-checkpoint-3"  # 3: levels of multi-word keys in spark_order's order
READ_BLOCK = 1 << 20


def level_dir(depth: int) -> str:
    return f"level-{depth:04d}"


def part_name(index: int, partitions: int) -> str:
    return f"part-{index:05d}-of-{partitions:05d}.pkl"


# -- on executors ---------------------------------------------------------------
def write_part(folder: str, depth: int, partitions: int, index: int, records: Iterator[Record]):
    """Write one partition of a level; yields ``(index, name, size, crc)`` for the manifest."""
    directory = os.path.join(folder, level_dir(depth))
    os.makedirs(directory, exist_ok=True)
    name = part_name(index, partitions)
    path = os.path.join(directory, name)
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"  # one per task attempt
    size = crc = 0
    with open(tmp, "wb") as f:
        for _, payload in records:
            data = pickle.dumps((payload[1], payload[2]), protocol=pickle.HIGHEST_PROTOCOL)
            f.write(data)
            size += len(data)
            crc = zlib.crc32(data, crc)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    yield index, name, size, crc


def read_part(partitions: int, item: tuple[int, int, str]) -> Iterator[Record]:
    """The level records of one saved file, keyed by their partition among ``partitions``."""
    index, saved_partitions, path = item
    with open(path, "rb") as f:
        while True:
            try:
                keys, blob = pickle.load(f)
            except EOFError:
                return
            if saved_partitions == partitions:
                yield index, ("V", keys, blob, None)
                continue
            if hasattr(keys, "shape"):  # kernel keys and parents as arrays (spark_vector)
                from .spark_vector import split_by_partition

                for q, ks, ps in split_by_partition(keys, blob, partitions):
                    yield q, ("V", ks, ps, None)
                continue
            buckets: dict[int, tuple[list[int], list[int]]] = {}
            for t, p in zip(keys, pickle.loads(blob)):  # keys sorted: each bucket stays sorted
                ks, ps = buckets.setdefault(partition_of(t, partitions), ([], []))
                ks.append(t)
                ps.append(p)
            for q, (ks, ps) in buckets.items():
                yield q, ("V", ks, pickle.dumps(ps, protocol=pickle.HIGHEST_PROTOCOL), None)


# -- on the driver ----------------------------------------------------------------
@dataclass
class Saved:
    """A verified Spark checkpoint: what the search continues from."""

    folder: Path
    levels: list[dict[str, Any]]  # per level: states, partitions, files [[index, name, size, crc], ...]
    generated: int
    full_states: int
    found: dict[str, tuple[int, int]]  # property -> (depth, state)
    elapsed: float

    @property
    def partitions(self) -> int:
        return int(self.levels[-1]["partitions"])

    def files(self, depth: int) -> list[tuple[int, int, str]]:
        level = self.levels[depth - 1]
        return level_files(self.folder, depth, int(level["partitions"]), level["files"])


def level_files(folder: Path, depth: int, partitions: int, listed: list) -> list[tuple[int, int, str]]:
    """``(index, partitions, path)`` of every file of a level, as ``read_part`` takes them, by index."""
    directory = Path(folder) / level_dir(depth)
    return sorted((int(i), partitions, str(directory / name)) for i, name, _, _ in listed)


def load(folder: Path, ident: dict[str, Any]) -> Saved:
    """Read and verify a Spark checkpoint; raise CheckpointError naming what is wrong."""
    folder = Path(folder)
    m = checkpoint.read_manifest(folder, FORMAT, ident)
    mpath = folder / MANIFEST
    try:
        saved = Saved(
            folder.absolute(),  # executors' working directories are not the driver's
            [_level_entry(level) for level in m["levels"]],
            int(m["generated"]),
            int(m["full_states"]),
            {str(k): (int(d), int(s)) for k, (d, s) in m["found"].items()},
            float(m["elapsed"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"checkpoint manifest {mpath} is malformed ({type(e).__name__}: {e})") from None
    if not saved.levels or any(not 1 <= d <= len(saved.levels) for d, _ in saved.found.values()):
        raise CheckpointError(f"checkpoint manifest {mpath} is inconsistent")
    for depth, level in enumerate(saved.levels, 1):
        for _, name, size, crc in level["files"]:
            _verify(folder, f"{level_dir(depth)}/{name}", size, crc)
    return saved


def _level_entry(level: dict) -> dict[str, Any]:
    partitions = int(level["partitions"])
    files = [[int(i), str(name), int(size), int(crc)] for i, name, size, crc in level["files"]]
    names_ok = all(Path(name).name == name == part_name(i, partitions) for i, name, _, _ in files)
    if int(level["states"]) < 1 or partitions < 1 or not names_ok:
        raise ValueError("a level entry is out of range")
    return {"states": int(level["states"]), "partitions": partitions, "files": files}


def _verify(folder: Path, relative: str, size: int, crc: int) -> None:
    path = folder / relative
    try:
        actual = path.stat().st_size
        if actual != size:
            words = "shorter" if actual < size else "longer"
            raise CheckpointError(f"checkpoint in {folder} is truncated: {relative} is {words} than the manifest says")
        value = 0
        with checkpoint.open_saved(folder, relative) as f:
            while block := f.read(READ_BLOCK):
                value = zlib.crc32(block, value)
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint in {folder} is incomplete: {relative} is missing") from None
    except OSError as e:
        raise CheckpointError(f"checkpoint in {folder} is unreadable: {relative} ({e.strerror or e})") from None
    if value != crc:
        raise CheckpointError(f"checkpoint in {folder} is corrupted: {relative} does not match its checksum")


def anchor(sc: "SparkContext", partitions: int) -> "RDD":
    """An empty RDD with the engine's partitioner, the parent of levels read without a shuffle.

    Its shuffle moves nothing; after the first job Spark skips it (and reruns it, for
    nothing, where an executor that held its empty outputs was lost)."""
    return sc.parallelize([], partitions).partitionBy(partitions, identity)


def read_level(files: list[tuple[int, int, str]], index: int, nothing: Iterator) -> Iterator[Record]:
    """Partition ``index`` of a level saved with the engine's partition count: its own file.

    The anchor's (empty) partition is read to its end first: a Python worker that leaves
    its input unread is not reused, and starting another costs most of a second per task."""
    for _ in nothing:
        pass
    return read_part(files[index][1], files[index])


def rebuild(sc: "SparkContext", files: list[tuple[int, int, str]], partitions: int, under: "RDD") -> "RDD":
    """A saved level as an RDD partitioned as the engine's levels are, read lazily by executors.

    ``files`` as ``level_files`` gives them; ``under``: the ``anchor`` of ``partitions``.
    A level saved with another partition count is re-keyed by a shuffle."""
    if [(i, saved) for i, saved, _ in files] == [(i, partitions) for i in range(partitions)]:
        return under.mapPartitionsWithIndex(partial(read_level, files), preservesPartitioning=True)
    records = sc.parallelize(files, len(files)).flatMap(partial(read_part, partitions))
    return records.partitionBy(partitions, identity)


class SparkCheckpointWriter:
    """Saves a Spark search's completed levels into a folder, one level at a time."""

    def __init__(self, folder: Path, ident: dict[str, Any], saved: Saved | None = None) -> None:
        self.folder = Path(folder).absolute()  # executors' working directories are not the driver's
        self.ident = ident
        self.levels: list[dict[str, Any]] = list(saved.levels) if saved is not None else []
        self.manifest: dict[str, Any] | None = None

    def level_job(self, depth: int, partitions: int) -> Callable:
        """The function that saves level ``depth`` as the job that computes it runs (mapPartitionsWithIndex)."""
        if depth != len(self.levels) + 1:  # pragma: no cover - an engine bug
            raise RuntimeError(f"level {depth} saved after {len(self.levels)} levels")
        self.discard(depth)  # a killed run's files of this level: the manifest never listed them
        return partial(write_part, str(self.folder), depth, partitions)

    def files(self, depth: int, written: list) -> list[tuple[int, int, str]]:
        """The files of level ``depth`` (``written`` as its job returned them), to read it back."""
        return level_files(self.folder, depth, len(written), written)

    def discard(self, depth: int) -> None:
        """Remove the files of a level that is not saved (one with no new state)."""
        shutil.rmtree(self.folder / level_dir(depth), ignore_errors=True)

    def save(self, files: list, states: int, search: Any, elapsed: float) -> None:
        """List the level just written (its ``files`` as the job returned them) in the manifest.

        ``search`` gives the counters as of this level: generated, full_states, found."""
        files = sorted(list(f) for f in files)
        partitions = len(files)
        depth = len(self.levels) + 1
        if [f[0] for f in files] != list(range(partitions)):  # pragma: no cover - a Spark bug
            raise RuntimeError(f"level {depth} was written as partitions {[f[0] for f in files]}")
        self.levels.append({"states": states, "partitions": partitions, "files": files})
        self.manifest = {
            **checkpoint.header(FORMAT, self.ident),
            "levels": self.levels,
            "generated": search.generated,
            "full_states": search.full_states,
            "found": {name: [d, s] for name, (d, s) in search.found.items()},
            "elapsed": elapsed,
        }
        self._write()

    def finish(self, elapsed: float) -> None:
        """At the end of the run (a stop included): the manifest again, with the time spent."""
        if self.manifest is not None:
            self.manifest["elapsed"] = elapsed
            self._write()

    def _write(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        checkpoint.write_manifest(self.folder, self.manifest)
