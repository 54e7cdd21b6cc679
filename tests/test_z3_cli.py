"""check-model with --engine z3: the contract's commands, exit codes and JSON."""

import json
import subprocess
import sys

from isrcheck.traces import itf, replay


def check_model(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "isrcheck.cli.check_model", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_kip101_rf2_core_weak_isr_is_violated_in_12_states_and_the_trace_replays(tmp_path):
    out = check_model("--engine", "z3", "--protocol", "kip-101", "--rf", "2", "--core",
                      "--format", "json", "--trace-dir", str(tmp_path))
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert report["engine"] == "z3" and report["complete"]
    weak = next(p for p in report["properties"] if p["name"] == "weak-isr")
    assert (weak["status"], weak["trace_length"]) == ("violated", 12)
    trace = itf.load(weak["trace_file"])
    assert len(replay(trace)) == 12
    leader = next(p for p in report["properties"] if p["name"] == "leader-in-isr")
    assert leader["status"] == "proved" and leader["proof"]["method"] == "induction"


def test_a_failed_induction_prints_the_counterexample_to_induction():
    out = check_model("--engine", "z3", "--protocol", "kip-320", "--rf", "2", "--core",
                      "--property", "strong-isr", "--max-depth", "2", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "strong-isr  holds within bounds (no violation up to depth 2; proof failed" in out.stdout
    assert "counterexample to 2-induction for strong-isr" in out.stdout
    assert "symbolic: BMC checked every path up to depth 2" in out.stdout


def test_unbounded_epochs_run_on_z3_and_report_their_bounds(tmp_path):
    out = check_model("--engine", "z3", "--protocol", "hw-truncation", "--rf", "2", "--core",
                      "--property", "weak-isr", "--max-leader-epoch", "unbounded", "--max-depth", "9",
                      "--format", "json", "--trace-dir", str(tmp_path))
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert report["bounds"]["max_leader_epoch"] == "unbounded"
    weak = report["properties"][0]
    assert (weak["status"], weak["trace_length"]) == ("violated", 9)
    assert len(replay(itf.load(weak["trace_file"]))) == 9


def test_z3_only_options_are_usage_errors_with_another_engine():
    for args in (["--max-leader-epoch", "unbounded"], ["--prove", "spacer"], ["--prove-timeout", "5s"]):
        out = check_model("--core", "--rf", "2", *args)
        assert out.returncode == 2
        assert "needs --engine z3" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_malformed_epoch_bound_is_a_usage_error():
    out = check_model("--engine", "z3", "--max-leader-epoch", "lots")
    assert out.returncode == 2 and "neither a number nor 'unbounded'" in out.stderr
