"""Suite expansion (defaults, matrices, when blocks), trace folders and how checks are scheduled."""

import os
import textwrap
from pathlib import Path

from isrcheck.cli import suite_run
from isrcheck.cli.suite import load_suite
from isrcheck.cli.suite_run import CheckReport, SuiteRunner, trace_folders

ROOT = Path(__file__).resolve().parent.parent


def load(tmp_path, text):
    path = tmp_path / "suite.toml"
    path.write_text(textwrap.dedent(text))
    return load_suite(path)


MATRIX = '''\
    [defaults]
    max-records = 1
    crashes = 1

    [[check]]
    name = "grid"
    rf = [2, 3]
    min-isr = [1, 2]
    properties = ["acked-survive", "write-after-crash"]
    expect = { acked-survive = "holds" }

    [[check.when]]
    min-isr = 2
    rf = 2
    expect = { write-after-crash = "never" }

    [[check.when]]
    rf = [3]
    expect = { write-after-crash = "witnessed-within 12", acked-survive = "holds" }
'''


def test_a_matrix_expands_into_the_cross_product_in_the_order_written(tmp_path):
    suite = load(tmp_path, MATRIX)
    assert [c.name for c in suite.checks] == [
        "grid [rf=2, min-isr=1]", "grid [rf=2, min-isr=2]", "grid [rf=3, min-isr=1]", "grid [rf=3, min-isr=2]",
    ]
    assert [(c.run.config.rf, c.run.config.min_isr) for c in suite.checks] == [(2, 1), (2, 2), (3, 1), (3, 2)]
    assert all(c.run.config.max_records == 1 for c in suite.checks)
    assert suite.checks[1].axes == (("rf", 2), ("min-isr", 2))


def test_when_blocks_add_expectations_to_the_configurations_they_match(tmp_path):
    suite = load(tmp_path, MATRIX)
    expects = [{p: e.text for p, e in c.expect.items()} for c in suite.checks]
    assert expects[0] == {"acked-survive": "holds"}  # write-after-crash is recorded only
    assert expects[1] == {"acked-survive": "holds", "write-after-crash": "never"}
    assert expects[2] == expects[3] == {"acked-survive": "holds", "write-after-crash": "witnessed-within 12"}
    never = suite.checks[1].expect["write-after-crash"]
    assert (never.status, never.within, never.line) == ("violated", None, 15)
    assert suite.checks[2].expect["write-after-crash"].within == 12
    assert all(c.properties == ("acked-survive", "write-after-crash") for c in suite.checks)


def test_without_a_properties_list_a_check_runs_only_the_expected_properties(tmp_path):
    suite = load(tmp_path, '[[check]]\nrf = 2\nexpect = { strong-isr = "holds", weak-isr = "holds" }\n')
    (check,) = suite.checks
    assert check.properties == ("strong-isr", "weak-isr")
    assert check.name == "kip-320-rf2-kafka4.1-acksall-minisr1-crashes1"


def test_all_checks_every_property_that_applies(tmp_path):
    suite = load(tmp_path, '[[check]]\ncore = true\nrf = 2\nproperties = "all"\nexpect = { weak-isr = "holds" }\n')
    assert suite.checks[0].properties == ("weak-isr", "strong-isr", "leader-in-isr")


def test_the_shipped_suites_are_valid():
    for name in ("kafka-versions", "kafka-releases", "production-configs", "tradeoff-rf3"):
        suite = load_suite(ROOT / "examples" / f"{name}.toml")
        assert suite.checks and all(c.expect for c in suite.checks)
    assert len(load_suite(ROOT / "examples" / "tradeoff-rf3.toml").checks) == 36


