"""The vector kernel's checkpoints, and manifests that were edited or garbled (issue 17).

The main job (rf 3, min-isr 2) on 3.9, the default until 2026-11-27, whose 1.9 million states
let four kills and resumes run in seconds (4.1's are 5.7 million), is killed at random moments while it
checkpoints on the vector kernel; every resume must give the uninterrupted run's result,
and the same trace files byte for byte."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from isrcheck.checker import BfsEngine, CheckOptions, checkpoint, checkpoint_vector
from isrcheck.checker.bfs_vector import VectorSearch
from isrcheck.checker.saving import BfsSaving
from isrcheck.model.kernel import kernel_for
from isrcheck.model import ModelConfig, ReplicationModel
from isrcheck.properties import select

from .clitools import command, run_cli, run_json, summary

MAIN = ["--rf", "3", "--min-isr", "2", "--kafka-version", "3.9", "--no-progress"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    traces = tmp_path_factory.mktemp("ref")
    code, report = run_json(*MAIN, "--trace-dir", str(traces))
    assert report["complete"] and report["kernel"] == "vector"
    return code, summary(report), {p.name: p.read_bytes() for p in traces.iterdir()}


@pytest.mark.parametrize("seed", [11, 12, 13, 14, 15])
def test_the_main_job_killed_at_a_random_moment_resumes_to_the_uninterrupted_result(tmp_path, reference, seed):
    code, expected, traces = reference
    ck, out, scratch = tmp_path / "ck", tmp_path / "traces", tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.Popen([command("check-model"), *MAIN, "--trace-dir", str(out), "--checkpoint", str(ck)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, TMPDIR=str(scratch)))
    rng = random.Random(seed)
    at_level, pause = rng.randint(3, 24), rng.uniform(0.0, 0.05)  # of its 31 levels: the kill lands mid-run
    deadline = time.monotonic() + 120
    while _levels_saved(ck) < at_level:
        assert proc.poll() is None, f"the run ended before level {at_level} was saved: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.005)
    time.sleep(pause)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL  # the run was killed, not finished
    assert not list(scratch.iterdir()), "the levels are in the checkpoint: nothing is left in the temporary folder"
    resumed_code, report = run_json(*MAIN, "--trace-dir", str(out), "--resume", str(ck))
    assert (resumed_code, summary(report), report["kernel"]) == (code, expected, "vector")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == traces


def _levels_saved(ck: Path) -> int:
    try:
        return len(json.loads((ck / "manifest.json").read_text())["levels"])
    except (OSError, ValueError):  # not written yet
        return 0


def test_a_checkpointed_run_keeps_the_vector_kernel_and_its_result(tmp_path, reference):
    code, expected, traces = reference
    ck = tmp_path / "ck"
    got, report = run_json(*MAIN, "--trace-dir", str(tmp_path / "t"), "--checkpoint", str(ck))
    assert (got, summary(report), report["kernel"]) == (code, expected, "vector")
    # the witnesses' paths were read from the level files: the same traces
    assert {p.name: p.read_bytes() for p in (tmp_path / "t").iterdir()} == traces
    manifest = json.loads((ck / "manifest.json").read_text())
    assert manifest["format"] == checkpoint_vector.FORMAT
    assert sum(level["states"] for level in manifest["levels"]) == expected["states"]
    again, report = run_json(*MAIN, "--trace-dir", str(tmp_path / "t"), "--resume", str(ck))
    assert (again, summary(report)) == (code, expected)  # a finished search resumes to its result


# ---- refused checkpoints: one line, exit 2, nothing written -------------------------------------
SMALL = ["--rf", "2", "--max-records", "1", "--no-progress"]


def saved_small(tmp_path: Path, *kernel: str) -> tuple[Path, dict[str, bytes]]:
    ck = tmp_path / "ck"
    assert run_cli("check-model", *SMALL, *kernel, "--trace-dir", str(tmp_path / "t"), "--checkpoint", str(ck)).returncode == 0
    return ck, _contents(ck)


def _contents(ck: Path) -> dict[str, bytes | str]:
    """Each file's bytes; a FIFO or other special file only by name (reading it would block)."""
    return {p.name: p.read_bytes() if p.is_file() else "special" for p in ck.iterdir()}


