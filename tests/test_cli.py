"""check-model as users run it: the JSON contract, the text verdicts, and one-line errors."""

from __future__ import annotations

import json

import pytest

from isrcheck.traces import itf, replay

from .clitools import run_cli, run_json, summary

BAD_INPUT = [
    (["--rf", "3", "--min-isr", "0"], "--min-isr 0 is out of range; Kafka takes 1 to 2147483647"),
    (["--rf", "0"], "--rf 0 is out of range"),
    (["--rf", "2", "--min-isr", "2147483648"], "--min-isr 2147483648 is out of range"),
    (["--protocol", "kip-999"], "kip-999"),
    (["--property", "weak-irs"], "unknown property 'weak-irs'"),
    (["--max-records", "-1"], "-1 is negative"),
    (["--max-leader-epoch", "-2"], "-2 is negative"),
    (["--crashes", "-1"], "-1 is negative"),
    (["--crashes", "1", "--disk-loss", "2"], "--disk-loss 2 is above --crashes 1"),
    (["--core", "--acks", "1"], "--acks cannot be used with --core"),
    (["--core", "--min-isr", "2", "--unclean-election"], "--min-isr, --unclean-election cannot be used with --core"),
    (["--core", "--property", "committed-survive"], "does not apply"),
    (["--acks", "0", "--property", "acked-survive"], "--acks 0 acknowledges nothing"),
    (["--acks", "2"], "--acks '2' is unknown; choose one of all (or -1), 1, 0"),
    (["--time-limit", "soon"], "not a duration"),
    (["--max-memory", "lots"], "not a size"),
    (["--rf", "three"], "'three' is not a valid integer"),
    (["--no-such-option"], "No such option"),
]