def test_every_check_gets_its_own_trace_folder_even_when_names_look_alike(tmp_path):
    suite = load(tmp_path, '''\
        [[check]]
        name = "a b"
        rf = 2
        expect = { weak-isr = "holds" }
        [[check]]
        name = "a/b"
        rf = 2
        expect = { weak-isr = "holds" }
        [[check]]
        name = "A-B"
        rf = 2
        expect = { weak-isr = "holds" }
    ''')
    folders = trace_folders(list(suite.checks), tmp_path / "t")
    assert len({str(p).lower() for p in folders.values()}) == 3
    assert all(p.parent == tmp_path / "t" for p in folders.values())


def test_spark_checks_run_one_at_a_time_in_this_process_after_the_others(tmp_path, monkeypatch):
    suite = load(tmp_path, '''\
        [defaults]
        rf = 2
        max-records = 1
        [[check]]
        name = "on spark"
        engine = "spark"
        expect = { weak-isr = "holds" }
        [[check]]
        name = "bfs one"
        expect = { weak-isr = "holds" }
        [[check]]
        name = "on spark too"
        engine = "spark"
        expect = { weak-isr = "holds" }
        [[check]]
        name = "bfs two"
        core = true
        expect = { weak-isr = "holds" }
    ''')
    here = []

    def fake_run_one(check, trace_dir, observer):
        here.append((check.name, os.getpid()))
        return CheckReport(check.name, True)

    monkeypatch.setattr(suite_run, "run_one", fake_run_one)  # only this process sees the fake
    finished = []
    runner = SuiteRunner(list(suite.checks), trace_folders(list(suite.checks), tmp_path / "t"), 2,
                         lambda c, r: finished.append((c.name, r.complete, bool(r.properties))))
    runner.run()
    assert here == [("on spark", os.getpid()), ("on spark too", os.getpid())]
    assert [f[0] for f in finished[2:]] == ["on spark", "on spark too"]
    assert sorted(f[0] for f in finished[:2]) == ["bfs one", "bfs two"]
    assert all(f[1] and f[2] for f in finished[:2]), "the BFS checks ran for real in worker processes"


KAFKA_KEYS = '''\
    [defaults]
    kafka = { "replication.factor" = 2, acks = "-1", "retention.ms" = 604800000 }
    max-records = 1
    [[check]]
    name = "unclean"
    kafka = { "min.insync.replicas" = [1, 2], "unclean.leader.election.enable" = true }
    expect = { committed-survive = "holds" }
    '''


def test_a_suite_takes_kafka_keys_as_the_options_they_set(tmp_path):
    suite = load(tmp_path, KAFKA_KEYS)
    configs = [c.run.config for c in suite.checks]
    assert [(c.rf, c.acks, c.min_isr, c.unclean_election) for c in configs] == [(2, "all", 1, True), (2, "all", 2, True)]
    assert [c.name for c in suite.checks] == ["unclean [min-isr=1]", "unclean [min-isr=2]"]  # a Kafka list is a matrix


def test_a_matrix_past_the_most_checks_a_suite_may_hold_is_refused_before_it_is_expanded(tmp_path):
    """Issue 55: a 417-byte suite whose lists expanded to 1.66 million checks took 3.3 GB and 90 s
    to list. This one's lists make a million: expanded, they would take most of a minute and
    gigabytes; counted first, the refusal comes at once."""
    import subprocess
    import sys

    limits = ", ".join(f'"{n}s"' for n in range(1, 101))
    memories = ", ".join(f'"{n}G"' for n in range(1, 101))
    path = tmp_path / "suite.toml"
    path.write_text(textwrap.dedent(f'''\
        [[check]]
        name = "small"
        rf = [2, 3]
        expect = {{ acked-survive = "holds" }}

        [[check]]
        name = "huge"
        max-depth = {list(range(1, 101))}
        time-limit = [{limits}]
        max-memory = [{memories}]
        expect = {{ acked-survive = "holds" }}
        '''))
    proc = subprocess.run([sys.executable, "-m", "isrcheck.cli.check_suite", str(path), "--list"],
                          capture_output=True, text=True, timeout=30)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "'huge' expands into 1,000,000 checks (100 x 100 x 100)" in lines[0] and "10,000" in lines[0]
    assert f"{path}:6:" in lines[0]
