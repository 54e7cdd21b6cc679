"""advise-config: the frontier logic on its own, then the command as a user runs it.

Expected outcomes, written from Kafka's documents before the runs:
- acks=1 loses acknowledged writes (the leader acknowledges before any follower has the
  record), so acks=all is needed to keep them; with clean election and one crash that keeps
  its disk, min.insync.replicas=1 is enough (the last ISR member comes back with its log).
- Unclean election can elect a replica without the committed records (the documentation
  of unclean.leader.election.enable), so it rules out "committed records survive"; on 4.1
  (the default) only with min.insync.replicas=1: from 2 up, a replica that leaves the ISR
  below min ISR stays an eligible leader replica (KIP-966), and the controller elects it
  cleanly before it would elect uncleanly.
- min.insync.replicas=3 with rf 3 stops acks=all writes as soon as one broker is down
  (NotEnoughReplicas): writes are no longer acknowledged.
- A lost disk on a broker that stays in the ISR in ZooKeeper mode: the controller can
  elect it cleanly after it comes back empty, losing committed records whatever the
  settings (KIP-966's motivation; 3.9 in ZooKeeper mode has no eligible leader replicas).
"""

from __future__ import annotations

import errno
import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from isrcheck.cli import advise_config
from isrcheck.cli import frontier as fr
from isrcheck.traces import itf
from isrcheck.traces.view_data import load_checked

from .clitools import run_cli
from .hardening_tools import during_the_run

SMALL = ("--max-records", "1")  # 18 configurations in seconds, with the same answers as 2 records


def _sweep(sizes: tuple[int, ...]) -> fr.Sweep:
    return fr.make_sweep(tuple(fr.Axis(f"a{i}", f"k{i}", tuple(range(n))) for i, n in enumerate(sizes)), lambda s: True)


@given(st.lists(st.integers(1, 3), min_size=1, max_size=3).flatmap(
    lambda sizes: st.tuples(st.just(tuple(sizes)), st.sets(st.tuples(*(st.integers(0, n - 1) for n in sizes))),
                            st.booleans())))
@settings(max_examples=200, deadline=None)
def test_the_frontier_is_the_keepers_cheapest_or_most_durable_points(case):
    sizes, keepers, durable = case
    sweep = _sweep(sizes)
    f = fr.frontier(sweep, lambda p: p in keepers, durable)
    assert set(f.keepers) == keepers
    assert set(f.edge) <= keepers
    for a in f.edge:  # an antichain
        assert not any(b != a and (fr.no_more_durable(a, b) or fr.no_more_durable(b, a)) for b in f.edge)
    for k in keepers:  # every keeper is at least as expensive (durable) or cheap (availability) as one on the edge
        assert any(fr.no_more_durable(e, k) if durable else fr.no_more_durable(k, e) for e in f.edge)
    for p, n in f.ruled_out:  # the neighbours beyond the edge keep nothing
        assert n not in keepers and sum(n) == sum(p) + (-1 if durable else 1)


def test_unknown_points_are_neither_kept_nor_ruled_out():
    sweep = _sweep((3,))
    f = fr.frontier(sweep, lambda p: {0: None, 1: True, 2: True}[p[0]], durable=True)
    assert f.edge == ((1,),) and f.ruled_out == () and f.unknown == ((0,),)


