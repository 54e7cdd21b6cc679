"""--engine spark saves every completed level: killed runs resume to the uninterrupted result.

Interrupted runs are real check-model processes on local[2], killed (SIGKILL) or
stopped (SIGINT) once their checkpoint lists a given number of levels (all three
at once, see ``Interruptions``); resumes
and the uninterrupted run go through check-model in this process, on one shared
local[*] SparkContext (a JVM start costs seconds). Refused checkpoints are
refused before Spark starts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from isrcheck.checker import Observer, checkpoint, spark_checkpoint, spark_context
from isrcheck.cli.check_model import main as check_model

from .clitools import command, run_cli, run_json, summary
from .sparktools import CORE_RF2, assert_agrees_with_bfs, checkpointing, run_spark

pytestmark = pytest.mark.spark

# kip-101 at rf 2, whole space: 4,523 states in 18 levels, both ISR properties violated.
RUN = ["--core", "--protocol", "kip-101", "--rf", "2", "--continue", "--no-progress"]
SPARK = ["--engine", "spark"]
LEVELS = 18


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted result, by BFS (the Spark engine's tests show both engines agree)."""
    code, report = run_json(*RUN, "--trace-dir", str(tmp_path_factory.mktemp("ref")))
    assert code == 1 and report["complete"] and report["depth"] == LEVELS
    return summary(report)


@pytest.fixture(scope="module")
def local_spark():
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    spark_context.spark_context("local[*]")
    yield
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()


def check_here(tmp: Path, *extra: str) -> tuple[int, dict]:
    """check-model --engine spark in this process, on the shared context."""
    args = [*RUN, *SPARK, "--spark-master", "local[*]", "--format", "json", "--trace-dir", str(tmp / "traces")]
    result = CliRunner().invoke(check_model, [*args, *extra])
    assert result.stdout.strip().startswith("{"), result.output
    return result.exit_code, json.loads(result.stdout)


def levels_saved(ck: Path) -> int:
    try:
        return len(json.loads((ck / "manifest.json").read_text())["levels"])
    except FileNotFoundError:
        return 0


class Interruptions:
    """check-model processes signalled once their checkpoint lists so many levels.

    They all run at once, beside this module's own Spark runs: a JVM start is mostly
    waiting, and the test file must stay short on two cores."""

    PLAN = {"early": (2, signal.SIGKILL), "late": (12, signal.SIGKILL), "ctrl-c": (7, signal.SIGINT)}

    def __init__(self, tmp: Path) -> None:
        self.runs = {}
        for name in self.PLAN:
            ck = tmp / name / "ck"
            args = [*RUN, *SPARK, "--spark-master", "local[2]", "--format", "json",
                    "--trace-dir", str(tmp / name / "traces"), "--checkpoint", str(ck)]
            scratch = tmp / name / "tmp"  # what a killed driver leaves (its Python zip, its log) stays here
            scratch.mkdir(parents=True)
            proc = subprocess.Popen([command("check-model"), *args], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=dict(os.environ, TMPDIR=str(scratch)))
            self.runs[name] = (ck, proc)
        self.outputs: dict[str, tuple[str, str]] = {}
        self.thread = threading.Thread(target=self._signal_each_at_its_level, daemon=True)
        self.thread.start()

    def _signal_each_at_its_level(self) -> None:
        waiting = dict(self.PLAN)
        deadline = time.monotonic() + 240
        while waiting and time.monotonic() < deadline:
            for name, (levels, sig) in list(waiting.items()):
                ck, proc = self.runs[name]
                if levels_saved(ck) >= levels:
                    proc.send_signal(sig)
                elif proc.poll() is None:
                    continue  # ended before its level: the test's checks say so
                del waiting[name]
            time.sleep(0.02)
        for ck, proc in self.runs.values():
            if proc.poll() is None and waiting:
                proc.kill()

    def result(self, name: str) -> tuple[Path, subprocess.Popen, str]:
        self.thread.join()
        ck, proc = self.runs[name]
        if name not in self.outputs:
            self.outputs[name] = proc.communicate(timeout=120)
        return ck, proc, self.outputs[name][0]


@pytest.fixture(scope="module")
def interruptions(tmp_path_factory):
    runs = Interruptions(tmp_path_factory.mktemp("interrupted"))
    yield runs
    for _, proc in runs.runs.values():
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.fixture(scope="module")
def finished(tmp_path_factory, interruptions, local_spark, reference):
    """An uninterrupted Spark run with --checkpoint: its result and its checkpoint folder."""
    tmp = tmp_path_factory.mktemp("finished")
    code, report = check_here(tmp, "--checkpoint", str(tmp / "ck"), "--spark-partitions", "2")  # the file names below
    assert code == 1
    return report, tmp / "ck"


