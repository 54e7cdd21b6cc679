"""The Python API (issue 20, item 9): docs/python.md's example runs, and the API says what check-model says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from isrcheck.api import check

from .clitools import run_json

GUIDE = (Path(__file__).resolve().parent.parent / "docs" / "python.md").read_text()
TINY = dict(max_records=1, max_leader_epoch=1)


def test_the_guide_example_runs():
    section = GUIDE.split("# From Python", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "docs/python.md", "exec"), {})


def test_the_api_says_what_check_model_says(tmp_path):
    result = check(rf=2, acks="1", trace_dir=tmp_path, **TINY)
    code, report = run_json("--rf", "2", "--acks", "1", "--max-records", "1", "--max-leader-epoch", "1",
                            "--trace-dir", str(tmp_path))  # the same files, written again
    assert (code == 0) == result.ok
    assert [(v.name, v.says) for v in result.verdicts] == [(p["name"], p["says"]) for p in report["properties"]]
    assert result.states == report["states"]
    assert result["acked-survive"].trace_file.exists()
    html = result._repr_html_()
    assert "<table>" in html and "acknowledged writes can be lost" in html


@pytest.mark.parametrize("bad, words", [
    (dict(rf=9), "--rf 9 is out of range"),
    (dict(replication=3), "unknown setting(s) replication"),
    (dict(kafka={"min.insync.replica": 2}), "did you mean min.insync.replicas?"),
    (dict(properties=["no-such"]), "unknown property 'no-such'"),
])
def test_bad_settings_raise_value_error_with_one_line(bad, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        check(**bad)
