"""The producer's and the consumer's lanes in both trace views (traces/view_lanes.py, traces/lanes.js).

The traces are check-model's own, saved as ITF files by the installed command: a
producer whose request times out and whose retry writes a second copy (no idempotence),
an idempotent producer whose retry a leader drops, a consumer that fetches, commits
before processing and crashes, one whose crash leaves its position to auto.offset.reset,
both (a retried record processed twice), and a configuration with neither feature, which
shows no lane. The text view is
``view-trace FILE``; the page is ``view-trace FILE --html``, stepped in headless Chromium.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from isrcheck.traces.view_data import build_view, load_checked

from .clitools import run_cli

BASE = ("--rf", "2", "--crashes", "0")
CONFIGS = {
    "retry": (*BASE, "--retries", "1", "--no-idempotent", "--property", "no-duplicates"),
    "duplicate": (*BASE, "--retries", "1", "--property", "duplicate-dropped"),
    "commit": (*BASE, "--commit", "before", "--consumer-crashes", "1", "--auto-offset-reset", "earliest",
               "--property", "no-skipped-records"),
    "reset": (*BASE, "--commit", "before", "--consumer-crashes", "1", "--property", "no-skipped-records"),
    "both": (*BASE, "--retries", "1", "--no-idempotent", "--commit", "after", "--property", "processed-once"),
    "plain": ("--rf", "2", "--property", "consumer-reads"),  # the main job's options: no lane
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    """Each configuration's trace file, as check-model saves it."""
    out = {}
    for name, args in CONFIGS.items():
        folder = tmp_path_factory.mktemp(name)
        proc = run_cli("check-model", *args, "--trace-dir", str(folder), timeout=120)
        found = list(folder.glob("*.itf.json"))
        assert len(found) == 1, proc.stdout + proc.stderr
        out[name] = found[0]
    return out


