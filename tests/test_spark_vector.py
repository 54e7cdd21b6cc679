"""The Spark engine on the vector kernel: its executor tasks without a JVM, then local mode
against Spark on the scalar kernel and against BFS."""

from __future__ import annotations

import pickle
import random
from functools import partial
import subprocess
import sys

import pytest

from isrcheck.checker import spark_tasks, spark_vector
from isrcheck.model import ModelConfig, ReplicationModel, fingerprint
from isrcheck.model.kernel import ints_of_keys, kernel_for, keys_of_ints
from isrcheck.properties import BY_NAME

from .conftest import run_bfs
from .sparktools import (
    CORE_RF2, assert_agrees_with_bfs, assert_paths_reach_their_verdicts, counts, run_spark, verdicts,
)

# -- keys and partitions: plain NumPy ----------------------------------------------------------


@pytest.mark.parametrize("words", [1, 2, 3])
def test_partitions_of_keys_are_the_fingerprint_partitions_of_their_integers(words):
    rng = random.Random(words)
    ints = [rng.getrandbits(64 * words) for _ in range(500)]
    ints += [rng.getrandbits(64) for _ in range(100)] + [0, 1, (1 << 64) - 1, 1 << 64, (1 << (64 * words)) - 1]
    ints = [k & ((1 << (64 * words)) - 1) for k in ints]
    keys = keys_of_ints(ints, words)
    assert ints_of_keys(keys) == ints
    for n in (1, 3, 7):
        assert spark_vector.partitions_of(keys, n).tolist() == [fingerprint(k) % n for k in ints]


def test_the_scalar_tasks_do_not_import_numpy():
    script = "import sys, isrcheck.checker.spark_tasks; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the executor tasks, without Spark: both representations reach the same levels --------------


def simulate(job: spark_tasks.Job, seeds: list, levels: int, folder: str = "") -> list[tuple[spark_tasks.Summary, dict]]:
    """The engine's levels computed in this process: per level, the merged summary and {state: parent}.
    ``folder``: the visited set in files there (``spark_visited``), not in the anti-joins' input."""
    n = job.partitions
    words = seeds[0][1][1].shape[0] if job.vector else 1  # a seed record: (partition, ("C", keys, parents))
    first = partial(spark_vector.before, words) if job.vector else int.__lt__
    visited: dict[int, list] = {q: [] for q in range(n)}
    candidates: dict[int, list] = {q: [] for q in range(n)}
    for q, payload in seeds:
        candidates[q].append((q, payload))
    out = []
    pending = job.pending
    tasks = spark_vector if job.vector else spark_tasks  # as the engine picks them
    for depth in range(1, levels + 1):
        level_job = spark_tasks.Job(job.protocol, job.config, job.symmetry, n, pending, job.vector, folder, depth)
        new, summaries = {}, []
        for q in range(n):
            records = list(tasks.anti_join(level_job, q, iter(candidates[q] + ([] if folder else visited[q]))))
            visited[q].extend(records)
            summaries += [r[1][3] for r in records if r[1][3] is not None]
            for _, payload in records:
                keys = payload[1]
                if job.vector:
                    new.update(zip(ints_of_keys(keys), ints_of_keys(payload[2])))
                else:
                    new.update(zip(keys, pickle.loads(payload[2])))
        found: dict[str, int] = {}
        for s in summaries:
            for name, state in s.found.items():  # the first in the levels' order, as the driver keeps
                if name not in found or first(state, found[name]):
                    found[name] = state
        total = spark_tasks.Summary(sum(s.new for s in summaries), sum(s.generated for s in summaries), found,
                                    sum(s.full_states for s in summaries))
        out.append((total, new))
        pending = tuple(p for p in pending if p not in found)
        candidates = {q: [] for q in range(n)}
        for q in range(n):
            for record in tasks.expand(level_job, q, iter(_last_level(visited[q]))):
                candidates[record[0]].append(record)
    return out


