"""advise-config says how long it will take before it starts (issue 54, item 5): from the
times its checks took on this machine in earlier sweeps, kept in the user's cache."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from isrcheck.cli import advise_estimate as est
from isrcheck.cli.runner import CheckRun
from isrcheck.model import ModelConfig

TINY = ["--rf", "1", "--max-records", "1", "--max-leader-epoch", "1", "--jobs", "2"]


def advise(*args: str, cache) -> subprocess.CompletedProcess:
    env = {**os.environ, est.CACHE_ENV: str(cache)}
    return subprocess.run([sys.executable, "-m", "isrcheck.cli.advise_config", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def test_the_first_sweep_says_it_has_no_estimate_and_the_second_gives_one(tmp_path):
    first = advise(*TINY, "--trace-dir", str(tmp_path / "t1"), cache=tmp_path / "cache")
    assert first.returncode in (0, 1), first.stderr
    lines = first.stderr.splitlines()
    assert lines[1] == ("advise-config: 6 configurations on 2 jobs; no estimate yet: none was checked on this "
                        "machine before (their times are kept for the next sweep)")
    kept = json.loads((tmp_path / "cache" / est.FILE_NAME).read_text())
    assert len(kept) == 6 and all(v >= 0 for v in kept.values())
    # the time left, once a check has ended, on every progress line but the last
    assert all(re.search(r"\(about \d+ s left\)$", line) for line in lines[2:-1])
    second = advise(*TINY, "--trace-dir", str(tmp_path / "t2"), cache=tmp_path / "cache")
    assert re.fullmatch(r"advise-config: about \d+ s for 6 configurations on 2 jobs \(each one's time on this "
                        r"machine in an earlier sweep\)", second.stderr.splitlines()[1])
    def advice(proc):  # the same advice, but for the trace folder and the sweep's own time
        return re.sub(r"checked in [\d.]+ s", "checked in ... s", proc.stdout.replace(str(tmp_path / "t1"), "T")
                      .replace(str(tmp_path / "t2"), "T"))

    assert advice(second) == advice(first)


def test_a_sweep_with_some_configurations_never_checked_counts_them_at_the_mean(tmp_path):
    advise(*TINY, "--trace-dir", str(tmp_path / "t1"), cache=tmp_path / "cache")
    other_bounds = advise(*TINY, "--max-leader-epoch", "2", "--trace-dir", str(tmp_path / "t2"), cache=tmp_path / "cache")
    assert "no estimate yet" in other_bounds.stderr.splitlines()[1]  # other bounds, other checks
    wider = advise(*TINY, "--rf", "1..2", "--trace-dir", str(tmp_path / "t3"), cache=tmp_path / "cache")
    assert re.fullmatch(r"advise-config: about \d+ s for 18 configurations on 2 jobs \(6 of 18 timed on this machine "
                        r"before, the others counted at their mean\)", wider.stderr.splitlines()[1])


def run(rf: int = 2, acks: str = "all") -> CheckRun:
    return CheckRun(ModelConfig(rf=rf, acks=acks, max_records=1, max_leader_epoch=1), "bfs", (), engine_args={"workers": 1})


def test_the_estimate_lays_the_checks_out_over_the_jobs_in_order():
    assert est.layout([4, 1, 1, 1, 1], 2) == 4
    assert est.layout([1, 1, 4], 2) == 5  # the third starts when the first job is free
    assert est.layout([3, 3, 3], 1) == 9
    runs = [run(2, "all"), run(2, "1"), run(3, "all")]
    times = {est.key(runs[0]): 10.0, est.key(runs[1]): 2.0}
    keys = [est.key(r) for r in runs]
    partial = est.estimate(keys, 2, times)
    assert (partial.seconds, partial.known, partial.total) == (10.0, 2, 3)  # the third at the mean, 6 s, after 2 s
    assert partial.line(2, None) == ("advise-config: about 10 s for 3 configurations on 2 jobs (2 of 3 timed on this "
                                     "machine before, the others counted at their mean)")
    assert est.estimate(keys, 2, {}).seconds is None
    whole = est.estimate(keys[:2], 1, times)
    assert whole.line(1, 5.0) == ("advise-config: about 12 s for 2 configurations on 1 job (each one's time on this "
                                  "machine in an earlier sweep); more than --time-limit: the advice will give what is "
                                  "decided by then")
    assert est.Estimate(750.0, 1, 1).line(1, None).startswith("advise-config: about 12 min for")
    assert est.Estimate(150.0, 1, 1).line(1, None).startswith("advise-config: about 2.5 min for")


def test_the_key_holds_what_decides_a_checks_time():
    a, b = run(2, "all"), run(2, "1")
    assert est.key(a) != est.key(b)
    assert est.key(a) == est.key(run(2, "all"))
    threads = CheckRun(a.config, "bfs", (), engine_args={"workers": 2})
    assert est.key(threads) != est.key(a)


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"a": "x", "b": -1}', ""])
def test_a_broken_cache_file_is_no_estimate_and_is_written_anew(tmp_path, monkeypatch, content):
    monkeypatch.setenv(est.CACHE_ENV, str(tmp_path))
    (tmp_path / est.FILE_NAME).write_text(content)
    assert est.load() == {}
    est.save(est.load(), {"k": 1.5})
    assert est.load() == {"k": 1.5}
    assert [p.name for p in tmp_path.iterdir()] == [est.FILE_NAME]  # no temporary left behind


def test_a_cache_that_cannot_be_written_costs_only_the_next_estimate(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(est.CACHE_ENV, str(tmp_path / "file" / "below"))
    est.save({}, {"k": 1.0})
    assert est.load() == {}


def test_the_cache_keeps_the_newest_entries(tmp_path, monkeypatch):
    monkeypatch.setenv(est.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(est, "MAX_ENTRIES", 3)
    est.save({"a": 1.0, "b": 2.0, "c": 3.0}, {"d": 4.0, "a": 5.0})
    assert est.load() == {"c": 3.0, "d": 4.0, "a": 5.0}


def test_the_cache_folder_follows_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.delenv(est.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert est.cache_file() == tmp_path / "isrcheck" / est.FILE_NAME
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert est.cache_file() == tmp_path / "home" / ".cache" / "isrcheck" / est.FILE_NAME
