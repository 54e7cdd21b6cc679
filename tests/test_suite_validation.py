"""Malformed suites: each is reported with the file, the line and what is allowed, exit 2, before anything runs."""

import re
import textwrap

import pytest
from click.testing import CliRunner

from isrcheck.cli import check_suite
from isrcheck.cli.suite import load_suite

GOOD_CHECK = '[[check]]\nrf = 2\ncore = true\nexpect = { leader-in-isr = "holds" }\n'

CASES = [
    # (id, suite text, line the message must name, words the message must contain)
    ("invalid TOML", 'name = "x"\n[[check]]\nrf = = 2\n', 3, ["invalid TOML"]),
    ("unknown top-level key", 'nmae = "x"\n' + GOOD_CHECK, 1, ["unknown key 'nmae'", "did you mean 'name'", "allowed: name"]),
    ("misspelt option in a check", '[[check]]\nrf = 2\nmin-is = 1\nexpect = { weak-isr = "holds" }\n', 3,
     ["unknown key 'min-is'", "did you mean 'min-isr'", "allowed: name, description, properties, expect, when, kafka, rf"]),
    ("unknown key in defaults", "[defaults]\nreplication = 3\n" + GOOD_CHECK, 2,
     ["unknown key 'replication' in [defaults]", "allowed: properties, kafka, rf"]),
    ("misspelt property in expect", '[[check]]\nrf = 2\nexpect = { acked-survie = "holds" }\n', 3,
     ["unknown property 'acked-survie'", "did you mean 'acked-survive'", "known: weak-isr"]),
    ("misspelt property in properties", '[[check]]\nrf = 2\nproperties = ["weak-isr", "strong_isr"]\n', 3,
     ["unknown property 'strong_isr'", "did you mean 'strong-isr'"]),
    ("unknown verdict", '[[check]]\nrf = 2\n\nexpect = { weak-isr = "passes" }\n', 4,
     ["expect weak-isr = 'passes'", "always property", "allowed: holds, violated, violated-within N"]),
    ("witness word on an invariant", '[[check]]\nrf = 2\nexpect = { weak-isr = "witnessed" }\n', 3,
     ["weak-isr is an always property"]),
    ("a bound on a witness that never happens", '[[check]]\nrf = 2\nexpect.write-after-crash = "never-within 3"\n', 3,
     ["write-after-crash is a sometimes property", "allowed: witnessed (or holds), witnessed-within N, never"]),
    ("a zero bound", '[[check]]\nrf = 2\nexpect = { weak-isr = "violated-within 0" }\n', 3, ["allowed: holds"]),
    ("verdict that is not a string", '[[check]]\nrf = 2\nexpect = { weak-isr = true }\n', 3,
     ['a verdict is a string such as "holds"']),
    ("impossible configuration", '[[check]]\nrf = 2\n\ndisk-loss = 3\nexpect = { weak-isr = "holds" }\n', 4,
     ["disk-loss 3 is above crashes 1: a disk loss is a kind of crash"]),
    ("impossible matrix combination", '[[check]]\nname = "m"\nrf = 2\ncrashes = [0, 1]\ndisk-loss = 1\n'
     'expect = { weak-isr = "holds" }\n', 5, ["check 'm' [crashes=0]: disk-loss 1 is above crashes 0"]),
    ("impossible configuration from the defaults", '[defaults]\ndisk-loss = 3\n[[check]]\nrf = 2\nexpect = { weak-isr = "holds" }\n',
     2, ["disk-loss 3 is above crashes 1"]),
    ("Kafka feature on the core machine", '[[check]]\ncore = true\nrf = 2\nacks = "1"\nexpect = { weak-isr = "holds" }\n', 4,
     ["acks cannot be used with core"]),
    ("disk losses above crashes", '[[check]]\nrf = 2\ncrashes = 1\ndisk-loss = 2\nexpect = { weak-isr = "holds" }\n', 4,
     ["disk-loss 2 is above crashes 1"]),
    ("wrong value type", '[[check]]\nrf = "three"\nexpect = { weak-isr = "holds" }\n', 2,
     ["rf must be a whole number, not three"]),
    ("flag that is not a boolean", '[[check]]\nrf = 2\nunclean-election = "yes"\nexpect = { weak-isr = "holds" }\n', 3,
     ["unclean-election must be true or false"]),
    ("value outside the choices", '[[check]]\nrf = 2\nprotocol = "kip-321"\nexpect = { weak-isr = "holds" }\n', 3,
     ["protocol: 'kip-321' is not one of 'hw-truncation', 'kip-101', 'kip-279', 'kip-320'"]),
    ("acks as a number outside the choices", '[[check]]\nrf = 2\nacks = 2\nexpect = { weak-isr = "holds" }\n', 3,
     ["acks '2' is unknown; choose one of all (or -1), 1, 0"]),
    ("negative bound", '[[check]]\nrf = 2\ncrashes = -1\nexpect = { weak-isr = "holds" }\n', 3, ["crashes: -1 is negative"]),
    ("bad duration", '[[check]]\nrf = 2\ntime-limit = "soon"\nexpect = { weak-isr = "holds" }\n', 3,
     ["time-limit: 'soon' is not a duration"]),
    ("property that does not apply", '[[check]]\nrf = 2\nacks = "0"\nexpect = { acked-survive = "holds" }\n', 4,
     ["property 'acked-survive' does not apply", "(acks 0 acknowledges nothing)"]),
    ("property that the core machine lacks", '[[check]]\ncore = true\nrf = 2\n\nexpect = { committed-survive = "holds" }\n', 5,
     ["property 'committed-survive' does not apply"]),
    ("expectation outside the properties list",
     '[[check]]\nrf = 2\nproperties = ["weak-isr"]\nexpect.weak-isr = "holds"\nexpect.strong-isr = "holds"\n', 5,
     ["expects strong-isr but its properties list does not name it"]),
    ("a check that checks nothing", '[[check]]\nname = "empty"\nrf = 2\n', 1, ["check 'empty' checks nothing"]),
    ("no checks", 'name = "nothing"\n[defaults]\nrf = 2\n', 1, ["the suite has no checks; add a [[check]] table"]),
    ("duplicate names", '[[check]]\nname = "a"\nrf = 2\nexpect = { weak-isr = "holds" }\n\n'
                        '[[check]]\nname = "a"\nrf = 3\nexpect = { weak-isr = "holds" }\n', 6,
     ["check name 'a' is used twice (first at line 1)"]),
    ("a when block that matches nothing",
     '[[check]]\nacks = ["all", "1"]\nexpect = { weak-isr = "holds" }\n[[check.when]]\nacks = "0"\nexpect = { weak-isr = "violated" }\n',
     4, ["matches no configuration"]),
    ("a when block without expectations", '[[check]]\nacks = ["all", "1"]\nexpect = { weak-isr = "holds" }\n[[check.when]]\nacks = "1"\n',
     4, ["needs an expect table"]),
    ("a command-line option in a check", '[[check]]\nrf = 2\ntrace-dir = "x"\nexpect = { weak-isr = "holds" }\n', 3,
     ["trace-dir is not set per check: use check-suite --trace-dir"]),
    ("view in a check", '[[check]]\nrf = 2\nview = true\nexpect = { weak-isr = "holds" }\n', 3,
     ["view is not set per check: use view-trace FILE"]),
    ("an empty matrix list", '[[check]]\nrf = []\nexpect = { weak-isr = "holds" }\n', 2, ["a matrix list needs at least one value"]),
    ("a list in the defaults", '[defaults]\nrf = [2, 3]\n' + GOOD_CHECK, 2, ["defaults take one value each"]),
    ("an option given twice", '[[check]]\nmin-isr = 1\nmin_isr = 2\nexpect = { weak-isr = "holds" }\n', 3,
     ["min-isr is given twice"]),
    ("an option and its Kafka key", '[[check]]\nmin-isr = 1\nkafka = { "min.insync.replicas" = 2 }\n'
                                    'expect = { weak-isr = "holds" }\n', 3, ["min-isr is given twice", "Kafka key"]),
    ("a misspelt Kafka key", '[[check]]\nkafka = { "min.insync.replica" = 2 }\nexpect = { weak-isr = "holds" }\n', 2,
     ["min.insync.replica is not a Kafka topic or producer key; did you mean min.insync.replicas?"]),
    ("a bad Kafka value", '[[check]]\nkafka = { acks = "some" }\nexpect = { weak-isr = "holds" }\n', 2, ["acks=some"]),
    ("a Kafka table that is no table", '[[check]]\nkafka = "acks=1"\nexpect = { weak-isr = "holds" }\n', 2,
     ["kafka must be a table"]),
    ("--config in a check", '[[check]]\nconfig = "acks=1"\nexpect = { weak-isr = "holds" }\n', 2,
     ["config is not set per check: Kafka's keys go in a table: kafka = {"]),
]