def _last_level(records: list) -> list:
    """The records of the partition's last level: from its last summary-carrying record on."""
    last = max(i for i, r in enumerate(records) if r[1][3] is not None)
    return records[last:]


@pytest.mark.parametrize("symmetry", [False, True])
def test_vector_and_scalar_tasks_compute_the_same_levels_for_any_partitioning(symmetry):
    scalar = compare_tasks(CORE_RF2["hw-truncation"], symmetry, 9)
    assert any(s.found for s, _ in scalar)  # hw-truncation violates weak-isr within 9 levels


def test_the_tasks_handle_keys_of_two_words():
    config = ModelConfig(rf=4, protocol="kip-320", core=True)
    assert kernel_for(ReplicationModel(config)).words == 2
    assert compare_tasks(config, False, 5)[-1][0].new > 0


@pytest.mark.parametrize("rf, symmetry", [(2, False), (4, True)])
def test_the_tasks_reach_the_same_levels_with_the_visited_set_in_files(rf, symmetry, tmp_path, monkeypatch):
    """``spark_visited``: each anti-join reads the earlier levels from its partition's files and
    writes its own, instead of reading them in its input, the files merged every three levels
    here; every level is the same."""
    from isrcheck.checker import spark_visited

    monkeypatch.setattr(spark_visited, "MERGE_EVERY", 3)
    config = ModelConfig(rf=rf, protocol="kip-320", core=True)
    kernel = kernel_for(ReplicationModel(config))
    keys = kernel.initial_keys()
    job = spark_tasks.Job("kafka", config, symmetry, 3, ("weak-isr", "strong-isr"), vector=True)
    seeds = spark_vector.seed_records(kernel.canonical(keys) if symmetry else keys, 3)
    in_input = simulate(job, seeds, 7)
    assert simulate(job, seeds, 7, str(tmp_path)) == in_input
    names = {p.name for p in (tmp_path / "0").iterdir()}
    assert names == {f"{d}.npy" for d in range(1, 8)} | {"merged-6.npy"}  # the last merged file only


@pytest.mark.parametrize("master, here", [
    ("local[2]", True), ("spark://127.0.0.1:7077", True), ("spark://localhost:7077", True),
    ("spark://10.0.0.5:7077", False), ("spark://a:1,127.0.0.1:2", False), ("yarn", False),
])
def test_visited_files_only_where_every_executor_is_surely_on_this_machine(master, here):
    """A master at this host's name or address may have workers elsewhere: those read the union."""
    import shutil

    from isrcheck.checker.spark_context import visited_folder

    folder = visited_folder(master)
    assert bool(folder) == here
    if folder:
        shutil.rmtree(folder)


def test_each_partition_reports_its_summary_once_even_when_its_task_runs_twice():
    """The driver reads a level's summaries from an accumulator (the job counts the level's
    records in the JVM): a task that runs again replaces its partition's summary."""

    class Accumulator:  # pyspark's, on one machine: updates merged by the param
        def __init__(self):
            self.param, self.value = spark_tasks.SummariesParam(), {}

        def add(self, update):
            self.value = self.param.addInPlace(self.value, update)

    first, again = spark_tasks.Summary(3, 7, {}, 0), spark_tasks.Summary(3, 7, {}, 0)
    records = {0: [(0, ("V", [1], b"", first)), (0, ("V", [2], b"", None))], 1: [(1, ("V", [], b"", again))]}
    acc = Accumulator()
    for index in (0, 1, 0):
        out = list(spark_tasks.reporting(acc, lambda i, _: iter(records[i]), index, iter(())))
        assert out == records[index]
    assert acc.value == {0: first, 1: again} and acc.param.zero({5: first}) == {}


