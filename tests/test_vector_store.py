"""The vector search's per-state storage: the visited set merged in place, the level log on disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from isrcheck.checker import CheckOptions
from isrcheck.checker.bfs_vector import VectorSearch
from isrcheck.checker.vector_arrays import NO_PRIO, LevelParts, New, held_bytes, merged, radix_argsort
from isrcheck.checker.vector_store import MERGE_BLOCK, ChunkedFrontier, LevelLog, VisitedSet
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.kernel import kernel_for


def test_in_place_merges_give_the_sorted_union_across_blocks_and_growth():
    rng = np.random.default_rng(7)
    visited, reference = VisitedSet(), np.empty(0, dtype=np.uint64)
    for size in (0, 5, 3 * MERGE_BLOCK, 1000, MERGE_BLOCK + 17, 1):
        fresh = np.sort(rng.integers(0, 1 << 62, size, dtype=np.int64).astype(np.uint64))  # distinct: 62 random bits
        visited.add(fresh, np.searchsorted(visited.values, fresh))
        reference = np.sort(np.concatenate([reference, fresh]))
        assert visited.n == len(reference) and (visited.values == reference).all()
        assert visited.nbytes <= 8 * max(len(reference), 1) * 1.125 + 8  # at most an eighth unused
    assert visited.smallest_gap() == int(np.diff(reference).min())
    low = np.array([0, 1], dtype=np.uint64)  # before every value: everything moves
    visited.add(low, np.searchsorted(visited.values, low))
    assert (visited.values == np.concatenate([low, reference])).all()


def test_the_smallest_gap_of_a_small_set():
    visited = VisitedSet()
    visited.add(np.arange(10, dtype=np.uint64)[::2], np.zeros(5, dtype=np.int64))
    visited.add(np.array([1], dtype=np.uint64), np.array([1]))
    assert visited.values.tolist() == [0, 1, 2, 4, 6, 8]
    assert visited.smallest_gap() == 1 and VisitedSet().smallest_gap() == 0


def test_the_level_log_reads_back_what_it_wrote_and_keeps_levels_in_memory_when_it_cannot_write():
    log = LevelLog(on_disk=True)
    log.append(np.array([0, 0, 1], dtype=np.uint32), np.array([3, 4, 5], dtype=np.uint8))
    assert isinstance(log.parents[0], np.memmap) and log.parents[0].tolist() == [0, 0, 1]
    log.folder.cleanup()  # the folder is gone: the next level stays in memory
    log.append(np.array([2], dtype=np.uint32), np.array([7], dtype=np.uint8))
    assert not isinstance(log.parents[1], np.memmap) and log.actions[1].tolist() == [7]
    assert (len(log), log.states) == (2, 4)
    memory = LevelLog(on_disk=False)
    memory.append(np.array([9], dtype=np.uint32), np.array([1], dtype=np.uint8))
    assert memory.folder is None and memory.parents[0].tolist() == [9]


def test_a_level_saved_in_a_checkpoint_is_read_from_there_and_its_own_files_go(tmp_path):
    log = LevelLog(on_disk=False)  # a checkpointed search's: in memory until saved
    log.append(np.array([0, 1], dtype=np.uint32), np.array([5, 6], dtype=np.uint8))
    for kind, values in (("parents", np.array([1, 0, 1], dtype=np.uint32)), ("actions", np.array([7, 8, 9], dtype=np.uint8))):
        values.tofile(tmp_path / kind)
    log.adopt(tmp_path / "parents", tmp_path / "actions", 3, np.dtype(np.uint8))  # a level out of core
    assert sorted(p.name for p in Path(log.folder.name).iterdir()) == ["actions-00001", "parents-00001"]
    words = 2
    for depth, parents, actions in ((0, [0, 1], [5, 6]), (1, [1, 0, 1], [7, 8, 9])):  # the level file's layout
        level = tmp_path / f"level-{depth}.bin"
        level.write_bytes(np.arange(words * len(parents), dtype=np.uint64).tobytes()
                          + np.array(parents, dtype=np.uint32).tobytes() + np.array(actions, dtype=np.uint8).tobytes())
        log.saved(depth, level, words, np.dtype(np.uint8))
        assert (log.parents[depth].tolist(), log.actions[depth].tolist()) == (parents, actions)
        assert str(log.parents[depth].filename) == str(level)
    assert not list(Path(log.folder.name).iterdir()), "the adopted level's files went once it was saved"


def test_locate_through_the_sample_agrees_with_searchsorted(monkeypatch):
    import isrcheck.checker.vector_store as store

    rng = np.random.default_rng(3)
    values = np.unique(rng.integers(10, 1 << 40, 5000, dtype=np.int64)).astype(np.uint64)
    monkeypatch.setattr(store, "SAMPLED_FROM", 1)  # sample sets of any size
    for size in (1, 2, 63, 64, 65, 130, len(values)):
        visited = VisitedSet()
        visited.add(values[:size], np.zeros(size, dtype=np.int64))
        assert visited._sample is not None
        hits = rng.choice(values[:size], 300)
        misses = rng.integers(0, 1 << 41, 300, dtype=np.int64).astype(np.uint64)
        edges = np.array([0, values[0], values[size - 1], values[size - 1] + 1, (1 << 64) - 1], dtype=np.uint64)
        fp = np.unique(np.concatenate([hits, misses, edges]))
        pos, fresh = visited.locate(fp)
        assert (pos == np.searchsorted(values[:size], fp)).all()
        assert (fresh == ~np.isin(fp, values[:size])).all()
    visited.add(np.array([1], dtype=np.uint64), np.array([0]))  # the sample follows the set
    assert visited._sample[0] == 1 and visited.locate(np.array([1], dtype=np.uint64))[1].tolist() == [False]
    assert VisitedSet().locate(np.array([5], dtype=np.uint64))[0].tolist() == [0]


def _part(rng, fps: np.ndarray, exact: bool, pending: int) -> New:
    """A chunk's new states as ``_new_states`` leaves them: distinct, sorted fingerprints."""
    fp = np.unique(fps)
    prio = rng.integers(0, 1 << 40, len(fp))
    keys = fp[None, :] if exact else np.stack([fp ^ 5, fp * 3])
    deciding = np.array([prio[fp % 7 == i].min() if (fp % 7 == i).any() else NO_PRIO for i in range(pending)],
                        dtype=np.int64)
    return New(fp, fp.astype(np.int64) * 2, prio, keys, deciding, (fp % 5 + 1).astype(np.uint32))