@pytest.mark.parametrize("args,words", BAD_INPUT, ids=[" ".join(a) for a, _ in BAD_INPUT])
def test_bad_input_gets_one_line_and_exit_2(args, words, tmp_path):
    proc = run_cli("check-model", *args, "--trace-dir", str(tmp_path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert words in lines[0]
    assert lines[0].startswith("check-model: error: ")
    assert proc.stdout == ""


def test_json_output_follows_the_contract(tmp_path):
    code, report = run_json("--protocol", "kip-320", "--rf", "3", "--core", "--trace-dir", str(tmp_path))
    assert code == 0
    for key in ("config", "engine", "complete", "states", "generated", "depth", "seconds", "properties", "bounds"):
        assert key in report
    assert report["engine"] == "bfs" and report["complete"] is True
    assert report["config"]["rf"] == 3 and report["config"]["protocol"] == "kip-320"
    assert report["states_before_symmetry"] == 737_794 and report["depth"] == 26
    assert {p["name"]: p["status"] for p in report["properties"]} == {
        "weak-isr": "holds", "strong-isr": "holds", "leader-in-isr": "holds",
    }
    for p in report["properties"]:
        assert set(p) >= {"name", "status", "trace_length", "trace_file"}
    assert report["bounds"] == {
        "max_records": 2, "log_size": 2, "max_leader_epoch": 2, "max_depth": None, "crashes": 0, "disk_loss": 0,
        "power_loss": 0, "retries": 0, "consumer_crashes": 0,
    }


def test_a_violation_exits_1_saves_a_trace_that_replays_and_explains_it(tmp_path):
    proc = run_cli("check-model", "--core", "--protocol", "kip-101", "--rf", "2", "--property", "weak-isr",
                   "--trace-dir", str(tmp_path))
    assert proc.returncode == 1
    assert "weak-isr  VIOLATED in 12 states: trace saved to" in proc.stdout
    assert "=> broker" in proc.stdout  # the explanation names brokers and logs
    [saved] = tmp_path.glob("*.itf.json")
    trace = itf.load(saved)
    assert len(trace) == 12 and trace.property_name == "weak-isr"
    replay(trace)
    data = json.loads(saved.read_text())
    assert data["states"][1]["#meta"]["action"]["name"] == "ControllerElectLeader"


def test_the_main_job_text_names_every_property_and_the_bounds(tmp_path):
    proc = run_cli("check-model", "--rf", "3", "--min-isr", "2", "--max-records", "1", "--trace-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("weak-isr", "strong-isr", "committed-survive", "acked-survive", "read-within-hwm"):
        assert f"{name}" in proc.stdout
    assert "holds within bounds" in proc.stdout and "witnessed in" in proc.stdout
    assert "before symmetry reduction" in proc.stdout
    assert "bounds: max-records 1, log-size 1, max-leader-epoch 2, crashes 1" in proc.stdout


def test_a_fingerprinted_search_gives_its_collision_estimate_once_below_the_verdicts(tmp_path):
    """At rf 4 the Kafka model's keys take two words, so the vector kernel's visited set holds
    64-bit fingerprints; the scalar kernel's is exact and has nothing to say."""
    args = ["--rf", "4", "--min-isr", "2", "--max-depth", "8", "--trace-dir", str(tmp_path)]
    text = run_cli("check-model", *args).stdout
    lines = [line for line in text.splitlines() if "64-bit fingerprints" in line]
    assert len(lines) == 1 and lines[0].startswith("states are told apart by 64-bit fingerprints: "), text
    assert "TLC" not in text and "optimistic" not in text  # Kafka engineers' words (issue 54)
    assert text.index("holds within bounds") < text.index(lines[0])
    _, report = run_json(*args)
    assert all(p["note"] == lines[0] for p in report["properties"])
    assert "fingerprints" not in run_cli("check-model", *args, "--kernel", "scalar").stdout


def test_a_run_off_the_vector_kernel_says_why_below_the_engine_line_and_in_the_json(tmp_path):
    """rf 6 at the default leader-epoch bound: the vector kernel's table of request sequences
    would take hundreds of MiB, so the scalar kernel runs; the report says why and what helps."""
    args = ["--core", "--rf", "6", "--max-depth", "2", "--trace-dir", str(tmp_path)]
    lines = run_cli("check-model", *args).stdout.splitlines()
    engine = next(i for i, line in enumerate(lines) if line.startswith("engine bfs (scalar kernel"))
    assert lines[engine + 1].startswith("  not on the vector kernel: the table of request sequences"), lines
    assert "--max-leader-epoch" in lines[engine + 1]
    _, report = run_json(*args)
    assert report["kernel"] == "scalar" and report["kernel_note"] == lines[engine + 1].strip()
    vector = run_cli("check-model", *args, "--max-leader-epoch", "1").stdout
    assert "engine bfs (vector kernel" in vector and "not on the vector kernel" not in vector


def test_max_depth_bounds_the_search_and_the_verdict_says_so(tmp_path):
    code, report = run_json("--core", "--protocol", "hw-truncation", "--rf", "2", "--max-depth", "8",
                            "--property", "weak-isr", "--trace-dir", str(tmp_path))
    assert code == 0  # the 9-state counterexample lies beyond the bound
    assert report["depth"] == 8 and report["bounds"]["max_depth"] == 8
    assert report["properties"][0]["status"] == "holds"


def test_worker_processes_and_one_process_give_the_same_answer(tmp_path):
    """The scalar kernel's default on a multi-core machine is several processes; they must
    report what one process reports (a violated Kafka property, so traces are rebuilt across workers)."""
    args = ("--rf", "2", "--acks", "1", "--kernel", "scalar", "--continue", "--trace-dir", str(tmp_path))
    one = run_json(*args, "--workers", "1")
    three = run_json(*args, "--workers", "3")
    assert one[0] == three[0] == 1
    assert one[1]["workers"] == 1 and three[1]["workers"] == 3
    assert summary(one[1]) == summary(three[1])
    assert ("acked-survive", "violated", 6) in summary(three[1])["properties"]


def test_workers_must_be_positive_and_belong_to_bfs(tmp_path):
    for args, words in ((["--workers", "0"], "--workers 0: must be at least 1"),
                        (["--engine", "z3", "--workers", "2"], "--workers applies to --engine bfs")):
        proc = run_cli("check-model", *args, "--trace-dir", str(tmp_path))
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr


def test_a_stopped_symbolic_search_says_how_deep_it_checked_not_states_queued(tmp_path):
    """z3 enumerates no states: its INCOMPLETE line names the depth every path was checked to."""
    args = ("--rf", "2", "--engine", "z3", "--time-limit", "1s", "--trace-dir", str(tmp_path))
    text = run_cli("check-model", *args, "--no-progress")
    assert text.returncode == 3
    assert "INCOMPLETE (time limit): every path checked up to depth" in text.stdout
    assert "still queued" not in text.stdout and "states explored" not in text.stdout
    code, report = run_json(*args)
    assert code == 3 and report["complete"] is False and "queued" not in report
