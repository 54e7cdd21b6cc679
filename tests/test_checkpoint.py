"""Long runs never lose their work: limits, checkpoints, kill -9 and resume."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .clitools import command, run_cli, run_json, summary

# kip-279 at rf 3: two violations to find (11 states each) and ~270k states with
# symmetry, so a run lasts a few seconds and crosses many levels. The scalar kernel's
# checkpoints (the vector kernel's: test_checkpoint_vector.py).
RUN = ["--core", "--protocol", "kip-279", "--rf", "3", "--symmetry", "--continue", "--no-progress", "--kernel", "scalar"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    code, report = run_json(*RUN, "--trace-dir", str(tmp_path_factory.mktemp("ref")))
    assert code == 1 and report["complete"]
    return summary(report)


def start(tmp: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [command("check-model"), *RUN, "--trace-dir", str(tmp / "traces"), "--format", "json", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_run_killed_at_a_random_moment_resumes_to_the_uninterrupted_result(tmp_path, reference, seed):
    ck = tmp_path / "ck"
    proc = start(tmp_path, "--checkpoint", str(ck), "--checkpoint-every", "0.05s")
    wait_for(ck / "manifest.json")
    time.sleep(random.Random(seed).uniform(0.0, 1.5))
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    manifest = json.loads((ck / "manifest.json").read_text())
    assert manifest["states"] > 0
    code, report = run_json(*RUN, "--trace-dir", str(tmp_path / "traces"), "--resume", str(ck))
    assert code == 1
    assert summary(report) == reference


def test_two_runs_on_one_folder_one_runs_and_the_other_is_refused(tmp_path, reference):
    """The first run holds the folder (it is stopped meanwhile, so it cannot end first);
    a second run on it, resuming or starting another search, is refused in one line."""
    ck = tmp_path / "ck"
    first = start(tmp_path, "--checkpoint", str(ck), "--checkpoint-every", "0.05s")
    wait_for(ck / "manifest.json")
    first.send_signal(signal.SIGSTOP)
    try:
        for args in (RUN, ["--rf", "2", "--min-isr", "1", "--no-progress"]):
            for option, words in (("--resume", "in use by another isrcheck run"), ("--checkpoint", "already holds")):
                t = time.monotonic()
                other = run_cli("check-model", *args, "--trace-dir", str(tmp_path / "t2"), option, str(ck), timeout=60)
                lines = other.stderr.strip().splitlines()
                assert other.returncode == 2 and len(lines) == 1, other.stderr
                assert words in lines[0], lines[0]
                assert time.monotonic() - t < 30
    finally:
        first.send_signal(signal.SIGCONT)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 1, err
    assert summary(json.loads(out)) == reference


def test_ctrl_c_writes_a_final_checkpoint_and_exits_3_with_a_partial_result(tmp_path, reference):
    ck = tmp_path / "ck"
    proc = start(tmp_path, "--checkpoint", str(ck), "--checkpoint-every", "1h")
    wait_for(ck / "manifest.json")
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    report = json.loads(out)
    assert report["complete"] is False and report["stop_reason"] == "interrupted"
    broken = any(p["status"] == "violated" and p["expectation"] == "always" for p in report["properties"])
    assert proc.returncode == (1 if broken else 3)  # a counterexample found before the stop is final
    manifest = json.loads((ck / "manifest.json").read_text())
    assert manifest["states"] == report["states"]
    code, resumed = run_json(*RUN, "--trace-dir", str(tmp_path / "traces"), "--resume", str(ck))
    assert summary(resumed) == reference


def test_time_limit_stops_cleanly_with_exit_3_and_what_was_explored(tmp_path):
    code, report = run_json("--rf", "3", "--min-isr", "2", "--time-limit", "4s", "--trace-dir", str(tmp_path))
    assert code == 3
    assert report["complete"] is False and report["stop_reason"] == "time limit"
    assert report["states"] > 1000 and report["seconds"] < 10
    assert 0 < report["queued"] < report["states"]  # found and not expanded
    proc = run_cli("check-model", "--rf", "3", "--min-isr", "2", "--time-limit", "0.5s", "--trace-dir", str(tmp_path))
    assert proc.returncode == 3 and "INCOMPLETE (time limit)" in proc.stdout


def test_max_memory_stops_the_run_before_it_exceeds_the_limit(tmp_path):
    """A run that cannot go out of core (the state graph keeps every level in memory) stops.
    Without it, the main job finishes within 150M out of core, with a checkpoint or without
    (test_vector_spill.py, test_checkpoint_vector.py)."""
    limit = 150 * 2**20  # the main job needs about 600 MiB; its tables about 70
    code, report = run_json("--rf", "3", "--min-isr", "2", "--max-memory", "150M", "--trace-dir", str(tmp_path),
                            "--property", "can-recover")
    assert code == 3
    assert report["complete"] is False and report["stop_reason"] == "memory limit"
    assert 10_000 < report["states"] < 5_702_073  # it went as far as the limit let it (a level more or less)
    assert report["peak_memory_bytes"] < limit


def test_a_memory_limit_with_room_to_spare_lets_the_run_finish(tmp_path):
    code, report = run_json("--rf", "3", "--min-isr", "2", "--max-records", "1", "--max-memory", "300M",
                            "--trace-dir", str(tmp_path))
    assert code == 0 and report["complete"] and report["exhausted"]


@pytest.fixture
def saved(tmp_path):
    """A small finished checkpoint and the files' bytes, to check nothing is overwritten."""
    ck = tmp_path / "ck"
    args = ["--core", "--rf", "2", "--kernel", "scalar", "--trace-dir", str(tmp_path / "t"), "--checkpoint", str(ck)]
    assert run_cli("check-model", *args).returncode == 0
    return ck, {p.name: p.read_bytes() for p in ck.iterdir()}