def test_advice_for_one_crash_names_acks_all_and_a_trace_for_each_cheaper_setting(tmp_path):
    proc = run_cli("advise-config", *SMALL, "--trace-dir", str(tmp_path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    advice = json.loads(proc.stdout)
    assert advice["report_version"] == 2 and advice["complete"]
    guarantees = {g["key"]: g for g in advice["guarantees"]}
    assert set(guarantees) == {"acked", "committed", "reads", "writable", "recovers"}
    acked = guarantees["acked"]
    assert {"acks": "all", "min.insync.replicas": "1", "unclean.leader.election.enable": "false"} in acked["frontier"]
    assert all(f["acks"] == "all" for f in acked["frontier"])
    cheaper = {(r["settings"]["acks"], r["settings"]["unclean.leader.election.enable"]) for r in acked["ruled_out"]}
    assert ("1", "false") in cheaper and ("all", "true") in cheaper
    for r in acked["ruled_out"]:  # each reason is a trace that replays on the model
        trace = load_checked(r["trace_file"])
        assert trace.property_name == "acked-survive" and len(trace.steps) == r["trace_length"]
    committed = guarantees["committed"]
    assert all(f["unclean.leader.election.enable"] == "false" or f["min.insync.replicas"] != "1"
               for f in committed["frontier"])
    assert {"acks": "0", "min.insync.replicas": "2", "unclean.leader.election.enable": "true"} in committed["frontier"]
    writable = {json.dumps(r["settings"], sort_keys=True): r for r in guarantees["writable"]["ruled_out"]}
    strict = {"acks": "all", "min.insync.replicas": "3", "unclean.leader.election.enable": "false"}
    assert "writes stop" in writable[json.dumps(strict, sort_keys=True)]["says"]
    recommended = [(r["acks"], r["min.insync.replicas"], r["unclean.leader.election.enable"]) for r in advice["recommended"]]
    assert recommended == [("all", "1", "false"), ("all", "2", "true")]
    assert "acks=all, min.insync.replicas=1" in advice["verdict_text"]


def test_advice_agrees_with_check_model_on_each_ruled_out_setting(tmp_path):
    """The advisor runs what check-model runs: a setting it rules out is one check-model breaks."""
    proc = run_cli("advise-config", *SMALL, "--guarantee", "acked", "--trace-dir", str(tmp_path / "a"),
                   "--format", "json")
    advice = json.loads(proc.stdout)
    for r in advice["guarantees"][0]["ruled_out"]:
        s = r["settings"]
        election = "--unclean-election" if s["unclean.leader.election.enable"] == "true" else "--clean-election"
        check = run_cli("check-model", *SMALL, "--acks", s["acks"], "--min-isr", s["min.insync.replicas"], election,
                        "--property", "acked-survive", "--trace-dir", str(tmp_path / "c"), "--format", "json")
        (prop,) = json.loads(check.stdout)["properties"]
        assert (prop["status"], prop["trace_length"]) == ("violated", r["trace_length"])


def test_the_text_advice_ends_in_plain_words(tmp_path):
    proc = run_cli("advise-config", *SMALL, "--guarantee", "writable", "--trace-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("advise-config: Kafka 4.1, up to 1 broker crash")
    assert "[18/18]" in proc.stderr and "enable.idempotence" not in proc.stderr  # swept only with --retries
    said = proc.stdout.strip().splitlines()[-1]
    assert said.startswith("In plain words. Checked: Kafka 4.1, up to 1 broker crash, 18 configurations. Within the "
                           "bounds checked: Writes are still acknowledged while a broker is down with acks="), said
    assert said.count(". ") == 3 and said.endswith(".")  # short sentences: plain words, checked, writable, all at once


def test_with_retries_idempotence_is_swept_and_only_it_keeps_records_written_once(tmp_path):
    """Expected from the producer's docs before the run: without idempotence a retry may write a
    duplicate whatever acks, min.insync.replicas and the election are; Kafka allows idempotence
    only with acks=all, so the cheapest keeper is acks=all with idempotence and every other
    setting at its cheapest, and the step cheaper is the same without idempotence."""
    proc = run_cli("advise-config", *SMALL, "--retries", "1", "--guarantee", "no-duplicates", "--format", "json",
                   "--trace-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    advice = json.loads(proc.stdout)
    assert advice["swept"]["enable.idempotence"] == ["false", "true"] and advice["faults"]["retries"] == 1
    cheapest = {"acks": "all", "min.insync.replicas": "1", "unclean.leader.election.enable": "true"}
    (g,) = advice["guarantees"]
    assert g["frontier"] == [{**cheapest, "enable.idempotence": "true"}]
    (r,) = g["ruled_out"]
    assert r["settings"] == {**cheapest, "enable.idempotence": "false"} and "second copy" in r["says"]
    trace = load_checked(r["trace_file"])
    assert trace.property_name == "no-duplicates" and len(trace.steps) == r["trace_length"] == 10
    assert not any(c["settings"]["acks"] != "all" and c["settings"]["enable.idempotence"] == "true"
                   for c in advice["configurations"]), "Kafka refuses idempotence without acks=all"
    sizes = {c["settings"]["enable.idempotence"]: c["log_size"] for c in advice["configurations"]
             if c["settings"]["acks"] != "0"}
    assert sizes == {"false": 2, "true": 1}, "room for the retry's copy only where it can be written"
    assert "up to 1 producer retry" in proc.stderr.splitlines()[0] and "up to 1 producer retry" in advice["verdict_text"]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    for args in (["--rf", "3..2"], ["--rf", "x"], ["--guarantee", "no-duplicates"], ["--kafka-version", "5.0"],
                 ["--disk-loss", "2"], ["--guarantee", "fast"]):
        proc = run_cli("advise-config", *args, "--trace-dir", str(tmp_path))
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("rf", ["٣", "２", "٢..٣", "3..٤", " 3", "+3", "3\n", "-0", "3..+4", ""])
def test_rf_takes_plain_digits_only_as_check_model_does(tmp_path, rf):
    """``int`` read ``٣``, ``２`` and ``٢..٣`` (and the sign and spaces) where check-model's --rf refuses them.
    (--crashes 9, read after --rf, is refused too: a --rf taken by mistake sweeps nothing.)"""
    proc = run_cli("advise-config", "--rf", rf, "--crashes", "9", "--trace-dir", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("advise-config: error: Invalid value for '--rf': ") and "is not N or N..M" in line


# 12 configurations in a few seconds, in this process (--jobs 1), three of them broken with a trace each
QUICK = ["--rf", "2", "--max-records", "1", "--max-leader-epoch", "1", "--guarantee", "acked", "--jobs", "1",
         "--no-progress"]


def error_after_the_advice(result) -> str:
    """Exit 2, no traceback, and on stderr the sweep's header and estimate then one line: the error's."""
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), (result.output, result.exception)
    header, estimate, line = result.stderr.splitlines()
    assert header.startswith("advise-config: Kafka ") and line.startswith("advise-config: error: not written: ")
    assert estimate.startswith("advise-config: ") and " configurations on 1 job" in estimate
    return line


def test_traces_a_full_disk_kept_out_are_said_last_and_exit_2(tmp_path, monkeypatch):
    """The advice is out first, then one line names the traces not written and why (exit 2, as
    check-model and check-suite do); it used to exit 0 with the traces' paths silently left out."""
    def full(trace, path):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(itf, "save", full)
    traces = tmp_path / "t"
    result = CliRunner().invoke(advise_config.main, [*QUICK, "--trace-dir", str(traces)])
    line = error_after_the_advice(result)
    assert "acks=all, min.insync.replicas=1, unclean.leader.election.enable=false" in result.stdout
    assert " traces (rf2-" in line
    assert f": cannot write {traces}/rf2-" in line and "No space left on device and " in line
    assert line.endswith("; written: the advice above")


def test_a_trace_folder_that_breaks_during_the_sweep_is_named_after_the_advice(tmp_path, monkeypatch):
    traces = tmp_path / "t"
    during_the_run(monkeypatch, lambda: traces.exists() or traces.write_text("now a file"))
    result = CliRunner().invoke(advise_config.main, [*QUICK, "--trace-dir", str(traces), "--format", "json"])
    line = error_after_the_advice(result)
    acked = {g["key"]: g for g in json.loads(result.stdout)["guarantees"]}["acked"]
    assert acked["ruled_out"] and all(r["trace_file"] is None for r in acked["ruled_out"])
    assert "Not a directory" in line and line.endswith("; written: the advice above")
    assert traces.read_text() == "now a file"


def test_one_time_limit_for_the_whole_sweep_with_what_it_decided_by_then(tmp_path):
    """Issue 55: --time-limit 10s on this sweep took 158 s and 1.5 GB, each configuration
    getting 10 s of its own. The limit is now the sweep's, from the command's first
    instruction, and the memory, sampled over the whole process tree, stays under the limit."""
    import subprocess
    import time

    import psutil

    from .clitools import command

    started = time.monotonic()
    proc = subprocess.Popen([command("advise-config"), "--rf", "5", "--max-records", "4", "--max-leader-epoch", "4",
                             "--crashes", "3", "--time-limit", "6s", "--max-memory", "1G", "--format", "json",
                             "--trace-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        try:
            tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree))
        except psutil.Error:
            pass
        time.sleep(0.05)
    out, err = proc.communicate()
    took = time.monotonic() - started
    assert proc.returncode == 3, err
    advice = json.loads(out)
    assert advice["complete"] is False and advice["decided"] < len(advice["configurations"]) == 30
    assert took < 6 * 1.1 + 1 + 3  # the bound (10% and a second), and room for a loaded test machine
    assert peak < 1 << 30
    assert "no setting swept keeps" not in advice["verdict_text"]


def test_advice_from_my_config_says_where_my_settings_sit(tmp_path):
    """Issue 54, item 5: Kafka's files, read as check-model reads them. A producer with acks=1
    and retries (Kafka turns idempotence off for acks=1: KAFKA-13673) on an rf 2 topic keeps
    committed records but loses acknowledged writes, which the sweep's own check shows."""
    (tmp_path / "topic.properties").write_text("replication.factor=2\nmin.insync.replicas=1\n")
    (tmp_path / "producer.properties").write_text("acks=1\nretries=3\nbootstrap.servers=broker:9092\n")
    args = ("--topic-config", "topic.properties", "--producer-config", "producer.properties", *SMALL,
            "--max-leader-epoch", "1", "--guarantee", "acked", "--guarantee", "committed")
    proc = run_cli("advise-config", *args, "--format", "json", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    advice = json.loads(proc.stdout)
    assert advice["yours"] == {"settings": {"acks": "1", "min.insync.replicas": "1",
                                            "unclean.leader.election.enable": "false", "enable.idempotence": "false"},
                               "keeps": {"acked": False, "committed": True}, "recommended": False}
    assert advice["faults"]["retries"] == 1 and "ignored (no modelled behaviour depends on them): bootstrap.servers" \
        in proc.stderr
    mine = {c["settings"]["acks"] + c["settings"]["min.insync.replicas"] + c["settings"]["enable.idempotence"]: c
            for c in advice["configurations"] if c["settings"]["unclean.leader.election.enable"] == "false"}
    assert mine["11false"]["keeps"] == advice["yours"]["keeps"]  # the sweep's own verdicts for that point
    text = run_cli("advise-config", *args, "--no-progress", cwd=tmp_path).stdout.splitlines()
    assert text[0] == ("your settings (acks=1, min.insync.replicas=1, unclean.leader.election.enable=false, "
                       "enable.idempotence=false):")
    assert text[1] == "  keep: committed records survive"
    assert text[2].startswith("  do not keep: acknowledged writes survive: acknowledged writes can be lost (")


def test_my_config_that_disagrees_with_an_option_is_refused(tmp_path):
    (tmp_path / "topic.properties").write_text("replication.factor=2\n")
    proc = run_cli("advise-config", "--topic-config", "topic.properties", "--rf", "3", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "advise-config: error: replication.factor=2 in the files disagrees with --rf 3"), proc.stderr