@pytest.mark.parametrize("text, line, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_suite_is_one_line_with_its_line_number_and_exit_2(tmp_path, text, line, words):
    suite = tmp_path / "suite.toml"
    suite.write_text(text)
    result = CliRunner().invoke(check_suite.main, [str(suite), "--jobs", "1", "--trace-dir", str(tmp_path / "t")])
    assert result.exit_code == 2, result.output
    message = result.stderr
    assert message.count("\n") == 1 and result.stdout == ""
    assert message.startswith(f"check-suite: error: {suite}:{line}: "), message
    for w in words:
        assert w in message, message
    assert not (tmp_path / "t").exists(), "nothing may run before the suite is valid"


def test_a_missing_suite_file_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(check_suite.main, [str(tmp_path / "absent.toml")])
    assert result.exit_code == 2
    assert re.fullmatch(r"check-suite: error: cannot read suite file .*absent\.toml: .*\n", result.stderr)


def test_underscore_spellings_and_integer_acks_are_the_same_options(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text(textwrap.dedent('''\
        [[check]]
        rf = 3
        min_isr = 2
        acks = 1
        unclean_election = true
        expect = { acked-survive = "violated" }
    '''))
    (check,) = load_suite(suite).checks
    c = check.run.config
    assert (c.rf, c.min_isr, c.acks, c.unclean_election) == (3, 2, "1", True)


def test_feature_defaults_do_not_conflict_with_a_core_check(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('[defaults]\nmin-isr = 2\nrf = 2\n' + GOOD_CHECK + '[[check]]\nexpect = { acked-survive = "holds" }\n')
    core, kafka = load_suite(suite).checks
    assert core.run.config.core and core.run.config.min_isr == 1
    assert not kafka.run.config.core and kafka.run.config.min_isr == 2