def assert_refused(tmp_path: Path, ck: Path, words: str, *kernel: str) -> None:
    before = _contents(ck)
    start = time.monotonic()
    proc = run_cli("check-model", *SMALL, *kernel, "--trace-dir", str(tmp_path / "t"), "--resume", str(ck))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and words in lines[0], proc.stderr
    assert time.monotonic() - start < 30
    assert _contents(ck) == before


def edit(ck: Path, change, reseal: str) -> None:
    """Change the manifest, then reseal it: not at all, with a plain SHA-256 as a careful
    adversary would (issue 55: accepted, and its counters reported as found), or under the
    checkpoint key, as only isrcheck can, to reach the checks of the fields themselves."""
    m = json.loads((ck / "manifest.json").read_text())
    change(m)
    if reseal == "sha256":
        body = {k: v for k, v in m.items() if k != "checksum"}
        m["checksum"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    if reseal == "key":
        checkpoint.write_manifest(ck, m)
    else:
        (ck / "manifest.json").write_text(json.dumps(m))


RESEALS = pytest.mark.parametrize("reseal", ["none", "sha256", "key"])


def refusal(words: str, reseal: str) -> str:
    return words if reseal == "key" else "edited"


# edit -> what the refusal says once resealed under the key (otherwise it says "edited")
SCALAR_EDITS = {
    "cursor set back": (lambda m: m.update(cursor=0), "inconsistent"),
    "negative elapsed": (lambda m: m.update(elapsed=-1e9), "malformed"),
    "levels [1, 0]": (lambda m: m.update(level_ends=[1, 0]), "malformed"),
    "levels out of order": (lambda m: m.update(level_ends=m["level_ends"][::-1]), "inconsistent"),
    "found as a list": (lambda m: m.update(found=["weak-isr", 3]), "malformed"),
    "a state count as text": (lambda m: m.update(states=str(m["states"])), "malformed"),
    "a bool for a count": (lambda m: m.update(generated=True), "malformed"),
    "found emptied": (lambda m: m.update(found={}), "inconsistent"),  # would turn violations into "holds"
    "the last level dropped": (lambda m: m["level_ends"].pop(), "inconsistent"),
    "a level end moved": (lambda m: m["level_ends"].__setitem__(-1, m["level_ends"][-1] - 1), "inconsistent"),
}


@RESEALS
@pytest.mark.parametrize("case", list(SCALAR_EDITS))
def test_an_edited_scalar_manifest_is_refused(tmp_path, case, reseal):
    ck, _ = saved_small(tmp_path, "--kernel", "scalar")
    change, words = SCALAR_EDITS[case]
    edit(ck, change, reseal)
    assert_refused(tmp_path, ck, refusal(words, reseal), "--kernel", "scalar")


VECTOR_EDITS = {
    "negative elapsed": (lambda m: m.update(elapsed=-1e9), "malformed"),
    "found as a list": (lambda m: m.update(found=[["weak-isr", 3]]), "malformed"),
    "a row past its level": (lambda m: m.update(found={"weak-isr": [0, 10**6]}), "malformed"),
    "a level dropped": (lambda m: m["levels"].pop(0), "level-00000.bin"),
    "a level's size": (lambda m: m["levels"][1].update(size=m["levels"][1]["size"] + 1), "malformed"),
    "exhausted as text": (lambda m: m.update(exhausted="yes"), "malformed"),
    "found emptied": (lambda m: m.update(found={}), "inconsistent"),  # would turn violations into "holds"
    "the last level dropped": (lambda m: m["levels"].pop(), "inconsistent"),  # "complete" with a level missing
}


@RESEALS
@pytest.mark.parametrize("case", list(VECTOR_EDITS))
def test_an_edited_vector_manifest_is_refused(tmp_path, case, reseal):
    ck, _ = saved_small(tmp_path)
    change, words = VECTOR_EDITS[case]
    edit(ck, change, reseal)
    assert_refused(tmp_path, ck, refusal(words, reseal))


# counters the data cannot give back (issue 55: each came back in the resumed run's report)
COUNTER_EDITS = {
    "generated raised": ("generated", 1000, ()),
    "elapsed raised": ("elapsed", 1000, ()),
    "full_states raised": ("full_states", 1, ()),
    "generated raised, scalar": ("generated", 1000, ("--kernel", "scalar")),
    "elapsed raised, scalar": ("elapsed", 1000, ("--kernel", "scalar")),
}


@pytest.mark.parametrize("reseal", ["none", "sha256"])
@pytest.mark.parametrize("case", list(COUNTER_EDITS))
def test_a_counter_raised_is_refused_whatever_checksum_comes_with_it(tmp_path, case, reseal):
    name, more, kernel = COUNTER_EDITS[case]
    ck, _ = saved_small(tmp_path, *kernel)
    edit(ck, lambda m: m.update({name: m[name] + more}), reseal)
    assert_refused(tmp_path, ck, "edited", *kernel)


def test_a_checkpoint_resumes_only_under_the_key_that_sealed_it(tmp_path, monkeypatch):
    ck, _ = saved_small(tmp_path)
    key = Path(os.environ[checkpoint.KEY_ENV])
    other = tmp_path / "other.key"
    monkeypatch.setenv(checkpoint.KEY_ENV, str(other))
    assert_refused(tmp_path, ck, "is not here")
    other.write_text("00" * 32 + "\n")
    assert_refused(tmp_path, ck, "another checkpoint key")
    other.write_text("not hex")
    assert_refused(tmp_path, ck, "not 64 hexadecimal digits")
    shutil.copy(key, other)  # the writer's key, copied with the folder: it resumes
    proc = run_cli("check-model", *SMALL, "--trace-dir", str(tmp_path / "t"), "--resume", str(ck))
    assert proc.returncode in (0, 1), proc.stderr


@pytest.mark.parametrize("body", ["[" * 100_000, "[" * 3000 + "]" * 3000, '{"format": ' + "9" * 5000 + "}"],
                         ids=["unclosed", "deep", "huge number"])
def test_a_garbled_manifest_body_is_refused_in_one_line(tmp_path, body):
    ck, _ = saved_small(tmp_path)
    (ck / "manifest.json").write_text(body)
    assert_refused(tmp_path, ck, "manifest")


@pytest.mark.parametrize("kernel,name", [("vector", "manifest.json"), ("vector", checkpoint_vector.level_name(1)),
                                         ("scalar", "states.bin"), ("scalar", "parents.bin"), ("scalar", "actions.bin")])
def test_a_fifo_in_place_of_a_saved_file_is_refused_without_waiting_on_it(tmp_path, kernel, name):
    ck, _ = saved_small(tmp_path, "--kernel", kernel)
    (ck / name).unlink()
    os.mkfifo(ck / name)
    assert_refused(tmp_path, ck, "not a regular file", "--kernel", kernel)


def test_a_manifest_over_64_mib_is_refused(tmp_path):
    ck, _ = saved_small(tmp_path)
    with open(ck / "manifest.json", "a") as f:
        f.write(" " * (70 << 20))
    assert_refused(tmp_path, ck, "larger than 64 MiB")


def test_checkpointing_into_a_folder_that_holds_other_files_is_refused_and_left_as_it_was(tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "level-000000.bin").write_bytes(b"left by a run killed before its first manifest")
    before = _contents(ck)
    proc = run_cli("check-model", *SMALL, "--trace-dir", str(tmp_path / "t"), "--checkpoint", str(ck))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "is not empty" in lines[0], proc.stderr
    assert _contents(ck) == before


def test_a_truncated_or_corrupted_level_file_is_refused(tmp_path):
    ck, before = saved_small(tmp_path)
    level = ck / checkpoint_vector.level_name(1)
    level.write_bytes(before[level.name][:-3])
    assert_refused(tmp_path, ck, "truncated")
    data = bytearray(before[level.name])
    data[0] ^= 0xFF
    level.write_bytes(bytes(data))
    assert_refused(tmp_path, ck, "checksum")
    level.unlink()
    assert_refused(tmp_path, ck, "missing")


def test_a_vector_checkpoint_resumed_on_the_scalar_kernel_is_refused(tmp_path):
    ck, _ = saved_small(tmp_path)
    assert_refused(tmp_path, ck, "--kernel vector", "--kernel", "scalar")


@pytest.mark.parametrize("kernel", ["vector", "scalar"])
@pytest.mark.parametrize("written", [3, 0], ids=["in the middle", "at the first level"])
def test_a_checkpoint_that_cannot_be_written_stops_the_search_cleanly(tmp_path, monkeypatch, kernel, written):
    """A full disk in the middle of a run, or from its start: the search stops with what it
    found, and says why."""
    config = ModelConfig(rf=2, max_records=1)
    model, props = ReplicationModel(config), select(config)
    ident = checkpoint.identity(config.as_dict(), {"engine": "bfs"})
    writes = []

    def full_disk(path, data):
        writes.append(path)
        if len(writes) > written:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data)

    module = checkpoint_vector if kernel == "vector" else checkpoint
    real = module.atomic_write
    monkeypatch.setattr(module, "atomic_write", full_disk)
    saving = BfsSaving(tmp_path / "ck", ident, resuming=False)
    result = BfsEngine(kernel=kernel, workers=1).check(model, props, CheckOptions(), saving=saving)
    assert not result.complete and result.stop_reason == "checkpoint not written (No space left on device)"
    assert result.kernel == kernel and 0 < result.stats.states


