"""The TOML key-line finder that suite errors use to name the line to fix."""

import tomllib

import pytest

from isrcheck.cli.tomllines import key_lines, line_of

DOC = '''\
name = "demo"   # a comment with = and [brackets]
[defaults]
rf = 2
"min-isr" = 1

[[check]]
name = "first"
expect = { weak-isr = "holds", "strong-isr" = "violated-within 9" }
properties = [
  "weak-isr", # a comment
  "strong-isr",
]
description = """
[[check]]
rf = 99
"""

[[check]]
name = "second"
expect.acked-survive = "holds"
[[check.when]]
acks = "1"
expect = {acked-survive = "violated"}
[[check.when]]
acks = "0"
expect = {}

[[check]]
rf = [2, 3]
[check.expect]
weak-isr = "holds"
'''


@pytest.fixture(scope="module")
def lines():
    tomllib.loads(DOC)  # the scanner is only ever asked about valid TOML
    return key_lines(DOC)


@pytest.mark.parametrize(
    "path, line",
    [
        (("name",), 1),
        (("defaults",), 2),
        (("defaults", "rf"), 3),
        (("defaults", "min-isr"), 4),
        (("check", 0), 6),
        (("check", 0, "expect"), 8),
        (("check", 0, "expect", "strong-isr"), 8),
        (("check", 0, "properties"), 9),
        (("check", 0, "description"), 13),
        (("check", 1), 18),
        (("check", 1, "expect", "acked-survive"), 20),
        (("check", 1, "when", 0), 21),
        (("check", 1, "when", 0, "acks"), 22),
        (("check", 1, "when", 0, "expect", "acked-survive"), 23),
        (("check", 1, "when", 1, "acks"), 25),
        (("check", 2, "rf"), 29),
        (("check", 2, "expect"), 30),
        (("check", 2, "expect", "weak-isr"), 31),
    ],
)
def test_every_header_and_key_is_found_on_its_line(lines, path, line):
    assert lines[path] == line


def test_text_inside_a_multiline_string_is_not_read_as_tables(lines):
    assert ("check", 3) not in lines
    assert ("check", 0, "rf") not in lines


def test_a_missing_key_falls_back_to_its_enclosing_table(lines):
    assert line_of(lines, ("check", 1, "when", 0, "crashes")) == 21
    assert line_of(lines, ("check", 2, "min-isr")) == 28
    assert line_of(lines, ("nowhere",)) == 1


def test_keys_of_the_same_name_in_different_checks_get_their_own_lines():
    doc = '[[check]]\nrf = 2\n\n[[check]]\n\nrf = 3\n'
    lines = key_lines(doc)
    assert (lines[("check", 0, "rf")], lines[("check", 1, "rf")]) == (2, 6)


def test_escaped_quotes_and_single_quoted_strings_do_not_confuse_the_scanner():
    doc = 'a = "x \\" [[check]] y"\nb = \'C:\\\\path [x]\'\n[t]\nc = 1\n'
    tomllib.loads(doc)
    lines = key_lines(doc)
    assert lines[("a",)] == 1 and lines[("b",)] == 2 and lines[("t", "c")] == 4
