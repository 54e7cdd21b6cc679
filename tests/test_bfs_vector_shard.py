"""The vector search on worker processes (``--processes``) agrees with the one-process vector
search: same levels, counts, verdicts, shortest trace lengths and collision estimate; its
traces replay; it stops cleanly; and where it cannot run (checkpoints, the state graph) the
threads run instead, saying so."""

from __future__ import annotations

import numpy as np
import pytest

from isrcheck.checker import BfsEngine, CheckOptions
from isrcheck.checker.bfs_vector import VectorSearch
from isrcheck.checker.bfs_vector_shard import owners
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.model.kernel import VectorKernel
from isrcheck.properties import select
from isrcheck.traces import replay, trace_from_path

from .clitools import run_cli, run_json, summary

KIP279_RF3 = ModelConfig(rf=3, protocol="kip-279", core=True, max_records=1, max_leader_epoch=1)
TWO_WORDS = ModelConfig(rf=4, min_isr=2, max_records=1, max_leader_epoch=1)  # 240,172 states up to symmetry
CASES = [
    (ModelConfig(rf=3, protocol="kip-320", core=True), False),
    (KIP279_RF3, False),
    (KIP279_RF3, True),
    (ModelConfig(rf=3, min_isr=1, acks="1", max_records=1, unclean_election=True), True),
    (TWO_WORDS, True),
]


def both(config, names=None, workers=2, **options):
    model = ReplicationModel(config)
    props = select(config, names)
    opts = CheckOptions(**options)
    one = BfsEngine(kernel="vector", workers=1).check(model, props, opts)
    split = BfsEngine(kernel="vector", workers=workers, processes=True).check(model, props, opts)
    return model, one, split


def verdicts(result):
    return [(p.name, p.status, p.trace_length) for p in result.properties]


@pytest.mark.parametrize("config,symmetry", CASES, ids=lambda x: x.summary()[:60] if hasattr(x, "summary") else f"symmetry={x}")
def test_processes_agree_with_one_process(config, symmetry):
    model, one, split = both(config, explore_all=True, symmetry=symmetry)
    assert split.processes and split.workers == 2 and split.kernel == "vector"
    assert (split.stats.states, split.stats.depth, split.stats.generated) == (
        one.stats.states, one.stats.depth, one.stats.generated)
    assert split.stats.full_states == one.stats.full_states
    assert verdicts(split) == verdicts(one)
    assert split.search_note == one.search_note  # the collision estimate over every worker's fingerprints
    assert split.complete and split.exhausted
    for p in split.properties:
        if p.path is not None:
            replay(trace_from_path(model, p.path.states, p.path.actions))


def test_three_workers_and_a_violation_found_across_them():
    model, one, split = both(ModelConfig(rf=2, acks="1", max_records=1), workers=3, explore_all=True, symmetry=True)
    assert split.workers == 3 and (split.stats.states, split.stats.depth) == (one.stats.states, one.stats.depth)
    assert verdicts(split) == verdicts(one)
    assert ("acked-survive", "violated", 6) in verdicts(split)
    path = split.by_name("acked-survive").path
    replay(trace_from_path(model, path.states, path.actions))


def test_an_early_stop_gives_the_same_verdicts_and_lengths():
    _, one, split = both(ModelConfig(rf=3, protocol="kip-279", core=True), ["weak-isr", "strong-isr"], symmetry=True)
    assert verdicts(split) == verdicts(one) == [("weak-isr", "violated", 11), ("strong-isr", "violated", 11)]
    assert split.complete and not split.exhausted


def test_max_depth_bounds_the_split_search_too():
    _, one, split = both(ModelConfig(rf=2, protocol="hw-truncation", core=True), max_depth=8)
    assert (split.stats.states, split.stats.depth) == (one.stats.states, one.stats.depth) and split.stats.depth == 8
    assert split.stats.queue == one.stats.queue > 0  # the last level's states, not expanded
    assert verdicts(split) == verdicts(one)


def test_a_time_limit_stops_the_workers_with_an_incomplete_result():
    model = ReplicationModel(ModelConfig(rf=4, min_isr=2, max_records=1))  # 17 million states: minutes
    engine = BfsEngine(kernel="vector", workers=2, processes=True)
    result = engine.check(model, select(model.config), CheckOptions(symmetry=True, time_limit=1.0))
    assert not result.complete and result.stop_reason == "time limit"
    assert 0 < result.stats.states < 17_397_330 and result.stats.seconds < 5
    assert 0 < result.stats.queue < result.stats.states  # what was found and not expanded: the report's "still queued"
    assert result.stats.full_states > result.stats.states  # summed level by level: known when stopped too
    assert all(p.status in ("unknown", "holds") for p in result.properties)