def test_an_uninterrupted_run_with_a_checkpoint_gives_the_bfs_result_and_saves_every_level(finished, reference):
    report, ck = finished
    assert summary(report) == reference
    manifest = json.loads((ck / "manifest.json").read_text())
    assert manifest["format"] == spark_checkpoint.FORMAT and manifest["options"]["engine"] == "spark"
    assert len(manifest["levels"]) == LEVELS
    assert sum(level["states"] for level in manifest["levels"]) == reference["states"]


@pytest.mark.parametrize(
    "name, resume_extra",
    [("early", ()), ("late", ("--spark-partitions", "3"))],  # the second resume re-keys every saved level
)
def test_a_run_killed_during_the_search_resumes_to_the_uninterrupted_result(
    tmp_path, interruptions, local_spark, reference, name, resume_extra
):
    ck, proc, _ = interruptions.result(name)
    assert proc.returncode == -signal.SIGKILL
    saved = levels_saved(ck)
    assert Interruptions.PLAN[name][0] <= saved < LEVELS  # killed mid-search, the manifest whole
    code, report = check_here(tmp_path, "--resume", str(ck), *resume_extra)
    assert code == 1
    assert summary(report) == reference
    assert levels_saved(ck) == LEVELS  # the resumed run went on saving there


def test_ctrl_c_ends_with_a_partial_result_whose_levels_are_saved_then_resumes(
    tmp_path, interruptions, local_spark, reference
):
    ck, proc, out = interruptions.result("ctrl-c")
    report = json.loads(out)
    assert report["complete"] is False and report["stop_reason"] == "interrupted"
    broken = any(p["status"] == "violated" and p["expectation"] == "always" for p in report["properties"])
    assert proc.returncode == (1 if broken else 3)  # a counterexample found before the stop is final
    manifest = json.loads((ck / "manifest.json").read_text())
    assert sum(level["states"] for level in manifest["levels"]) == report["states"] < reference["states"]
    assert len(manifest["levels"]) == report["depth"]
    code, resumed = check_here(tmp_path, "--resume", str(ck))
    assert code == 1 and summary(resumed) == reference


def test_resuming_a_finished_spark_search_gives_its_result_again(finished, reference, tmp_path):
    _, ck = finished
    code, report = check_here(tmp_path, "--resume", str(ck))
    assert code == 1 and summary(report) == reference


class BlockNextLevel(Observer):
    """Once ``after`` levels are saved, puts a file where the next level's folder goes: every task
    of that level fails, as on a cluster that lost the folder, and Spark gives the job up."""

    def __init__(self, folder: Path, after: int) -> None:
        super().__init__()
        self.folder, self.after = folder, after

    def progress(self, info) -> None:
        if info.depth == self.after:
            (self.folder / spark_checkpoint.level_dir(self.after + 1)).write_text("in the way")


def test_a_failed_level_stops_the_run_naming_the_resume_that_then_gives_the_uninterrupted_result(local_spark, tmp_path):
    config, ck = CORE_RF2["kip-101"], tmp_path / "ck"
    failed = run_spark(config, observer=BlockNextLevel(ck, 5), saving=checkpointing(ck, config), explore_all=True)
    assert not failed.complete and failed.stats.depth == 5 and levels_saved(ck) == 5
    assert "Spark job failed" in failed.stop_reason
    assert failed.stop_reason.endswith(f"the search is saved up to level 5: continue it with --resume {ck}")
    (ck / spark_checkpoint.level_dir(6)).unlink()
    resumed = run_spark(config, saving=checkpointing(ck, config, resume=True), explore_all=True)
    assert resumed.complete and levels_saved(ck) == resumed.stats.depth
    assert_agrees_with_bfs(config, resumed, explore_all=True)


# -- refused checkpoints: one line, exit 2, nothing written -----------------------------


def snapshot(ck: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ck)): p.read_bytes() for p in sorted(ck.rglob("*")) if p.is_file()}


@pytest.fixture
def spark_saved(finished, tmp_path):
    """A copy of the finished Spark checkpoint, to damage."""
    import shutil

    ck = tmp_path / "ck"
    shutil.copytree(finished[1], ck)
    return ck


def resume_cli(ck: Path, *extra: str, engine: tuple[str, ...] = SPARK):
    return run_cli("check-model", *RUN, *engine, "--trace-dir", str(ck.parent / "t"), *extra, "--resume", str(ck))


