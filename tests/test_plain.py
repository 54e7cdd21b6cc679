"""The verdict in plain words (issue 20, item 2), and a question answered "never" (no failure).

Expected from Kafka before running: with min.insync.replicas=3 on rf 3, a broker down
leaves the ISR below min ISR, so the leader rejects acks=all writes with NotEnoughReplicas:
write-after-crash never happens, which is the right answer, not a vacuous check; with
acks=1 an acknowledged write can be lost when its leader fails before the followers fetch.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from isrcheck.cli.plain import SENTENCES
from isrcheck.properties import NAMES

from .clitools import run_cli, run_json

TINY = ["--max-records", "1", "--max-leader-epoch", "1"]


def test_every_property_has_its_two_sentences():
    assert set(SENTENCES) == set(NAMES)
    assert all(bad for _, bad in SENTENCES.values())


def test_a_question_answered_never_reads_as_the_answer_and_passes(tmp_path):
    args = ["--rf", "3", "--min-isr", "3", "--property", "write-after-crash", *TINY, "--trace-dir", str(tmp_path)]
    proc = run_cli("check-model", *args, "--junit", str(tmp_path / "j.xml"))
    assert proc.returncode == 0, proc.stdout
    assert "write-after-crash  never happens within bounds: writes stop being acknowledged while a broker is down" \
        in proc.stdout
    assert "vacuous" not in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == (
        "In plain words. Checked: Kafka 4.1, replication.factor=3, min.insync.replicas=3, "
        "unclean.leader.election.enable=false, flush.messages=unset, acks=all, eligible.leader.replicas.version=1, "
        "up to 1 broker crash. "
        "Within the bounds checked: Writes stop being acknowledged while a broker is down.")
    cases = ET.parse(tmp_path / "j.xml").getroot().iter("testcase")
    assert [c.find("failure") for c in cases] == [None]


def test_a_witness_of_the_bounds_never_seen_still_fails(tmp_path):
    # no crash allowed: the consumer-side witnesses are fine, but write-after-crash needs a crash
    code, report = run_json("--rf", "2", "--max-records", "1", "--max-leader-epoch", "0", "--property",
                            "leader-failover", "--trace-dir", str(tmp_path))
    assert code == 1
    assert report["properties"][0]["says"] == "no leader takes over with earlier committed records within the bounds"


def test_the_findings_come_first_with_their_traces(tmp_path):
    code, report = run_json("--rf", "2", "--acks", "1", *TINY, "--trace-dir", str(tmp_path))
    assert code == 1
    lost = next(p for p in report["properties"] if p["name"] == "acked-survive")
    assert lost["status"] == "violated"
    text = report["verdict_text"]
    assert text.split("Within the bounds checked: ", 1)[1].startswith(  # a short sentence each, findings first
        f"Acknowledged writes can be lost ({lost['trace_length']} states, trace {lost['trace_file']}). "
        "Committed records survive. ")
    assert "records get committed" not in text
    assert text.endswith(". The published specification's invariants: Every leader's records below its high "
                         "watermark are on every member of its own ISR. Records below a leader's high watermark are "
                         "on every ISR member, so a clean election keeps them. The leader is always in the ISR. "
                         "Replicas never disagree on a record below both of their high watermarks.")
    assert lost["says"].startswith("acknowledged writes can be lost")


def test_an_interrupted_run_says_what_is_not_known(tmp_path):
    proc = run_cli("check-model", "--rf", "3", "--min-isr", "2", "--kernel", "scalar", "--time-limit", "3s",
                   "--property", "committed-survive", "--trace-dir", str(tmp_path))  # 20 s of search
    assert proc.returncode == 3
    depth = int(proc.stdout.split("\nstates: ")[1].split("depth ")[1].split(",")[0])
    assert proc.stdout.startswith(f"Answer, up to depth {depth}, where the search stopped: Committed records "
                                  f"survive.\n")
    assert f"committed-survive  unknown: no violation up to depth {depth}, search incomplete" in proc.stdout
    assert proc.stdout.rstrip().endswith(
        f"Committed records survive up to depth {depth}; past it, not known yet (the search stopped early).")


def test_the_json_report_says_its_shape_and_who_wrote_it(tmp_path):
    from isrcheck import MODEL_VERSION, __version__
    from isrcheck.cli.report import REPORT_VERSION

    _, report = run_json("--rf", "2", *TINY, "--trace-dir", str(tmp_path))
    assert (report["report_version"], report["isrcheck_version"], report["model_version"]) == (
        REPORT_VERSION, __version__, MODEL_VERSION)
    assert list(report)[:3] == ["report_version", "isrcheck_version", "model_version"]


def test_with_progress_the_configuration_comes_first(tmp_path):
    proc = run_cli("check-model", "--rf", "3", "--min-isr", "2", "--kernel", "scalar", "--time-limit", "3s",
                   "--progress", "--trace-dir", str(tmp_path))  # the scalar kernel reports each level
    first = proc.stderr.splitlines()[:3]
    assert first[2].startswith("  ... 1 distinct states")
    assert first[0].startswith("isrcheck: protocol kip-320, rf 3, Kafka 4.1") and first[1].startswith("kafka: ")
    answer, again = proc.stdout.splitlines()[:2]
    assert answer.startswith("Answer, up to depth ")  # the report answers first (issue 54)
    assert again == first[0]  # then says the configuration again, for the record


LOST_DISK = ["--rf", "2", "--min-isr", "2", "--disk-loss", "1", "--max-records", "1", "--crashes", "1"]


def test_the_answer_comes_first_and_the_specifications_invariants_do_not_decide_it(tmp_path):
    """Issue 54: on 4.1 a lost disk breaks weak-isr and strong-isr (the wiped broker stays in a
    stale leader's cached ISR), yet no acknowledged or committed record is lost: the question a
    Kafka engineer asked is answered "no", first, and the run exits 0."""
    proc = run_cli("check-model", *LOST_DISK, "--trace-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Answer, within bounds: Committed records survive. ")
    assert "Acknowledged writes survive." in lines[0] and "ISR" not in lines[0]
    heading = lines.index("  the published specification's invariants (they decide only with --property or --core):")
    below = "\n".join(lines[heading:])
    assert "weak-isr           VIOLATED" in below and "strong-isr         VIOLATED" in below
    assert "acked-survive" not in below
    assert "\nweak-isr: " not in proc.stdout  # its trace is saved, not told step by step
    code, report = run_json(*LOST_DISK, "--trace-dir", str(tmp_path))
    assert (code, report["verdict"], report["answer"]) == (0, "holds", lines[0])
    decides = {p["name"]: p["decides"] for p in report["properties"]}
    assert not decides["weak-isr"] and decides["committed-survive"] and decides["record-committed"]


def test_a_specification_invariant_named_decides_again(tmp_path):
    code, report = run_json(*LOST_DISK, "--property", "weak-isr", "--property", "acked-survive",
                            "--trace-dir", str(tmp_path))
    assert (code, report["verdict"]) == (1, "violated")
    assert all(p["decides"] for p in report["properties"])
    assert report["answer"].startswith("Answer, within bounds: A leader can have a record below its high watermark")


def test_under_core_the_invariants_are_the_question(tmp_path):
    code, report = run_json("--core", "--protocol", "kip-101", "--rf", "2", "--trace-dir", str(tmp_path))
    assert (code, report["verdict"]) == (1, "violated")
    assert all(p["decides"] for p in report["properties"])


def test_the_api_answers_as_check_model_does():
    from isrcheck import api

    result = api.check(rf=2, min_isr=2, disk_loss=1, max_records=1)
    assert result.ok and result.answer.startswith("Answer, within bounds: Committed records survive.")
    assert not result["weak-isr"].good and not result["weak-isr"].decides