def test_a_levels_merge_keeps_each_state_once_with_its_first_discovery():
    """``merged`` against the same level built whole: duplicates across chunks, empty chunks,
    one-word (exact) and two-word keys; each field follows its state, the least priority
    wins, and a property's first deciding priority is the least of the chunks'."""
    rng = np.random.default_rng(11)
    for exact in (True, False):
        pool = rng.integers(0, 1 << 20, 3000).astype(np.uint64)
        parts = [_part(rng, rng.choice(pool, size), exact, 3) for size in (500, 0, 2000, 1, 800)]
        fp = np.concatenate([p.fp for p in parts])
        prio = np.concatenate([p.prio for p in parts])
        best = {}
        for f, p in zip(fp.tolist(), prio.tolist()):
            best[f] = min(best.get(f, p), p)
        deciding = np.minimum.reduce([p.deciding for p in parts])
        got = merged(list(parts), exact)
        assert got.fp.tolist() == sorted(best) and got.prio.tolist() == [best[f] for f in sorted(best)]
        assert (got.pos == got.fp.astype(np.int64) * 2).all() and (got.orbits == got.fp % 5 + 1).all()
        assert (got.keys == (got.fp[None, :] if exact else np.stack([got.fp ^ 5, got.fp * 3]))).all()
        assert (got.deciding == deciding).all() and (deciding < NO_PRIO).all()
        own = [got.fp, got.pos, got.prio, got.deciding, got.orbits] + ([] if exact else [got.keys])
        assert held_bytes(got) == sum(a.nbytes for a in own)  # a view of the fingerprints counted once
        for i in range(3):  # the least priority among the deciding states of the merged level
            assert got.deciding[i] == got.prio[got.fp % 7 == i].min()
    empty = merged([_part(rng, np.empty(0, dtype=np.uint64), True, 2) for _ in range(2)], True)
    assert len(empty.fp) == len(empty.prio) == empty.keys.shape[1] == 0 and (empty.deciding == NO_PRIO).all()