def assert_refused(proc, ck: Path, before: dict, words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert snapshot(ck) == before


def test_a_bfs_checkpoint_is_refused_by_the_spark_engine_and_the_other_way_round(tmp_path, spark_saved):
    bfs_ck = tmp_path / "bfs"
    assert run_cli("check-model", *RUN, "--trace-dir", str(tmp_path / "t"), "--checkpoint", str(bfs_ck)).returncode == 1
    before = snapshot(bfs_ck)
    assert_refused(resume_cli(bfs_ck), bfs_ck, before, "written by --engine bfs; this run uses --engine spark")
    before = snapshot(spark_saved)
    refused = resume_cli(spark_saved, engine=())
    assert_refused(refused, spark_saved, before, "written by --engine spark; this run uses --engine bfs")


def test_a_truncated_level_file_is_refused_and_left_as_it_was(spark_saved):
    part = spark_saved / "level-0009" / "part-00001-of-00002.pkl"
    part.write_bytes(part.read_bytes()[:-7])
    before = snapshot(spark_saved)  # taken before the resume: the argument order would run it after
    assert_refused(resume_cli(spark_saved), spark_saved, before, "level-0009/part-00001")


def test_a_corrupted_level_file_is_refused_and_left_as_it_was(spark_saved):
    part = spark_saved / "level-0005" / "part-00000-of-00002.pkl"
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    before = snapshot(spark_saved)  # taken before the resume: the argument order would run it after
    assert_refused(resume_cli(spark_saved), spark_saved, before, "does not match its checksum")


def test_a_missing_level_file_is_refused(spark_saved):
    (spark_saved / "level-0018" / "part-00000-of-00002.pkl").unlink()
    before = snapshot(spark_saved)  # taken before the resume: the argument order would run it after
    assert_refused(resume_cli(spark_saved), spark_saved, before, "is missing")


@pytest.mark.parametrize(
    "mangle, reseal, words",
    [
        (lambda text: text[: len(text) // 2], False, "corrupted"),
        (lambda text: text.replace('"states": 1,', '"states": 2,', 1), False, "checksum does not match"),
        (lambda text: text.replace('"states": 1,', '"states": "one",', 1), True, "malformed"),
        (lambda text: text.replace('"protocol": "kip-101"', '"protocol": "kip-320"'), True,
         "protocol was 'kip-320' there"),
    ],
    ids=["cut", "edited", "bad-field", "other-config"],
)
def test_a_mangled_manifest_is_refused_and_left_as_it_was(spark_saved, mangle, reseal, words):
    """``reseal``: the edit comes with a matching checksum, so the fields themselves are checked."""
    manifest = spark_saved / "manifest.json"
    manifest.write_text(mangle(manifest.read_text()))
    if reseal:
        checkpoint.write_manifest(spark_saved, json.loads(manifest.read_text()))
    before = snapshot(spark_saved)  # taken before the resume: the argument order would run it after
    assert_refused(resume_cli(spark_saved), spark_saved, before, words)


def test_checkpointing_into_a_folder_that_holds_a_spark_checkpoint_is_refused(spark_saved):
    before = snapshot(spark_saved)
    proc = run_cli("check-model", *RUN, *SPARK, "--checkpoint", str(spark_saved))
    assert_refused(proc, spark_saved, before, "already holds a checkpoint")


# -- re-partitioning saved levels, without a JVM ------------------------------------------


@pytest.mark.parametrize("vector", [False, True], ids=["scalar states", "kernel keys"])
def test_a_saved_level_read_into_another_partition_count_keeps_every_state_parent_and_order(tmp_path, vector):
    """Resume with other --spark-partitions re-keys every saved state: both representations."""
    import pickle

    from isrcheck.checker import spark_checkpoint
    from isrcheck.checker.spark_tasks import partition_of
    from isrcheck.model import ModelConfig, ReplicationModel
    from isrcheck.model.kernel import kernel_for

    model = ReplicationModel(ModelConfig(rf=2, protocol="kip-101", core=True))
    states = set(model.init_states())
    for _ in range(6):
        states |= {t for s in list(states) for _, t in model.successors(s)}
    kernel = kernel_for(model)
    if vector:
        ints = sorted(kernel.key_of_scalar(s) for s in states)
        keys = kernel.keys_of_ints(ints)
        parents = keys[:, ::-1].copy()  # any distinct parent per state will do
        expected = dict(zip(ints, reversed(ints)))
        payload = ("V", keys, parents, None)
    else:
        ints = sorted(states)
        expected = dict(zip(ints, reversed(ints)))
        payload = ("V", ints, pickle.dumps(list(reversed(ints))), None)
    [(_, name, size, _)] = spark_checkpoint.write_part(str(tmp_path), 1, 2, 0, iter([(0, payload)]))
    path = tmp_path / spark_checkpoint.level_dir(1) / name
    assert path.stat().st_size == size
    got: dict[int, int] = {}
    for q, (tag, ks, ps, _) in spark_checkpoint.read_part(5, (0, 2, str(path))):
        assert tag == "V"
        if vector:
            ks, ps = [kernel.int_of_key(c) for c in ks.T], [kernel.int_of_key(c) for c in ps.T]
        else:
            ps = pickle.loads(ps)
        assert ks == sorted(ks)
        assert {partition_of(k, 5) for k in ks} == {q}
        got.update(zip(ks, ps))
    assert got == expected and len(got) > 100