def test_a_missing_level_file_is_an_error_and_a_level_written_twice_is_the_same(tmp_path):
    """A partition's files are its visited set: a missing one must stop the search, never count
    as an empty level; a task that runs again rewrites its level whole."""
    from isrcheck.checker import spark_visited

    keys = keys_of_ints([3, 5, 9], 2)
    spark_visited.save(str(tmp_path), 1, 1, keys)
    spark_visited.save(str(tmp_path), 1, 1, keys)
    [(run, order)] = spark_visited.runs(str(tmp_path), 1, 2)
    assert ints_of_keys(run) == [3, 5, 9] and list(tmp_path.glob("*/*.tmp")) == []
    with pytest.raises(FileNotFoundError, match="1/2.npy"):
        list(spark_visited.runs(str(tmp_path), 1, 3))


def compare_tasks(config: ModelConfig, symmetry: bool, levels: int) -> list:
    """The levels of both representations, on 1 and 3 partitions, are the same (as scalar states)."""
    model = ReplicationModel(config)
    kernel = kernel_for(model)
    canon = model.symmetry.canonical if symmetry else (lambda s: s)
    pending = ("weak-isr", "strong-isr", "leader-in-isr")
    inits = sorted({canon(s) for s in model.init_states()})
    scalar = simulate(spark_tasks.Job("kafka", config, symmetry, 3, pending), spark_tasks.seed_records(inits, 3), levels)
    keys = kernel.initial_keys()
    for n in (1, 3):
        seeds = spark_vector.seed_records(kernel.canonical(keys) if symmetry else keys, n)
        vector = simulate(spark_tasks.Job("kafka", config, symmetry, n, pending, vector=True), seeds, levels)
        for depth, ((s_sum, s_new), (v_sum, v_new)) in enumerate(zip(scalar, vector), start=1):
            assert (v_sum.new, v_sum.generated, v_sum.full_states) == (s_sum.new, s_sum.generated, s_sum.full_states)
            assert set(v_sum.found) == set(s_sum.found), depth
            as_scalar = {t: kernel.scalar_of_key(t) for t in v_new}
            assert {canon(t) for t in as_scalar.values()} == set(s_new)
            for name, key in v_sum.found.items():  # the level's first deciding key, in the levels' order
                deciding = [k for k in v_new if _decides(model, name, as_scalar[k])]
                assert all(not spark_vector.before(kernel.words, k, key) for k in deciding) and key in deciding
            if depth > 1:  # each parent is a state of the level before with this successor
                before = vector[depth - 2][1]
                for t, p in v_new.items():
                    assert p in before
                    succ = {kernel.canonical_of_scalar(u) if symmetry else kernel.key_of_scalar(u)
                            for _, u in model.successors(kernel.scalar_of_key(p))}
                    assert t in succ
    return scalar


def _decides(model, name, state) -> bool:
    prop = BY_NAME[name]
    return prop.compile(model)(state) != (prop.expectation == "always")


# -- local mode: the vector kernel, the scalar one and BFS agree -----------------------------------


@pytest.fixture(scope="module")
def local_spark():
    from pyspark import SparkContext

    from isrcheck.checker import spark_context

    spark_context.spark_context("local[*]")
    yield
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()


def spark_test(test):
    return pytest.mark.spark(pytest.mark.usefixtures("local_spark")(test))


AGREE = [  # exhaustive runs: about 0.5 s of Spark scheduling per level each, on a loaded 2-core machine
    ("kip-320 rf 2 symmetry", ModelConfig(rf=2, protocol="kip-320", core=True), True),
    ("kip-101 rf 2 symmetry", CORE_RF2["kip-101"], True),
]


@spark_test
@pytest.mark.parametrize("config,symmetry", [a[1:] for a in AGREE], ids=[a[0] for a in AGREE])
def test_spark_on_either_kernel_finds_the_bfs_states_depth_verdicts_and_trace_lengths(config, symmetry):
    vector = run_spark(config, partitions=3, explore_all=True, symmetry=symmetry)
    scalar = run_spark(config, partitions=2, kernel="scalar", explore_all=True, symmetry=symmetry)
    assert (vector.kernel, vector.kernel_note, scalar.kernel, scalar.kernel_note) == ("vector", "", "scalar", "")
    assert counts(vector) == counts(scalar) and verdicts(vector) == verdicts(scalar)
    assert_agrees_with_bfs(config, vector, explore_all=True, symmetry=symmetry)