def test_a_level_merged_as_its_chunks_come_is_the_level_merged_at_once():
    """``LevelParts`` merges pairs of parts as they come (a binary counter); the level it gives
    is field for field the one ``merged`` makes of every part at once, for any number of
    chunks, and it holds fewer entries than the chunks found where they overlap."""
    rng = np.random.default_rng(5)
    for exact in (True, False):
        for chunks in (1, 2, 3, 7, 12):
            pool = rng.integers(0, 1 << 20, 2000).astype(np.uint64)
            parts = [_part(rng, rng.choice(pool, int(rng.integers(0, 600))), exact, 3) for _ in range(chunks)]
            whole = merged(list(parts), exact)
            level = LevelParts(exact)
            for part in parts:
                level.add(part)
                assert len(level.parts) == bin(sum(level.chunks)).count("1")  # a part per binary digit
            found = sum(len(p.fp) for p in parts)
            assert level.entries < found if chunks > 1 else level.entries == found  # overlaps merged away
            got = level.merged()
            for name, want in whole._asdict().items():
                assert np.array_equal(getattr(got, name), want), (exact, chunks, name)
            assert not level.parts


def test_a_chunked_frontier_gives_each_chunk_its_columns_once():
    """The frontier's keys and storage rows as the chunks take them, the last chunk short; a
    frontier of one chunk is not copied; the shape stays what the progress and stops read."""
    keys = np.arange(2 * 10, dtype=np.uint64).reshape(2, 10)
    rows = np.arange(10, dtype=np.uint32)[::-1].copy()
    frontier = ChunkedFrontier(keys, rows, 4)
    for start in (8, 0, 4):  # threads take chunks in any order
        k, r = frontier.take(start)
        assert (k == keys[:, start : start + 4]).all() and (r == rows[start : start + 4]).all()
        assert not np.may_share_memory(k, keys)  # each chunk's columns go alone
    with pytest.raises(KeyError):
        frontier.take(0)
    assert frontier.shape == (2, 10)
    whole = ChunkedFrontier(keys, rows, 10).take(0)
    assert whole[0] is keys and whole[1] is rows


def test_the_radix_argsort_is_numpys_stable_argsort():
    """Fingerprints over the whole 64 bits, priorities of a few digits, many ties, none at all."""
    rng = np.random.default_rng(7)
    cases = [
        rng.integers(0, 2**64 - 1, 50_000, dtype=np.uint64),
        rng.integers(0, 2**64 - 1, 500, dtype=np.uint64).repeat(9),  # ties keep their order
        rng.integers(0, 3 << 33, 40_000, dtype=np.int64),
        rng.integers(0, 2**16, 1_000, dtype=np.int64),
        np.zeros(10, dtype=np.uint64),
        np.empty(0, dtype=np.uint64),
    ]
    for values in cases:
        assert (radix_argsort(values) == np.argsort(values, kind="stable")).all()


@pytest.mark.parametrize("config", [ModelConfig(rf=3, min_isr=2, max_records=1, kafka_version="3.9"),
                                    ModelConfig(rf=4, min_isr=2, max_records=1, max_leader_epoch=1)],
                         ids=["exact", "hashed"])
def test_exact_keys_are_expanded_in_key_order_and_hashed_ones_in_storage_order(config, monkeypatch):
    """Key order gives exact keys' successors in sorted runs; hashed keys have none, and in
    storage order a state's children share a chunk, so that the states two of them reach are
    found once, not once in each of two chunks (here, chunks of 2,048 states: 1.97 chunk entries
    a stored state in fingerprint order, 1.12 in storage order, measured)."""
    model = ReplicationModel(config)
    kernel = kernel_for(model)
    frontiers, entries = [], []
    real_frontier, real_add = ChunkedFrontier.__init__, LevelParts.add
    monkeypatch.setattr(ChunkedFrontier, "__init__", lambda self, keys, rows, chunk: frontiers.append(
        (keys.copy(), rows.copy())) or real_frontier(self, keys, rows, chunk))
    monkeypatch.setattr(LevelParts, "add", lambda self, part: entries.append(len(part.fp)) or real_add(self, part))
    search = VectorSearch(model, kernel, [], CheckOptions(explore_all=True, symmetry=True, max_depth=16),
                          chunk=2048, keep_levels=True, workers=1)
    result = search.run()
    assert result.stats.states > 20_000 and len(frontiers) > 10
    for (keys, rows), stored in zip(frontiers, search.keys):
        assert (keys[:, np.argsort(rows)] == stored).all()  # rows: each key's place in storage order
        if kernel.exact:
            assert (keys[0][1:] > keys[0][:-1]).all()
        else:
            assert (rows == np.arange(len(rows))).all()
    if not kernel.exact:
        assert sum(entries) < 1.25 * result.stats.states