def test_the_state_graph_runs_on_threads_and_says_why():
    model = ReplicationModel(ModelConfig(rf=2, protocol="kip-320", core=True))
    result = BfsEngine(kernel="vector", workers=2, processes=True).check(
        model, select(model.config), CheckOptions(keep_graph=True))
    assert not result.processes and result.kernel == "vector" and result.graph is not None
    assert "state graph" in result.kernel_note


@pytest.mark.parametrize("workers", [1, 2])
def test_levels_checked_once_merged_find_what_their_chunks_find(workers, monkeypatch):
    """A worker checks its level's states once merged (``checked_when_stored``: a state two
    workers found reaches its owner twice), one process each chunk's as it comes: the same
    first deciding states, and with it each state stored is checked exactly once. Shown on
    the one-process search, whose calls this process sees."""
    model = ReplicationModel(TWO_WORDS)
    props, options = select(TWO_WORDS), CheckOptions(symmetry=True, explore_all=True, max_depth=14)
    engine = BfsEngine(kernel="vector", workers=workers)
    chunks = engine.check(model, props, options)
    checked: list[int] = []
    real = VectorKernel.evaluate
    monkeypatch.setattr(VectorKernel, "evaluate", lambda self, keys, preds: checked.append(keys.shape[1]) or real(self, keys, preds))
    monkeypatch.setattr(VectorSearch, "checked_when_stored", True)
    merged = engine.check(model, props, options)
    assert any(p.status == "holds" for p in merged.properties)  # pending to the end: every state checked
    assert sum(checked) == merged.stats.states > 10_000
    stats = lambda r: (r.stats.states, r.stats.generated, r.stats.depth, r.stats.full_states)
    assert stats(merged) == stats(chunks)
    assert [(p.name, p.status, p.path) for p in merged.properties] == [(p.name, p.status, p.path) for p in chunks.properties]
    assert any(p.path is not None for p in merged.properties)


def test_owners_spread_fingerprints_of_both_kinds():
    rng = np.random.default_rng(7)
    hashed = rng.integers(0, 2**63, 10_000, dtype=np.uint64) * np.uint64(2)
    keys = np.arange(10_000, dtype=np.uint64) * np.uint64(4096)  # one-word keys: regular, not uniform
    for fp, exact in ((hashed, False), (keys, True)):
        counts = np.bincount(owners(fp, 3, exact).astype(np.int64), minlength=3)
        assert counts.min() > 2_800, counts
    ranges = owners(np.sort(hashed), 3, False)
    assert (np.diff(ranges.astype(np.int64)) >= 0).all()  # hashed: each worker owns a range


def test_the_cli_runs_processes_and_reports_them(tmp_path):
    args = ("--rf", "2", "--acks", "1", "--continue", "--trace-dir", str(tmp_path))
    threads = run_json(*args, "--workers", "2")
    split = run_json(*args, "--workers", "2", "--processes")
    assert threads[0] == split[0] == 1
    assert summary(threads[1]) == summary(split[1])
    assert split[1]["config"]["processes"] is True
    text = run_cli("check-model", *args, "--workers", "2", "--processes")
    assert "(vector kernel, 2 processes)" in text.stdout
    bad = run_cli("check-model", "--engine", "z3", "--processes", "--trace-dir", str(tmp_path))
    assert bad.returncode == 2 and "--processes applies to --engine bfs" in bad.stderr


SUITE = '''\
name = "processes in a suite"
[defaults]
rf = 2
workers = 2
processes = true

[[check]]
name = "acks=1 loses an acknowledged write"
acks = "1"
expect = { acked-survive = "violated-within 6" }

[[check]]
name = "acks=all keeps it"
expect = { acked-survive = "holds" }
'''


def test_a_suite_runs_checks_on_processes_side_by_side(tmp_path):
    """check-suite's checks run in a pool of processes; each may fork its own workers."""
    import subprocess
    import sys
    from pathlib import Path

    from isrcheck.cli.suite import load_suite

    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE)
    assert all(c.run.engine_args["processes"] is True for c in load_suite(suite).checks)
    check_suite = str(Path(sys.executable).with_name("check-suite"))
    result = subprocess.run([check_suite, str(suite), "--jobs", "2"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASS") == 2, result.stdout


def test_a_checkpointed_run_runs_on_threads_and_says_why(tmp_path):
    args = ("--core", "--protocol", "kip-320", "--rf", "2", "--workers", "2", "--processes",
            "--trace-dir", str(tmp_path / "t"), "--checkpoint", str(tmp_path / "ck"))
    code, report = run_json(*args)
    assert code == 0 and report["kernel"] == "vector" and report["workers"] == 2
    assert "checkpoints and the state graph need one process" in report["kernel_note"]
    assert (tmp_path / "ck").is_dir()
    text = run_cli("check-model", *args[:-2], "--checkpoint", str(tmp_path / "ck2"))
    assert "(vector kernel, 2 threads)" in text.stdout