@spark_test
def test_a_violation_found_on_the_vector_kernel_has_the_bfs_length_and_replays_on_the_model():
    """Both Spark runs stop at the end of the deciding level (BFS inside it: its count can be lower)."""
    config, props = CORE_RF2["hw-truncation"], ["weak-isr", "strong-isr"]
    vector = run_spark(config, props, partitions=3)
    scalar = run_spark(config, props, partitions=2, kernel="scalar")
    bfs = run_bfs(config, props, symmetry=False)
    assert [p.status for p in vector.properties] == ["violated", "violated"]
    assert counts(vector) == counts(scalar)
    assert verdicts(vector) == verdicts(scalar) == verdicts(bfs)
    assert vector.stats.depth == bfs.stats.depth
    assert_paths_reach_their_verdicts(config, vector)


@spark_test
def test_keys_of_two_words_give_the_bfs_result_and_the_same_traces_on_any_partitioning():
    """rf 4 keys are two words: levels are sorted and searched by their order values
    (``spark_order``), and the deciding states and parents chosen in that order."""
    config = ModelConfig(rf=4, protocol="hw-truncation", core=True)
    assert kernel_for(ReplicationModel(config)).words == 2
    runs = [run_spark(config, partitions=n, max_depth=10, explore_all=True, symmetry=True) for n in (2, 3)]
    assert [r.kernel for r in runs] == ["vector", "vector"]
    assert [p.status for p in runs[0].properties][:2] == ["violated", "violated"]  # at depth 10
    assert [p.path for p in runs[0].properties] == [p.path for p in runs[1].properties]
    assert_agrees_with_bfs(config, runs[0], max_depth=10, explore_all=True, symmetry=True)


@spark_test
def test_the_visited_set_in_files_or_read_with_the_candidates_gives_one_search(monkeypatch):
    """Executors on this machine keep the visited set in files (``spark_visited``); elsewhere the
    anti-joins read the cached levels: both give the same counts, verdicts and traces."""
    from isrcheck.checker import spark_engine

    config = CORE_RF2["hw-truncation"]
    in_files = run_spark(config, partitions=3, explore_all=True, symmetry=True)
    monkeypatch.setattr(spark_engine._SparkSearch, "setup_visited", lambda self, master: None)
    in_union = run_spark(config, partitions=3, explore_all=True, symmetry=True)
    assert counts(in_files) == counts(in_union) and verdicts(in_files) == verdicts(in_union)
    assert [p.path for p in in_files.properties] == [p.path for p in in_union.properties]
    assert_agrees_with_bfs(config, in_union, explore_all=True, symmetry=True)


@spark_test
def test_where_the_vector_kernel_does_not_apply_spark_runs_scalar_and_says_why():
    result = run_spark(ModelConfig(rf=6, core=True), partitions=2, max_depth=3)
    assert result.kernel == "scalar" and "MiB" in result.kernel_note  # the table of request sequences


def test_check_model_passes_kernel_to_the_spark_engine_and_refuses_it_for_z3(tmp_path):
    from click.core import ParameterSource

    from isrcheck.cli.check_model import check_run_from, main
    from isrcheck.cli.common import UsageFailure

    def run_of(*args):
        ctx = main.make_context("check-model", ["--core", "--rf", "2", *args, "--trace-dir", str(tmp_path)])
        explicit = {k for k in ctx.params if ctx.get_parameter_source(k) is ParameterSource.COMMANDLINE}
        return check_run_from(ctx.params, explicit)

    assert run_of("--engine", "spark", "--kernel", "scalar").engine_args["kernel"] == "scalar"
    assert run_of("--engine", "spark").engine_args["kernel"] == "vector"
    with pytest.raises(UsageFailure, match="--kernel applies to --engine bfs, spark and simulate, not z3"):
        run_of("--engine", "z3", "--kernel", "scalar")