def resume_small(ck: Path, *extra: str):
    return run_cli("check-model", "--core", "--rf", "2", "--kernel", "scalar", *extra, "--resume", str(ck))


def assert_refused(proc, ck: Path, before: dict, words: str) -> None:
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in ck.iterdir()} == before


def test_a_truncated_checkpoint_is_refused_and_left_as_it_was(saved):
    ck, before = saved
    (ck / "states.bin").write_bytes(before["states.bin"][:-5])
    before["states.bin"] = before["states.bin"][:-5]
    assert_refused(resume_small(ck), ck, before, "truncated")


def test_a_corrupted_checkpoint_is_refused_and_left_as_it_was(saved):
    ck, before = saved
    data = bytearray(before["parents.bin"])
    data[len(data) // 2] ^= 0xFF
    (ck / "parents.bin").write_bytes(bytes(data))
    before["parents.bin"] = bytes(data)
    assert_refused(resume_small(ck), ck, before, "checksum")


def test_a_garbled_manifest_is_refused(saved):
    ck, before = saved
    (ck / "manifest.json").write_bytes(before["manifest.json"][:40])
    before["manifest.json"] = before["manifest.json"][:40]
    assert_refused(resume_small(ck), ck, before, "corrupted")


def test_a_manifest_key_given_twice_is_refused_though_its_checksum_holds(saved):
    """json keeps a repeated key's last value, and the checksum is of what was read: an edit that
    gives ``generated`` twice, its own value last, would pass the checksum without this refusal."""
    ck, before = saved
    text = before["manifest.json"].decode()
    true = f'"generated": {json.loads(text)["generated"]}'
    assert true in text
    (ck / "manifest.json").write_text(text.replace(true, f'"generated": 1000000000, {true}', 1))
    before["manifest.json"] = (ck / "manifest.json").read_bytes()
    assert_refused(resume_small(ck), ck, before, "gives the key 'generated' twice in one object")


def test_a_checkpoint_of_another_configuration_is_refused_with_the_difference(saved):
    ck, before = saved
    assert_refused(resume_small(ck, "--protocol", "kip-101"), ck, before, "protocol was 'kip-320' there")


def test_a_checkpoint_of_another_model_version_is_refused(saved):
    ck, before = saved
    manifest = json.loads(before["manifest.json"])
    manifest["model_version"] = "0"
    (ck / "manifest.json").write_text(json.dumps(manifest))
    before["manifest.json"] = (ck / "manifest.json").read_bytes()
    assert_refused(resume_small(ck), ck, before, "model version 0")


def test_checkpointing_into_a_folder_that_holds_one_is_refused(saved):
    ck, before = saved
    proc = run_cli("check-model", "--core", "--rf", "2", "--kernel", "scalar", "--checkpoint", str(ck))
    assert_refused(proc, ck, before, "already holds a checkpoint")


def test_resuming_into_another_checkpoint_folder_is_refused(saved, tmp_path):
    """A resumed search appends to the files it resumed; another folder would get a tail without its head."""
    ck, before = saved
    other = tmp_path / "other"
    proc = resume_small(ck, "--checkpoint", str(other))
    assert_refused(proc, ck, before, "omit --checkpoint")
    assert not other.exists()


def test_resuming_a_finished_search_gives_its_result_again(saved, tmp_path):
    ck, _ = saved
    code, report = run_json("--core", "--rf", "2", "--kernel", "scalar", "--resume", str(ck),
                            "--trace-dir", str(tmp_path / "t2"))
    assert code == 0
    assert report["complete"] and report["exhausted"]
    assert report["states"] == 2_987  # kip-320 at rf 2 with symmetry: 5,973 before reduction
    assert report["states_before_symmetry"] == 5_973


def test_sigterm_stops_like_ctrl_c_and_takes_the_temporary_files_with_it(tmp_path):
    """timeout(1), docker stop, Kubernetes and CI runners send SIGTERM before they kill: the
    run stops at a clean point with what it explored (exit 3), and the folders it keeps in
    $TMPDIR (the level log; out of core, the visited set and the queue) go with it."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.Popen(  # the main job out of core: 11 s, past 1.9 million states
        [command("check-model"), "--rf", "3", "--min-isr", "2", "--max-memory", "150M", "--format", "json",
         "--trace-dir", str(tmp_path / "traces")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, TMPDIR=str(scratch)))
    deadline = time.monotonic() + 60
    while not list(scratch.glob("isrcheck-spill-*")):
        assert proc.poll() is None and time.monotonic() < deadline, "the run never went out of core"
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    report = json.loads(out)
    assert proc.returncode == 3, err
    assert report["complete"] is False and report["stop_reason"] == "terminated" and report["states"] > 0
    assert "stopping at the next clean point" in err
    assert list(scratch.iterdir()) == []
