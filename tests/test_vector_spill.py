"""The vector search out of core: its disk structures against in-memory references, and
whole searches on disk against the same searches in memory (every count, every level's
parents and actions, every trace), under a forced spill and under a real --max-memory."""

from __future__ import annotations

import numpy as np
import pytest

from isrcheck.checker import CheckOptions, bfs_vector, vector_memory
from isrcheck.checker.bfs_vector import VectorSearch
from isrcheck.checker.engine import Limits
from isrcheck.checker.vector_spill import DISK_BLOCK, DiskRun, FrontierFile, file_blocks, merged_sorted
from isrcheck.checker.vector_store import VisitedSet
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.kernel import kernel_for
from isrcheck.properties import select
from isrcheck.traces import itf, replay

from .clitools import run_json


def distinct_sorted(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.unique(rng.integers(0, 1 << 40, n, dtype=np.int64).astype(np.uint64))


def test_the_disk_run_holds_the_union_of_what_it_absorbed_and_finds_exactly_it(tmp_path):
    rng = np.random.default_rng(3)
    run, reference = DiskRun(tmp_path), np.empty(0, dtype=np.uint64)
    for size in (5, 3 * DISK_BLOCK + 11, 1, DISK_BLOCK):
        new = np.setdiff1d(distinct_sorted(rng, size), reference)
        run.absorb(new[lo : lo + 1000] for lo in range(0, len(new), 1000))  # many small blocks
        reference = np.union1d(reference, new)
        assert run.n == len(reference) and len(list(tmp_path.iterdir())) == 1  # the old file is gone
        on_disk = np.concatenate(list(file_blocks(run.path, np.uint64, 4096)))
        assert (on_disk == reference).all()
        assert (run.firsts == reference[::DISK_BLOCK]).all()
        assert run.smallest_gap() == int(np.diff(reference).min())
    probe = np.union1d(reference[::7], distinct_sorted(rng, 5000))
    probe = np.union1d(probe, np.array([0, reference[0] - 1, reference[-1] + 1], dtype=np.uint64))
    assert (run.absent(probe) == ~np.isin(probe, reference)).all()


def test_merged_sorted_is_the_sorted_union_and_never_splits_equal_keys():
    rng = np.random.default_rng(4)
    arrays = [np.unique(rng.integers(0, 2000, rng.integers(0, 1500))) for _ in range(6)]  # each distinct
    sources = [iter(np.array_split(a, rng.integers(1, 9))) for a in arrays]  # empty blocks included
    blocks = list(merged_sorted(sources))
    assert (np.concatenate(blocks) == np.sort(np.concatenate(arrays))).all()
    for left, right in zip(blocks, blocks[1:]):
        assert left[-1] < right[0]  # a key's copies from every source come out together


def test_a_frontier_file_reads_column_ranges_like_the_array(tmp_path):
    keys = np.arange(30, dtype=np.uint64).reshape(3, 10)
    frontier = FrontierFile(tmp_path / "queue", 3, 10)
    np.ascontiguousarray(keys.T).tofile(frontier.path)
    assert frontier.shape == (3, 10)
    for lo, hi in ((0, 10), (3, 7), (8, 20), (10, 12)):
        assert (frontier[:, lo:hi] == keys[:, lo:hi]).all()
    frontier.remove()
    assert not frontier.path.exists()


def test_a_visited_set_spilled_to_disk_keeps_its_gap_and_answers_from_disk(tmp_path):
    rng = np.random.default_rng(5)
    values = distinct_sorted(rng, 3000)
    visited = VisitedSet()
    visited.add(values, np.zeros(len(values), dtype=np.int64))
    assert visited.spill(tmp_path) and visited.n == 0 and visited.disk.n == len(values)
    probe = distinct_sorted(rng, 500)
    assert (visited.unseen_on_disk(probe) == ~np.isin(probe, values)).all()
    more = np.setdiff1d(distinct_sorted(rng, 100), values)
    visited.add(more, np.searchsorted(visited.values, more))
    assert visited.smallest_gap() == int(np.diff(np.union1d(values, more)).min())  # spills the rest first
    assert visited.disk.n == len(values) + len(more) and visited.n == 0


RF3 = ModelConfig(rf=3, max_records=1, acks="1", kafka_version="3.9")
CONFIGS = {  # exact one-word keys, with and without symmetry; fingerprinted two-word keys (rf 4 on 4.1)
    "rf3-symmetry": (RF3, {"symmetry": True}),
    "rf3": (RF3, {"symmetry": False, "max_depth": 16}),
    "rf4-4.1-symmetry": (ModelConfig(rf=4, min_isr=2, max_records=1), {"symmetry": True, "max_depth": 12}),
}


def searched(config: ModelConfig, options: dict, **kw):
    model = ReplicationModel(config)
    search = VectorSearch(model, kernel_for(model), select(config), CheckOptions(explore_all=True, **options),
                          chunk=2048, **kw)
    return search, search.run()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_out_of_core_stores_the_same_levels_and_finds_the_same_traces_as_in_memory(name, monkeypatch):
    config, options = CONFIGS[name]
    memory, expected = searched(config, options)
    monkeypatch.setattr(vector_memory, "MERGE_BUDGET", 1 << 18)  # many runs, many merge steps per level
    disk, got = searched(config, options, out_of_core=True, workers=2)
    assert got.stats.on_disk == got.stats.states > 10_000 and expected.stats.on_disk == 0
    for field in ("states", "generated", "depth", "full_states", "queue"):
        assert getattr(got.stats, field) == getattr(expected.stats, field), field
    assert got.search_note == expected.search_note and name.startswith("rf4") == bool(got.search_note)
    assert [(p.name, p.status, p.path) for p in got.properties] == [(p.name, p.status, p.path) for p in expected.properties]
    assert any(p.path is not None and len(p.path) > 5 for p in got.properties)
    for a, b in zip([*disk.parents, *disk.actions], [*memory.parents, *memory.actions]):
        assert np.array_equal(a, b)


def test_a_search_goes_out_of_core_when_the_next_level_would_not_fit(monkeypatch):
    """The decision itself, with the room left made small: no limit is actually reached."""
    config, options = CONFIGS["rf3-symmetry"]
    _, expected = searched(config, options)
    monkeypatch.setattr(Limits, "memory_room", lambda self: 1 << 20)
    search, got = searched(config, {**options, "max_memory": 1 << 40})
    assert search.spill_dir is not None and 0 < got.stats.on_disk == got.stats.states == expected.stats.states
    assert got.complete and got.stats.generated == expected.stats.generated


def test_max_memory_below_what_the_levels_need_sends_the_main_job_out_of_core(tmp_path):
    """3.9's main job peaks at 110 to 135 MiB in memory (102 under 125M, its chunks shrunk);
    out of core it finishes within 90 (77 MiB, measured)."""
    code, report = run_json("--rf", "3", "--min-isr", "2", "--kafka-version", "3.9", "--max-memory", "90M",
                            "--trace-dir", str(tmp_path))
    assert code == 0 and report["complete"] and report["exhausted"]
    assert (report["states"], report["generated"], report["depth"]) == (1_911_631, 4_721_408, 31)
    assert report["visited_on_disk"] == report["states"] and report["peak_memory_bytes"] < 90 * 2**20
    saved = [p for p in report["properties"] if p["trace_file"]]
    assert saved
    for p in saved:
        trace = itf.load(p["trace_file"])
        replay(trace)
        assert len(trace.steps) == p["trace_length"]


def test_a_full_disk_out_of_core_stops_the_search_cleanly_with_what_it_stored(monkeypatch):
    config, options = CONFIGS["rf3-symmetry"]
    calls = {"n": 0}
    real_add = bfs_vector.LevelRuns.add

    def add(self, new):
        calls["n"] += 1
        if calls["n"] > 40:
            raise OSError(28, "No space left on device")
        real_add(self, new)

    monkeypatch.setattr(bfs_vector.LevelRuns, "add", add)
    search, got = searched(config, options, out_of_core=True)
    assert not got.complete and got.stop_reason == "out-of-core files not written (No space left on device)"
    assert 0 < got.stats.states == sum(len(p) for p in search.parents) and got.stats.queue > 0


@pytest.mark.parametrize("symmetry", [True, False])
def test_a_level_smaller_than_a_chunk_is_split_between_threads_only_under_symmetry(symmetry):
    """Two threads on halves of a small level pay only where canonical forms make a state's
    expansion heavy; without symmetry they slowed kip320-rf3 down (bench/README)."""
    model = ReplicationModel(RF3)
    search = VectorSearch(model, kernel_for(model), select(RF3), CheckOptions(symmetry=symmetry), workers=2)
    limits = Limits(CheckOptions(symmetry=symmetry), 0.0)
    for size, split in ((40_000, 20_000), (vector_memory.SPLIT_MIN, vector_memory.SPLIT_MIN), (5, vector_memory.SPLIT_MIN)):
        search.frontier = np.zeros((search.kernel.words, size), dtype=np.uint64)
        search._fit_chunk(limits.memory_room())
        assert search.chunk == (split if symmetry else vector_memory.CHUNK)
    search.frontier = np.zeros((search.kernel.words, 3 * vector_memory.CHUNK), dtype=np.uint64)
    search._fit_chunk(limits.memory_room())
    assert search.chunk == vector_memory.CHUNK  # a big level makes chunks of its own either way