def text_of(path: Path, *more: str) -> str:
    proc = run_cli("view-trace", str(path), "--no-color", "--width", "120", *more, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def blocks(text: str) -> dict[int, str]:
    """The text view's block of each step shown, by step number."""
    parts = re.split(r"^step (\d+)/\d+ ", text, flags=re.M)
    return {int(n): body for n, body in zip(parts[1::2], parts[2::2])}


def step_of(path: Path, action: str, nth: int = 0) -> int:
    """The index of the trace's ``nth`` step whose action is ``action``."""
    view = build_view(load_checked(path))
    return [s.index for s in view.steps if s.action.split("(")[0] == action][nth]


def lane_lines(block: str, name: str) -> str:
    """A lane in a step's block as one line: its label line and the lines indented under it (the
    values wrap between values, two spaces apart; the event is on a line of its own, after a space)."""
    lines = block.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {name}  "))
    text, event = lines[start].strip(), False
    for line in lines[start + 1:]:
        if not line.startswith(" " * (4 + len(name))):
            break
        event = event or line.strip().startswith("▸")
        text += (" " if event else "  ") + line.strip()
    return text


# ---- the text view ------------------------------------------------------------------------


def test_the_producer_lane_shows_the_send_the_timeout_the_retry_and_the_answer(traces):
    path = traces["retry"]
    steps = blocks(text_of(path))
    sent, timeout, retry = (step_of(path, a) for a in ("LeaderWrite", "ProducerTimeout", "ProducerRetry"))
    last = max(steps)
    assert sent < timeout < retry < last
    assert lane_lines(steps[sent], "producer") == (
        "producer  in flight +m0  to retry none  retries 0/1  acknowledged none "
        "▸ sent: m0 to broker 0, appended as m0@e1 at offset 0")
    assert lane_lines(steps[timeout], "producer") == (
        "producer  in flight -m0  to retry +m0  retries 1/1*  acknowledged none "
        "▸ timed out: m0 is queued to be sent again (retry 1)")
    assert lane_lines(steps[retry], "producer") == (
        "producer  in flight +m0  to retry -m0  retries 1/1  acknowledged none "
        "▸ retried: m0 sent again to broker 0, appended as m0@e1 at offset 1")
    # acks=all: the leader's HWM passing the copy answers the producer
    assert lane_lines(steps[last], "producer") == (
        "producer  in flight -m0  to retry none  retries 1/1  acknowledged +m0 "
        "▸ answered: m0 is written: the leader's HWM passed it")
    # a step that does nothing to the producer names no event
    assert "▸" not in lane_lines(steps[0], "producer") and "  consumer  " not in steps[sent]
    for block in steps.values():  # the lane's fields are not in the history line too
        assert len(re.findall(r"in flight|to retry|retries|acknowledged", block)) == 4
        assert re.search(r"^  committed \S+  readable \S+$", block, re.M)


def test_an_idempotent_producer_lane_shows_the_duplicate_a_leader_dropped(traces):
    path = traces["duplicate"]
    steps = blocks(text_of(path))
    dropped = step_of(path, "ProducerRetryDuplicate")
    assert lane_lines(steps[dropped], "producer") == (
        "producer  in flight none  to retry -m0  retries 1/1  duplicates dropped +m0  acknowledged +m0 "
        "▸ duplicate dropped: broker 0 has m0 already (DuplicateSequence): not written again, answered as written")
    assert "duplicates dropped none" in lane_lines(steps[0], "producer")


def test_the_consumer_lane_shows_the_fetch_the_commit_and_the_crash(traces):
    path = traces["commit"]
    steps = blocks(text_of(path))
    fetch, commit, crash = (step_of(path, a) for a in ("ConsumerFetch", "ConsumerCommit", "ConsumerCrash"))
    assert fetch < commit < crash
    assert lane_lines(steps[0], "consumer") == (
        "consumer  position 0  in hand none  committed offset none  processed none  processed twice none  "
        "skipped none  crashes 0/1")
    assert lane_lines(steps[fetch], "consumer") == (
        "consumer  position 1*  in hand m0*  committed offset none  processed none  processed twice none  "
        "skipped none  crashes 0/1 ▸ fetched: m0 at offset 0 from broker 0")
    assert lane_lines(steps[commit], "consumer").endswith("committed offset 1*  processed none  processed twice "
                                                          "none  skipped none  crashes 0/1 ▸ committed: offset 1")
    assert lane_lines(steps[crash], "consumer") == (
        "consumer  position 1  in hand none*  committed offset 1  processed none  processed twice none  "
        "skipped +m0  crashes 1/1* ▸ crashed: lost m0 in hand; restarts at committed offset 1; m0 skipped")
    for block in steps.values():  # no producer lane here, and the consumer's fields only in its lane
        assert "  producer  " not in block and block.count("processed twice") == 1
        assert re.search(r"^  acknowledged \S+  committed \S+  readable \S+$", block, re.M)


def test_a_consumer_without_a_committed_offset_waits_for_its_reset(traces):
    path = traces["reset"]
    steps = blocks(text_of(path))
    crash, reset = step_of(path, "ConsumerCrash"), step_of(path, "ConsumerOffsetReset")
    assert lane_lines(steps[crash], "consumer") == (
        "consumer  position reset pending*  in hand none  committed offset none  processed none  processed twice "
        "none  skipped none  crashes 1/1* ▸ crashed: no committed offset, reset pending")
    assert lane_lines(steps[reset], "consumer") == (
        "consumer  position 1*  in hand none  committed offset none  processed none  processed twice none  "
        "skipped +m0  crashes 1/1 ▸ offset reset: to offset 1 (auto.offset.reset); m0 skipped")


def test_the_producer_and_the_consumer_each_have_their_lane(traces):
    path = traces["both"]  # the retry's second copy of m0 is processed twice
    steps = blocks(text_of(path))
    last = max(steps)
    assert lane_lines(steps[last], "producer") == "producer  in flight none  to retry none  retries 1/1  acknowledged m0"
    assert lane_lines(steps[last], "consumer") == (
        "consumer  position 2  in hand none*  committed offset none  processed m0  processed twice +m0  skipped none "
        "▸ processed: m0 again (processed twice)")
    assert steps[last].index("  producer  ") < steps[last].index("  consumer  ")
    assert re.search(r"^  committed m0  readable m0$", steps[last], re.M)


def test_changed_only_shows_a_lane_only_where_the_step_touches_it(traces):
    path = traces["commit"]
    steps = blocks(text_of(path, "--changed-only"))
    touched = {s.index for s in build_view(load_checked(path)).steps if s.index and s.lanes[0].changed}
    assert touched == {step_of(path, a) for a in ("ConsumerFetch", "ConsumerCommit", "ConsumerCrash")}
    assert {i for i, block in steps.items() if "  consumer  " in block} == touched | {0}


def test_a_configuration_without_these_features_shows_no_lane(traces):
    text = text_of(traces["plain"])
    assert "  producer  " not in text and "  consumer  " not in text and "▸" not in text
    assert re.search(r"^  acknowledged \S+  committed \S+  readable \S+  crashes 0/1$", text, re.M)
    assert all(not s.lanes for s in build_view(load_checked(traces["plain"])).steps)


# ---- the page in Chromium -------------------------------------------------------------------


def page(browser, path: Path, out: Path) -> None:
    proc = run_cli("view-trace", str(path), "--html", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    browser.open(out)
    browser.press("Home")


def goto(browser, step: int) -> None:
    for _ in range(step):
        browser.press("ArrowRight")
    assert browser.eval("document.body.dataset.step") == str(step)


LANES = """(function () {
  var all = function (root, s) { return Array.from(root.querySelectorAll(s)); };
  var out = {brokers: all(document, '.lane[role=row]').length, history: document.getElementById('history').textContent,
             overview: {}};
  all(document, '.lane.client').forEach(function (lane) {
    var facts = {};
    all(lane, '.cfact').forEach(function (f) {
      facts[f.dataset.key] = {
        text: all(f, '.v, .rid, .none').map(function (e) { return e.textContent; }).join(' '),
        changed: all(f, '.v.chg').length > 0,
        added: all(f, '.rid.added').map(function (e) { return e.textContent; }),
        removed: all(f, '.rid.removed').map(function (e) { return e.textContent; })
      };
    });
    var badge = lane.querySelector('.badge.event');
    out[lane.dataset.lane] = {event: badge ? badge.textContent : null, facts: facts,
                              changedBadge: !!(badge && badge.classList.contains('chg')),
                              detail: badge ? lane.querySelector('.event-text').textContent : null};
  });
  all(document, '#overview tr[data-kind=producer], #overview tr[data-kind=consumer]').forEach(function (tr) {
    out.overview[tr.dataset.kind] = all(tr, 'td').map(function (td) { return td.textContent; }).join('');
  });
  return out;
})()"""


def test_the_page_shows_the_producer_lane_at_the_timeout(browser, tmp_path, traces):
    path = traces["retry"]
    page(browser, path, tmp_path / "retry.html")
    timeout = step_of(path, "ProducerTimeout")
    goto(browser, timeout)
    got = browser.eval(LANES)
    assert got["brokers"] == 2 and "consumer" not in got
    producer = got["producer"]
    assert producer["event"] == "timed out" and producer["changedBadge"]
    assert producer["detail"] == "m0 is queued to be sent again (retry 1)"
    facts = producer["facts"]
    assert list(facts) == ["inflight", "failed", "retries", "acked"]
    assert facts["inflight"] == {"text": "m0", "changed": False, "added": [], "removed": ["m0"]}
    assert facts["failed"] == {"text": "m0", "changed": False, "added": ["m0"], "removed": []}
    assert facts["retries"] == {"text": "1/1", "changed": True, "added": [], "removed": []}
    assert facts["acked"]["text"] == "none"
    # the history card keeps only what no lane shows
    assert "committed" in got["history"] and not re.search(r"in flight|to retry|retries|acknowledged", got["history"])
    # the overview marks each producer event: S sent, T timed out, R retried, A answered
    assert got["overview"] == {"producer": "STRA"}
    browser.press("ArrowRight")  # the HWM step after it: no producer event, nothing marked changed
    after = browser.eval(LANES)["producer"]
    assert after["event"] is None and not after["facts"]["retries"]["changed"]
    assert after["facts"]["failed"] == {"text": "m0", "changed": False, "added": [], "removed": []}
    assert browser.exceptions() == []


def test_the_page_shows_the_consumer_lane_at_the_crash(browser, tmp_path, traces):
    path = traces["commit"]
    page(browser, path, tmp_path / "commit.html")
    fetch, crash = step_of(path, "ConsumerFetch"), step_of(path, "ConsumerCrash")
    goto(browser, fetch)
    consumer = browser.eval(LANES)["consumer"]
    assert consumer["event"] == "fetched" and consumer["detail"] == "m0 at offset 0 from broker 0"
    assert consumer["facts"]["position"] == {"text": "1", "changed": True, "added": [], "removed": []}
    assert consumer["facts"]["holding"]["text"] == "m0" and consumer["facts"]["holding"]["changed"]
    browser.press("End")
    assert browser.eval("document.body.dataset.step") == str(crash)
    got = browser.eval(LANES)
    consumer = got["consumer"]
    assert "producer" not in got and got["brokers"] == 2
    assert consumer["event"] == "crashed"
    assert consumer["detail"] == "lost m0 in hand; restarts at committed offset 1; m0 skipped"
    facts = consumer["facts"]
    assert list(facts) == ["position", "holding", "commit_offset", "processed", "reprocessed", "skipped",
                           "consumer_crashes"]
    assert {k: (f["text"], f["changed"]) for k, f in facts.items() if f["added"] == f["removed"] == []} == {
        "position": ("1", False), "holding": ("none", True), "commit_offset": ("1", False),
        "processed": ("none", False), "reprocessed": ("none", False), "consumer_crashes": ("1/1", True)}
    assert facts["skipped"]["added"] == ["m0"]
    assert got["overview"] == {"consumer": "FC\u00D7"}  # fetched, committed, crashed
    assert not re.search(r"processed|skipped", got["history"])


def test_the_page_shows_a_pending_reset(browser, tmp_path, traces):
    path = traces["reset"]
    page(browser, path, tmp_path / "reset.html")
    goto(browser, step_of(path, "ConsumerCrash"))
    consumer = browser.eval(LANES)["consumer"]
    assert consumer["facts"]["position"] == {"text": "reset pending", "changed": True, "added": [], "removed": []}
    assert consumer["facts"]["commit_offset"]["text"] == "none"
    browser.press("ArrowRight")
    consumer = browser.eval(LANES)["consumer"]
    assert consumer["event"] == "offset reset" and consumer["facts"]["position"]["text"] == "1"
    assert consumer["facts"]["skipped"]["added"] == ["m0"]


def test_the_page_shows_both_lanes_below_the_brokers(browser, tmp_path, traces):
    path = traces["both"]
    page(browser, path, tmp_path / "both.html")
    answered = step_of(path, "LeaderIncHighWatermark", 1)  # the HWM passes the retried copy
    goto(browser, answered)
    got = browser.eval(LANES)
    assert got["producer"]["event"] == "answered" and got["producer"]["facts"]["acked"]["added"] == ["m0"]
    assert got["consumer"]["event"] is None and got["consumer"]["facts"]["position"]["text"] == "0"
    assert got["overview"] == {"producer": "STRA", "consumer": "FPFP"}
    order = browser.eval("Array.from(document.querySelectorAll('#lanes > .lane'))"
                         ".map(function (e) { return e.dataset.lane || e.dataset.broker || 'offsets'; })")
    assert order == ["offsets", "0", "1", "producer", "consumer"]
    assert browser.exceptions() == []


def test_the_page_of_a_configuration_without_these_features_has_no_lane(browser, tmp_path, traces):
    page(browser, traces["plain"], tmp_path / "plain.html")
    got = browser.eval(LANES)
    assert "producer" not in got and "consumer" not in got and got["overview"] == {}
    assert got["history"].startswith("Producer and consumers") and "acknowledged" in got["history"]
    assert browser.exceptions() == []
