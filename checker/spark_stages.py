"""A level in one Spark stage: its anti-join and the next level's expansion, as one task.

A level computed by an action (``count``) is two stages: the previous level's
expansion, written to the shuffle, then the anti-join that reads it. Every stage
of Python tasks costs about 40 ms of scheduling and worker hand-over in local
mode, whatever the level's size (bench/README.md, "a level in one stage"). Run
instead as the map stage of the *next* level's shuffle (``SparkContext.submitMapStage``),
one stage reads the candidates, removes the visited states, keeps the level (the
persisted RDD in the middle of the stage's pipeline) and expands it into the next
shuffle; the next level's job finds that shuffle written and starts from it.

Spark marks an RDD's checkpoint (``localCheckpoint``, ``checkpoint``) done only after
``runJob``, never after a map stage: ``checkpoint`` does it (``RDD.doCheckpoint``),
so levels' lineage is truncated as before and old shuffles can be cleaned.

Both reach past PySpark's API into the JVM; where PySpark builds ``partitionBy``
otherwise (a future version), ``shuffle_dependency`` says None and the engine counts
the level as before: slower, same result.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import RDD, SparkContext

    from .spark_context import Watchdog


def keep(level: "RDD", durability: str) -> None:
    """Mark a level to be kept, and checkpointed or replicated (``spark_context.level_durability``),
    by the job that computes it; a "saved" level is computed once, by the job that saves it,
    then read back from its files.

    Kept on disk only: its expansion reads it back in the same stage (from the page cache),
    then only counterexamples' walks do. In the JVM's memory, as Spark's deserialized blocks,
    it cost their size estimates and the collector's time: kip320-rf3-e3 on local[2] took
    11.28 and 10.99 s against 10.18 and 10.41 on disk, rf4-min-isr2 39.4 and 37.1 against
    36.8 and 36.6 (alternated). Replicated levels (remote clusters without a checkpoint
    folder) stay in memory too: their second copy is the durability."""
    from pyspark import StorageLevel

    if durability == "replicated":
        level.persist(StorageLevel.MEMORY_AND_DISK_2)
    elif durability != "saved":
        level.persist(StorageLevel.DISK_ONLY)
        if durability == "local":
            level.localCheckpoint()
        else:
            level.checkpoint()


def compute(sc: "SparkContext", watchdog: "Watchdog", level: "RDD", following: "RDD | None", durability: str) -> bool:
    """Compute a kept level, under ``watchdog``: as the map stage of ``following``'s shuffle (its
    expansion, the next level's candidates) when there is one to find, then its checkpoint;
    else by counting its records in the JVM. True when ``following``'s shuffle was written.
    Either way the tasks' summaries come by the engine's accumulator."""
    shuffle = shuffle_dependency(following) if following is not None else None
    if shuffle is None:
        watchdog.run(level._jrdd.count)
        return False
    watchdog.run(partial(run_map_stage, sc, shuffle))
    if durability != "replicated":
        watchdog.run(partial(checkpoint, level))
    return True


def shuffle_dependency(rdd: "RDD") -> Any | None:
    """The JVM ``ShuffleDependency`` that a PySpark ``partitionBy`` RDD reads, or None.

    PySpark's ``partitionBy`` is ``valueOfPair(pairs.partitionBy(partitioner))``: one
    narrow step over a ``ShuffledRDD``, whose only dependency is the shuffle."""
    try:
        shuffled = rdd._jrdd.rdd().dependencies().head().rdd()
        dependency = shuffled.dependencies().head()
        if dependency.getClass().getSimpleName() == "ShuffleDependency":
            return dependency
    except Exception:  # noqa: BLE001 - any other shape of PySpark: count the level instead
        pass
    return None


def run_map_stage(sc: "SparkContext", dependency: Any) -> None:
    """Write ``dependency``'s shuffle (and whatever its map side caches), in the calling
    thread's job group, so that cancelling the group stops it as it stops a job."""
    sc._jsc.sc().submitMapStage(dependency).get()


def checkpoint(rdd: "RDD") -> None:
    """Do the checkpoint ``rdd`` is marked for, after a map stage computed it: a local
    checkpoint of cached partitions costs nothing; a reliable one writes them (a job)."""
    rdd._jrdd.rdd().doCheckpoint()
