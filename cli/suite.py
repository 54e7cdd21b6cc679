"""Suite files: many checks with their expected verdicts, validated before anything runs.

A suite is a TOML file (docs/ci.md has the full reference)::

    name = "production settings"            # optional; the JUnit test-suite name
    [defaults]                              # shared by every check
    rf = 3
    [[check]]
    name = "rf 3, min-isr 2, acks=all"
    min-isr = 2                             # any check-model option, same name and rules
    properties = ["acked-survive", "write-after-crash"]   # default: the expected ones
    expect = { acked-survive = "holds", write-after-crash = "witnessed" }
    [[check.when]]                          # expectations for part of a matrix
    acks = "1"
    expect = { acked-survive = "violated-within 7" }

A list value on an option (``min-isr = [1, 2, 3]``) makes the check a matrix:
it expands into one check per element of the cross product of its lists.
Every option value goes through check-model's own click option (its type, its
choices, its callback) and every configuration through ``check_run_from``, so a
suite accepts exactly what check-model accepts. Errors name the file, the line,
what is wrong and what is allowed; the command exits 2 before running anything.
"""

from __future__ import annotations

import difflib
import itertools
import re
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from isrcheck.cli import kafka_config
from isrcheck.cli.common import UsageFailure
from isrcheck.cli.runner import CheckRun, config_slug
from isrcheck.files import MAX_DEPTH, FileProblem, read_bounded
from isrcheck.properties import BY_NAME, NAMES, UnknownProperty, select

from .suite_expect import Expected, SuiteError, read_expected
from .tomllines import TomlProblem, key_lines, line_of, parse_toml

MAX_CHECKS = 10_000  # a suite's checks once its lists are expanded: more is a mistake, and costs gigabytes to list
SUITE_KEYS = ("name", "description", "defaults", "check")
CHECK_KEYS = ("name", "description", "properties", "expect", "when", "kafka")
KAFKA_TABLE = 'Kafka\'s keys go in a table: kafka = { "min.insync.replicas" = 2, acks = "all" }'
# check-model options that belong to the check-suite command line, not to one check
COMMAND_LINE_ONLY = {
    "trace-dir": "use check-suite --trace-dir",
    "format": "use check-suite --junit, --report or --markdown",
    "progress": "use check-suite --progress",
    "junit": "use check-suite --junit",
    "checkpoint": "checkpoints are for one long check-model run",
    "checkpoint-every": "checkpoints are for one long check-model run",
    "resume": "checkpoints are for one long check-model run",
    "view": "use view-trace FILE on the saved traces",
    "graph": "the state graph is written by check-model --graph, for one configuration",
    **{option: KAFKA_TABLE for option in ("config", "topic-config", "producer-config", "consumer-config",
                                          "broker-config")},
    "topic": "a suite's check names its topic's settings in its kafka table; --topic picks from a describe file",
    "version": "check-suite --version says the version",
    "color": "use check-suite --color or --no-color",
}
@dataclass(frozen=True)
class SuiteCheck:
    name: str
    run: CheckRun  # trace_dir is set when the suite runs
    expect: dict[str, Expected]  # property -> expectation; checked properties without one are recorded
    line: int
    axes: tuple[tuple[str, Any], ...] = ()  # the matrix values of this expansion, by option key
    description: str = ""

    @property
    def properties(self) -> tuple[str, ...]:
        return self.run.properties


@dataclass(frozen=True)
class Suite:
    path: Path
    name: str
    checks: tuple[SuiteCheck, ...]
    description: str = ""


def load_suite(path: Path) -> Suite:
    """Read, validate and expand a suite file; raise SuiteError on the first problem."""
    try:
        text = read_bounded(path, "suite file").decode("utf-8")
    except FileProblem as e:
        raise UsageFailure(str(e)) from None
    except UnicodeDecodeError:
        raise UsageFailure(f"suite file {path} is not UTF-8 text") from None
    return parse_suite(text, Path(path))


def parse_suite(text: str, path: Path) -> Suite:
    try:
        data = parse_toml(text, MAX_DEPTH)
    except TomlProblem as e:
        raise SuiteError(f"{path}:{e.line}: {e}") from None
    return _Loader(path, key_lines(text)).load(data)


def option_keys() -> dict[str, click.Option]:
    """Suite key -> check-model's click option: the long option name without its dashes."""
    from .check_model import main

    out = {}
    for p in main.params:
        key = p.opts[0].lstrip("-") if isinstance(p, click.Option) else ""
        if key and key != "property" and key not in COMMAND_LINE_ONLY:
            out[key] = p
    return out