def test_a_checkpointed_run_goes_out_of_core_and_resumes_there_to_the_same_result(tmp_path, reference):
    """Past --max-memory a checkpointed run goes out of core too: its saved levels are read
    from the checkpoint's files, not kept. Killed there, it resumes under the same limit,
    rebuilding the visited set a level at a time, to the uninterrupted run's result."""
    code, expected, traces = reference
    ck, out, scratch = tmp_path / "ck", tmp_path / "traces", tmp_path / "tmp"
    scratch.mkdir()
    limited = [*MAIN, "--max-memory", "90M", "--trace-dir", str(out)]  # in memory it needs 102 MiB or more
    env = dict(os.environ, TMPDIR=str(scratch))
    proc = subprocess.Popen([command("check-model"), *limited, "--checkpoint", str(ck)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not list(scratch.glob("isrcheck-spill-*")):
        assert proc.poll() is None, f"the run ended in memory: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "the run never went out of core"
        time.sleep(0.005)
    spilled_at = _levels_saved(ck)
    while _levels_saved(ck) < spilled_at + 3:  # levels saved from the queue's file
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    proc = run_cli("check-model", *limited, "--format", "json", "--resume", str(ck), env={"TMPDIR": str(scratch)})
    report = json.loads(proc.stdout)
    assert (proc.returncode, summary(report)) == (code, expected)
    assert report["peak_memory_bytes"] < 90 * 2**20  # in memory or out of core again: the room decides
    assert {p.name: p.read_bytes() for p in out.iterdir()} == traces


def test_a_resume_short_of_memory_rebuilds_the_visited_set_on_disk(tmp_path):
    """The restore itself out of core (forced): the same levels and traces as in memory."""
    config = ModelConfig(rf=2, max_records=1)
    model, props = ReplicationModel(config), select(config)
    ident = checkpoint.identity(config.as_dict(), {"engine": "bfs"})
    ck = tmp_path / "ck"
    first = BfsEngine(kernel="vector", workers=1).check(model, props, CheckOptions(max_depth=6),
                                                          saving=BfsSaving(ck, ident, resuming=False))
    assert first.complete and first.stats.depth == 6
    results = []
    for out_of_core in (False, True):
        copy = shutil.copytree(ck, tmp_path / f"ck-{out_of_core}")  # each resume goes on in its own folder
        search = VectorSearch(model, kernel_for(model), props, CheckOptions(), workers=1,
                              saving=BfsSaving(copy, ident, resuming=True), out_of_core=out_of_core)
        results.append((search.run(), search))
    (memory, a), (disk, b) = results
    assert b.visited_set.disk is not None and a.visited_set.disk is None and memory.stats.depth > 6
    assert (disk.stats.states, disk.stats.generated, disk.stats.depth) == (memory.stats.states, memory.stats.generated,
                                                                            memory.stats.depth)
    assert [(p.name, p.status, p.path) for p in disk.properties] == [(p.name, p.status, p.path) for p in memory.properties]