def _suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Loader:
    def __init__(self, path: Path, lines: dict) -> None:
        from .check_model import main

        self.path = path
        self.lines = lines
        self.options = option_keys()
        self.ctx = click.Context(main)
        self.base = main.make_context("check-model", []).params

    def error(self, where: tuple, message: str) -> SuiteError:
        return SuiteError(f"{self.path}:{line_of(self.lines, where)}: {message}")

    # ---- the file -------------------------------------------------------------

    def load(self, data: dict) -> Suite:
        for key in data:
            if key not in SUITE_KEYS:
                raise self.error((key,), f"unknown key {key!r} at the top of the suite{_suggest(key, SUITE_KEYS)}; "
                                          f"allowed: {', '.join(SUITE_KEYS)}")
        name = self.name(data, (), default=self.path.stem)
        description = self.text(data, "description", (), default="")
        defaults = data.get("defaults", {})
        if not isinstance(defaults, dict):
            raise self.error(("defaults",), "defaults must be a table: [defaults]")
        default_values, default_props = self.defaults(defaults)
        tables = data.get("check")
        if not tables:
            raise self.error(("check",), "the suite has no checks; add a [[check]] table")
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise self.error(("check",), "check must be an array of tables: [[check]]")
        checks: list[SuiteCheck] = []
        seen: dict[str, int] = {}
        self.counted = 0
        for i, table in enumerate(tables):
            for check in self.expand(i, table, default_values, default_props):
                if check.name in seen:
                    raise self.error(("check", i), f"check name {check.name!r} is used twice "
                                                   f"(first at line {seen[check.name]}); names must be unique")
                seen[check.name] = check.line
                checks.append(check)
        return Suite(self.path, name, tuple(checks), description)

    def text(self, table: dict, key: str, where: tuple, default: str) -> str:
        value = table.get(key, default)
        if not isinstance(value, str):
            raise self.error(where + (key,), f"{key} must be a string, not {_show(value)}")
        return value

    def name(self, table: dict, where: tuple, default: str) -> str:
        """A suite's or check's name: it labels output lines, JUnit cases and folders, so it
        has a visible character and no control character (a NUL, a line break)."""
        value = self.text(table, "name", where, default)
        if "name" in table and not value.strip():
            raise self.error(where + ("name",), "name is empty; give a name or leave the key out")
        bad = next((ch for ch in value if unicodedata.category(ch) == "Cc"), None)
        if bad is not None:
            raise self.error(where + ("name",), f"name {value!r} holds the control character U+{ord(bad):04X}; "
                                                f"names are one line of visible text")
        return value

    def entries(self, table: dict, where: tuple) -> list[tuple[str, Any, tuple]]:
        """(raw key, value, where) of a table's options, a ``kafka`` table's Kafka keys read
        as the options they set (``kafka.min.insync.replicas`` names ``min-isr``)."""
        out = []
        for raw, value in table.items():
            if raw != "kafka":
                out.append((raw, value, where + (raw,)))
                continue
            if not isinstance(value, dict):
                raise self.error(where + (raw,), 'kafka must be a table: kafka = { "min.insync.replicas" = 2 }')
            for key, given in value.items():
                at = where + (raw, key)
                try:
                    read = [kafka_config.read_one(key, v, "kafka") for v in (given if isinstance(given, list) else [given])]
                except UsageFailure as e:
                    raise self.error(at, str(e)) from None
                if read[0] is not None:  # a key the model leaves aside is left out
                    option = next(k for k, o in self.options.items() if o.name == read[0][0])
                    values = [v for _, v in read]
                    out.append((option, values if isinstance(given, list) else values[0], at))
        return out

    def defaults(self, table: dict) -> tuple[dict[str, Any], Any]:
        values: dict[str, Any] = {}
        for raw, value, at in self.entries(table, ("defaults",)):
            if raw == "properties":
                continue
            key = self.option_key(raw, at, "[defaults]", ("properties", "kafka"), values)
            if isinstance(value, list):
                raise self.error(at, f"defaults take one value each, not a list: "
                                     f"put the matrix {raw} = [...] in a [[check]]")
            values[key] = self.convert(key, value, at)
        return values, table.get("properties")

    def option_key(self, raw: str, at: tuple, place: str, extra: tuple, seen: dict) -> str:
        """The suite key for ``raw`` (underscores read as dashes), or an error listing what is
        allowed, at ``at`` (the key's place in the file)."""
        key = raw.replace("_", "-")
        if key in COMMAND_LINE_ONLY:
            raise self.error(at, f"{raw} is not set per check: {COMMAND_LINE_ONLY[key]}")
        if key not in self.options:
            allowed = list(extra) + list(self.options)
            raise self.error(at, f"unknown key {raw!r} in {place}{_suggest(key, allowed)}; "
                                 f"allowed: {', '.join(allowed)}")
        if key in seen:
            raise self.error(at, f"{key} is given twice in {place}: as {key}, as {key.replace('-', '_')} "
                                 f"or by its Kafka key in kafka = {{...}}")
        return key

    def convert(self, key: str, value: Any, where: tuple) -> Any:
        """A TOML value through check-model's own option: its type, choices and callback."""
        opt = self.options[key]
        kind = opt.type
        if opt.is_flag:
            ok = isinstance(value, bool)
            wanted = "true or false"
        elif isinstance(kind, click.types.IntParamType):
            ok = isinstance(value, int) and not isinstance(value, bool)
            wanted = "a whole number"
        elif isinstance(kind, click.Choice):
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            ok = isinstance(value, str)
            wanted = "one of " + ", ".join(repr(c) for c in kind.choices)
        else:
            ok = isinstance(value, (str, int, float)) and not isinstance(value, bool)
            value = str(value) if ok else value
            wanted = "a string"
        if not ok:
            raise self.error(where, f"{key} must be {wanted}, not {_show(value)}")
        try:
            return opt.process_value(self.ctx, value)
        except click.BadParameter as e:
            raise self.error(where, f"{key}: {e.message}") from None

    # ---- one [[check]] table ----------------------------------------------------

    def expand(self, i: int, table: dict, defaults: dict, default_props: Any) -> list[SuiteCheck]:
        where = ("check", i)
        scalars: dict[str, Any] = {}
        axes: dict[str, list[Any]] = {}
        raw_of: dict[str, str] = {}
        place = f"check {table['name']!r}" if isinstance(table.get("name"), str) else f"[[check]] number {i + 1}"
        for raw, value, at in self.entries(table, where):
            if raw in CHECK_KEYS:
                continue
            key = self.option_key(raw, at, place, CHECK_KEYS, raw_of)
            raw_of[key] = raw
            if isinstance(value, list):
                if not value:
                    raise self.error(at, f"{raw} = []: a matrix list needs at least one value")
                converted = [self.convert(key, v, at) for v in value]
                if len(set(map(repr, converted))) != len(converted):
                    raise self.error(at, f"{raw} lists a value twice")
                axes[key] = converted
            else:
                scalars[key] = self.convert(key, value, at)
        name = self.name(table, where, default="")
        description = self.text(table, "description", where, default="")
        expect = self.expect_table(table.get("expect", {}), where + ("expect",))
        whens = self.when_blocks(table.get("when", []), where, place)
        matched = [False] * len(whens)
        self.count_checks(where, place, axes)
        checks = []
        for combo in itertools.product(*axes.values()):
            chosen = dict(zip(axes, combo))
            values = {**defaults, **scalars, **chosen}
            suffix = " [" + ", ".join(f"{k}={_show(v)}" for k, v in chosen.items()) + "]" if chosen else ""
            run = self.check_run(values, set(scalars) | set(axes), where, raw_of, place + suffix)
            merged = dict(expect)
            for j, (conditions, when_expect) in enumerate(whens):
                if all(self.value(values, k) in allowed for k, allowed in conditions.items()):
                    matched[j] = True
                    merged.update(when_expect)
            label = name + suffix if name else config_slug(run.config) + (f"-{run.engine}" if run.engine != "bfs" else "")
            props_value = table.get("properties", default_props)
            props_where = where + ("properties",) if "properties" in table else ("defaults", "properties")
            run = replace(run, properties=self.properties(run, props_value, props_where, merged, place + suffix))
            expected = {p: read_expected(p, text, self.path, line) for p, (text, line) in merged.items()}
            checks.append(SuiteCheck(label, run, expected, line_of(self.lines, where),
                                     tuple(chosen.items()), description))
        for j, hit in enumerate(matched):
            if not hit:
                raise self.error(where + ("when", j), f"this [[check.when]] matches no configuration of {place}")
        return checks

    def count_checks(self, where: tuple, place: str, axes: dict[str, list]) -> None:
        """Refuse a suite whose lists expand past MAX_CHECKS, counted before any is expanded."""
        size = 1
        for values in axes.values():
            size *= len(values)
        self.counted += size
        if self.counted > MAX_CHECKS:
            lengths = " x ".join(str(len(v)) for v in axes.values()) or "1"
            raise self.error(where, f"{place} expands into {size:,} checks ({lengths}), which takes the suite past "
                                    f"{MAX_CHECKS:,} checks, the most a suite may hold: split it or shorten its lists")

    def value(self, values: dict, key: str) -> Any:
        return values.get(key, self.base[self.options[key].name])

    def check_run(self, values: dict, explicit_keys: set, where: tuple, raw_of: dict, label: str) -> CheckRun:
        params = dict(self.base)
        for key, value in values.items():
            params[self.options[key].name] = value
        params["properties"] = ()
        params["trace_dir"] = None
        explicit = {self.options[k].name for k in explicit_keys}
        from .check_model import check_run_from

        try:
            return check_run_from(params, explicit)
        except UsageFailure as e:
            message = re.sub(r"--([a-z][a-z-]*)", r"\1", str(e))
            named = re.search(r"--([a-z][a-z-]*)", str(e))
            key = named.group(1) if named else ""
            at = where + (raw_of[key],) if key in raw_of else ("defaults", key) if key in values else where
            raise self.error(at, f"{label}: {message}") from None

    def expect_table(self, table: Any, where: tuple) -> dict[str, tuple[str, int]]:
        if not isinstance(table, dict):
            raise self.error(where, 'expect must be a table: expect = { property = "holds" }')
        out = {}
        for prop, text in table.items():
            if prop not in BY_NAME:
                raise self.error(where + (prop,), f"unknown property {prop!r} in expect{_suggest(prop, NAMES)}; "
                                                  f"known: {', '.join(NAMES)}")
            if not isinstance(text, str):
                raise self.error(where + (prop,), f"expect {prop} = {_show(text)}: a verdict is a string such as "
                                                  f'"holds" or "violated-within 9"')
            out[prop] = (text, line_of(self.lines, where + (prop,)))
        return out

    def when_blocks(self, blocks: Any, where: tuple, place: str) -> list[tuple[dict, dict]]:
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            raise self.error(where + ("when",), "when must be an array of tables: [[check.when]]")
        out = []
        for j, block in enumerate(blocks):
            at = where + ("when", j)
            conditions: dict[str, set] = {}
            for raw, value in block.items():
                if raw == "expect":
                    continue
                key = self.option_key(raw, at + (raw,), f"[[check.when]] of {place}", ("expect",), conditions)
                values = value if isinstance(value, list) else [value]
                conditions[key] = {self.convert(key, v, at + (raw,)) for v in values}
            if not conditions:
                raise self.error(at, "a [[check.when]] needs at least one condition such as acks = \"1\"")
            if "expect" not in block:
                raise self.error(at, "a [[check.when]] needs an expect table")
            out.append((conditions, self.expect_table(block["expect"], at + ("expect",))))
        return out

    def properties(self, run: CheckRun, value: Any, where: tuple, merged: dict, label: str) -> tuple[str, ...]:
        if value is None:
            names = list(merged)
        elif value == "all":
            names = [p.name for p in select(run.config)]
            names += [p for p in merged if p not in names]  # so that select says why it does not apply
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            names = list(value)
            for name in names:
                if name not in BY_NAME:
                    raise self.error(where, f"unknown property {name!r} in properties{_suggest(name, NAMES)}; "
                                            f"known: {', '.join(NAMES)}")
            for prop, (_, line) in merged.items():
                if prop not in names:
                    raise SuiteError(f"{self.path}:{line}: {label}: expects {prop} but its properties list "
                                     f"does not name it; add it to properties")
        else:
            raise self.error(where, 'properties must be a list of property names, or "all"')
        if not names:
            raise self.error(where[:2], f"{label} checks nothing: give expect = {{ property = \"holds\" }}")
        try:
            select(run.config, names, run.engine)
        except UnknownProperty as e:
            bad = re.search(r"'([^']+)'", str(e))
            line = merged[bad.group(1)][1] if bad and bad.group(1) in merged else line_of(self.lines, where)
            words = str(e).replace("--", "")
            raise SuiteError(f"{self.path}:{line}: {label}: {words}") from None
        return tuple(dict.fromkeys(names))
