"""The fuzz suite of issue 17: hostile command lines and structure-aware edits of real files.

Every test drives a real command (check-model, check-suite, view-trace) through
``fuzztools.run`` and asserts the exit-code contract of ``cli/common.py``: exit 0, 1, 2
or 3 only; exactly one line on stderr with exit 2; no traceback; nothing created,
changed or removed outside the outputs the command line names; bounded time and memory
(every run is given ``--time-limit`` and ``--max-memory 1G``, or is of a model too small
to need them). Three inputs must always be refused (exit 2): an option given an empty
value, a number written with digits other than 0-9, and an integer option's value that
is not the digits 0-9 alone (``+3``, `` 3``, ``3\\n``, ``-0``, ``2.0``). And view-trace
must show only a trace file that is exactly what isrcheck writes for the trace it shows
(``to_itf`` of its replay): an edited trace is refused.

The files are real: traces, checkpoints and suites are written by the commands on tiny
configurations (the suites are the examples/ suites cut down to tiny checks), then parsed
and edited where their structure is: a value swapped for one of another type, a huge or
negative number, non-ASCII digits, NUL, nesting thousands deep, a key deleted or renamed,
lists reordered or repeated, a checkpoint's manifest resealed with a correct checksum,
then the bytes cut or spliced.

Inputs per test in CI: ``CI_EXAMPLES`` (options 120, limits 40, paths 60, view 120,
suite 60, checkpoint 60, Spark checkpoint 30: 490 generated inputs) plus 74 explicit
``@example`` cases (the bugs of issues 17 and 55 and those this suite found), so 564
runs, and 7 more that write the seed files. Settings: ``derandomize=True`` and no example
database, so CI tries the same inputs on every run (derived from each test's source:
editing a test changes its inputs). About 75 s on a 2-core machine when nothing fails (a
Spark seed checkpoint, written by a real Spark run, is about 15 s of it). An explicit
example that fails stops its test before the generated inputs. A longer, random run (a new seed each
time; Hypothesis prints the failing input)::

    ISRCHECK_FUZZ_EXAMPLES=2000 pytest tests/test_fuzz.py

sets every test's number of generated inputs. ``ISRCHECK_FUZZ_RUN_SECONDS`` (20) is the
wall-clock bound of one run and ``ISRCHECK_FUZZ_MEMORY_GIB`` (3) its memory bound.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from . import fuzztools as ft
from .fuzztools import Raw

FUZZ_EXAMPLES = int(os.environ.get("ISRCHECK_FUZZ_EXAMPLES", "0") or 0)
CI_EXAMPLES = {
    "options": 120,
    "limits": 40,
    "paths": 60,
    "view": 120,
    "suite": 60,
    "checkpoint": 60,
    "spark_checkpoint": 30,
}
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TINY = ["--max-records", "1", "--max-leader-epoch", "1"]
LIMITS = ["--time-limit", "5s", "--max-memory", "1G"]


def fuzz(name: str):
    """Hypothesis settings: CI's fixed, derandomized count, or ISRCHECK_FUZZ_EXAMPLES random inputs."""
    return settings(
        max_examples=FUZZ_EXAMPLES or CI_EXAMPLES[name],
        deadline=None,
        derandomize=not FUZZ_EXAMPLES,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=True,
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# ---- the sandbox of one run ---------------------------------------------------------------------------------
def populate(work: Path) -> None:
    """What paths on a fuzzed command line may name: files, folders, a FIFO, links good and bad."""
    (work / "file.txt").write_text("a file\n")
    (work / "dir").mkdir()
    (work / "full-dir").mkdir()
    (work / "full-dir" / "keep.txt").write_text("keep\n")
    os.mkfifo(work / "fifo")
    for name, target in (("link-file", "file.txt"), ("link-dir", "dir"), ("link-fifo", "fifo"),
                         ("dangling", "missing"), ("loop", "loop")):
        os.symlink(target, work / name)


def run_checked(base: Path, command: str, args: list[str], outputs: list[tuple[str, bool]], *,
                prepare=None, seconds=None, env: dict | None = None, then=None) -> ft.Outcome:
    """Run ``command`` in a fresh sandbox and check the contract, then ``then(outcome, box)``, a
    test's own oracle; the sandbox is removed. ``prepare(box)`` puts inputs in the sandbox and
    returns the arguments that name them (they go first); ``seconds(args)`` is the time bound."""
    box = ft.Sandbox(base)
    try:
        populate(box.work)
        args = [*((prepare(box) if prepare is not None else None) or []), *args]
        bound = seconds(args) if callable(seconds) else seconds
        box.snapshot()
        out = ft.run(command, args, box.work, home=box.home, tmpdir=box.tmp, seconds=bound, env=env)
        note(out.describe())
        ft.check_contract(out, box, outputs)
        check_no_crash_report(out)
        if then is not None:
            then(out, box)
        return out
    finally:
        box.cleanup()


PROGRAMMING_ERRORS = ("IndexError", "KeyError", "TypeError", "AttributeError", "ValueError", "AssertionError",
                      "ZeroDivisionError", "RecursionError", "UnboundLocalError", "NameError", "OverflowError",
                      "UnicodeEncodeError", "UnicodeDecodeError", "NotImplementedError")


class CheckCrashed(ft.ContractBroken):
    """check-suite reported a check that 'could not run' because of a programming error (a traceback in one line)."""


def check_no_crash_report(out: ft.Outcome) -> None:
    m = re.search(r"could not run: (\w+):", out.stdout + out.stderr)
    if m and m.group(1) in PROGRAMMING_ERRORS:
        raise CheckCrashed(f"a check crashed with {m.group(1)}:\n{out.describe()}")


def outputs_of(args: list[str], defaults: dict[str, str], folders: set[str]) -> list[tuple[str, bool]]:
    """The outputs a command line names: each output option's value (or its default)."""
    values = ft.effective_values(args)
    out = []
    for option, default in defaults.items():
        for value in values.get(option, [default] if default is not None else []):
            out.append((value, option in folders))
    return out


MODEL_OUTPUTS = {"--trace-dir": "traces-out", "--junit": None, "--checkpoint": None, "--resume": None}
MODEL_FOLDERS = {"--trace-dir", "--checkpoint", "--resume"}


def model_outputs(args: list[str]) -> list[tuple[str, bool]]:
    return outputs_of(args, MODEL_OUTPUTS, MODEL_FOLDERS)


def must_refuse(args: list[str]):
    """The oracle of the two inputs no command accepts."""
    why = ft.refusal_expected(args)

    def check(out: ft.Outcome, box: ft.Sandbox) -> None:
        if why and ft.accepted(out):
            raise ft.NotRefused(f"{why}, yet the run was accepted:\n{out.describe()}")

    return check


# ---- check-model: options ------------------------------------------------------------------------------------
PATH_WORDS = ["", ".", "..", "out", "out/", "a/b/c", "file.txt", "file.txt/sub", "dir", "full-dir", "fifo",
              "link-file", "link-dir", "link-fifo", "dangling", "loop", "loop/x", "x" * 255, "x" * 256, "x" * 300,
              "/".join(["y" * 200] * 25), "trac\u00e9s", "\u65e5\u672c", "a b", "a\nb", "-x", "~/out", "./",
              "dir/../out", "\u202eevil", " ", "out\t", "new/dir/out.xml", "out.xml"]
FOLDER_ONLY_WORDS = ["/dev/null", "/dev/null/x"]  # never as a file output: a writer might replace the device


def path_words(folder: bool) -> st.SearchStrategy[str]:
    return st.sampled_from(PATH_WORDS + (FOLDER_ONLY_WORDS if folder else []))


def option_pairs() -> st.SearchStrategy[list[str]]:
    """One option with a value, a flag, a path option, or something that is no option at all."""
    valued = st.sampled_from(ft.VALUE_OPTIONS).flatmap(lambda o: ft.option_value(o).map(lambda v: [o, v]))
    equals = st.sampled_from(ft.VALUE_OPTIONS).flatmap(lambda o: ft.option_value(o).map(lambda v: [f"{o}={v}"]))
    flag = st.sampled_from(ft.FLAGS).map(lambda f: [f])
    folder = st.sampled_from(["--trace-dir", "--checkpoint", "--resume"]).flatmap(
        lambda o: path_words(True).map(lambda v: [o, v]))
    junit = path_words(False).map(lambda v: ["--junit", v])
    junk = st.sampled_from([["--rff", "2"], ["extra"], ["--rf"], ["-h"], ["--"], ["--engine", "bfs", "x"],
                            ["--checkpoint-every", "0.01s", "--checkpoint", "ck"]])
    return st.one_of(valued, valued, valued, equals, flag, flag, folder, junit, junk)


@st.composite
def model_command_lines(draw) -> list[str]:
    """A tiny check with up to five fuzzed options; the limits come last, so they hold."""
    start = draw(st.sampled_from([["--rf", "2", *TINY], ["--core", "--rf", "2", *TINY], ["--rf", "3", *TINY],
                                  ["--rf", "2", *TINY, "--crashes", "0"]]))
    fuzzed = [w for pair in draw(st.lists(option_pairs(), min_size=1, max_size=5)) for w in pair]
    return [*start, *fuzzed, "--trace-dir", "traces", *LIMITS] if draw(st.booleans()) else \
        [*start, *fuzzed, *LIMITS]


@fuzz("options")
@given(args=model_command_lines())
@example(args=["--rf", "\u0663", *LIMITS])
@example(args=["--rf", "\uff12", *LIMITS])
@example(args=["--rf", "+2", *TINY, *LIMITS])
@example(args=["--crashes", " 1", *TINY, *LIMITS])
@example(args=["--max-records", "1\n", *LIMITS])
@example(args=["--max-leader-epoch", "-0", *TINY, *LIMITS])
@example(args=["--max-depth", "0", *TINY, *LIMITS])
@example(args=["--workers", "1000", *TINY, *LIMITS])
@example(args=["--workers", "1000", "--kernel", "scalar", *TINY, *LIMITS])
@example(args=["--trace-dir", "", *TINY, *LIMITS])
@example(args=["--checkpoint", "", *TINY, *LIMITS])
@example(args=["--junit", "", *TINY, *LIMITS])
@example(args=["--engine", "spark", "--spark-master", "", *TINY, *LIMITS])
@example(args=["--trace-dir", "/dev/null", "--rf", "2", *TINY, *LIMITS])
@example(args=["--trace-dir", "x" * 300, "--rf", "2", *TINY, *LIMITS])
@example(args=["--rf", "6", "--crashes", "4", "--power-loss", "6", *TINY, *LIMITS])
@example(args=["--rf", "6", "--max-records", "8", "--max-leader-epoch", "8", *LIMITS])
@example(args=["--rf", "4", "--max-records", "4", "--max-leader-epoch", "1", *LIMITS])
@example(args=["--engine", "simulate", "--walks", "1", *TINY, *LIMITS])  # issue 55: an IndexError
@example(args=["--engine", "simulate", "--walks", "3", "--seed", "1", "--rf", "2", *TINY, *LIMITS])
@example(args=["--engine", "simulate", "--walks", "2", "--no-swarm", *TINY, *LIMITS])
@example(args=["--checkpoint", "full-dir", *TINY, *LIMITS])  # a folder that holds something else
@example(args=["--checkpoint", "fifo", *TINY, *LIMITS])
@example(args=["--resume", "full-dir", *TINY, *LIMITS])
def test_check_model_options(base, args):
    run_checked(base, "check-model", args, model_outputs(args), then=must_refuse(args))


# ---- check-model: the limits themselves, on a model too small to need them ---------------------------------------
@st.composite
def limit_command_lines(draw) -> list[str]:
    tiny = ["--rf", "2", *TINY, "--crashes", "0", "--trace-dir", "traces"]
    engine = draw(st.sampled_from([[], ["--kernel", "scalar"], ["--kernel", "scalar", "--workers", "2"],
                                   ["--workers", "2"], ["--engine", "z3", "--time-limit", "3s"]]))
    words = []
    for option in draw(st.lists(st.sampled_from(["--time-limit", "--max-memory", "--checkpoint-every",
                                                 "--prove-timeout"]), min_size=1, max_size=3)):
        words += [option, draw(ft.option_value(option))]
    if draw(st.booleans()):
        words += ["--checkpoint", "ck"]
    if engine[:2] == ["--engine", "z3"]:  # Z3 needs its time limit: it would go on proving
        words = [w for i, w in enumerate(words) if w != "--time-limit" and (i == 0 or words[i - 1] != "--time-limit")]
        words = [w for w in words if w not in ("--checkpoint", "ck")]
    return [*tiny, *engine, *words] if engine[:2] != ["--engine", "z3"] else [*tiny, *words, *engine]


@fuzz("limits")
@given(args=limit_command_lines())
@example(args=["--rf", "2", *TINY, "--max-memory", "\uff12G"])
@example(args=["--rf", "2", *TINY, "--max-memory", "99999999999999999999G"])
@example(args=["--rf", "2", *TINY, "--max-memory", "9" * 400])
@example(args=["--rf", "2", *TINY, "--time-limit", "9" * 400 + "h"])
@example(args=["--rf", "2", *TINY, "--checkpoint", "ck", "--checkpoint-every", "99999999999999999999h"])
def test_check_model_limits(base, args):
    run_checked(base, "check-model", args, model_outputs(args), then=must_refuse(args))


# ---- check-model: where it writes ------------------------------------------------------------------------------
@st.composite
def output_command_lines(draw) -> list[str]:
    """A tiny check (one that violates a property, so traces are written) and hostile output paths."""
    args = ["--core", "--protocol", "hw-truncation", "--rf", "2", *TINY, *LIMITS]
    for option, folder in (("--trace-dir", True), ("--junit", False), ("--checkpoint", True), ("--resume", True)):
        if draw(st.integers(0, 2)) == 0:
            args += [option, draw(path_words(folder) | st.just("ck"))]
    if draw(st.booleans()):
        args += ["--format", "json"]
    return args


def checkpoint_for_paths(box: ft.Sandbox) -> None:
    seed = checkpoint_seed("paths")
    shutil.copytree(seed, box.work / "ck", symlinks=True)


@fuzz("paths")
@given(args=output_command_lines())
@example(args=["--core", "--protocol", "hw-truncation", "--rf", "2", *TINY, *LIMITS, "--junit", "dir"])
@example(args=["--core", "--protocol", "hw-truncation", "--rf", "2", *TINY, *LIMITS, "--junit", "fifo"])
@example(args=["--core", "--protocol", "hw-truncation", "--rf", "2", *TINY, *LIMITS, "--trace-dir", "file.txt"])
@example(args=["--core", "--protocol", "hw-truncation", "--rf", "2", *TINY, *LIMITS, "--trace-dir", "a\nb",
               "--junit", "x" * 300])
@example(args=["--core", "--protocol", "hw-truncation", "--rf", "2", *TINY, *LIMITS, "--resume", "ck",
               "--checkpoint", "ck"])
def test_check_model_output_paths(base, args):
    run_checked(base, "check-model", args, model_outputs(args), prepare=checkpoint_for_paths,
                then=must_refuse(args))


# ---- seeds: real files written by the commands -----------------------------------------------------------------
@functools.cache
def seeds_dir() -> Path:
    """Where the seeds are written: made while Hypothesis draws, so named without ``random``."""
    return ft.scratch("seeds")


TRACE_RUNS = {
    "core": ["--core", "--protocol", "hw-truncation", "--rf", "2", *TINY, "--property", "weak-isr"],
    "kafka": ["--rf", "2", "--acks", "1", *TINY, "--property", "acked-survive", "--property", "write-after-crash"],
}
TRACE_SEEDS = ["core/weak-isr-counterexample", "kafka/acked-survive-counterexample",
               "kafka/write-after-crash-witness"]


@functools.cache
def trace_seed(name: str) -> bytes:
    """The bytes of a trace check-model wrote: ``run/property-kind``."""
    run_name, _, tail = name.partition("/")
    work = seeds_dir() / f"traces-{run_name}"
    if not work.exists():
        work.mkdir()
        out = ft.run("check-model", [*TRACE_RUNS[run_name], "--trace-dir", "t", *LIMITS], work)
        assert out.code == 1, out.describe()
    found = sorted((work / "t").glob(f"*-{tail}.itf.json"))
    assert len(found) == 1, (name, list((work / "t").iterdir()))
    return found[0].read_bytes()


CHECKPOINT_RUNS = {
    "paths": ["--core", "--protocol", "hw-truncation", "--rf", "2", *TINY],
    "vector": ["--core", "--rf", "2", *TINY],
    "scalar": ["--core", "--rf", "2", *TINY, "--kernel", "scalar"],
    "kafka": ["--rf", "2", *TINY, "--acks", "1", "--continue"],
}


@functools.cache
def checkpoint_seed(name: str) -> Path:
    """A checkpoint folder check-model wrote (the whole search, saved at its end)."""
    work = seeds_dir() / f"checkpoint-{name}"
    work.mkdir()
    out = ft.run("check-model", [*CHECKPOINT_RUNS[name], "--checkpoint", "ck", "--trace-dir", "t", *LIMITS], work)
    assert out.code in (0, 1) and (work / "ck" / "manifest.json").exists(), out.describe()
    return work / "ck"


def suite_seed_texts() -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted(EXAMPLES.glob("*.toml"))}


SUITE_SEEDS = sorted(p.stem for p in EXAMPLES.glob("*.toml"))
BOUND_KEYS = {"max-records", "max-leader-epoch", "log-size", "time-limit", "max-memory"}
CHECK_LIMITS = {"time-limit": "3s", "max-memory": "1G"}


def _key(k: str) -> str:
    return str(k).replace("_", "-")


def with_limits(doc: Any) -> Any:
    """Every [[check]] table starts with its time and memory limits, whatever an edit did to them."""
    if isinstance(doc, dict) and isinstance(doc.get("check"), list):
        for i, table in enumerate(doc["check"]):
            if isinstance(table, dict):
                rest = {k: v for k, v in table.items() if _key(k) not in CHECK_LIMITS}
                doc["check"][i] = {**CHECK_LIMITS, **rest}
    return doc


def _clamp(value: Any, key: str) -> Any:
    if isinstance(value, list):
        kept = []
        for v in value:
            v = _clamp(v, key)
            if v not in kept:
                kept.append(v)
        return kept[:2]
    if key == "rf" and isinstance(value, int):
        return min(value, 3)
    return value


@functools.cache
def suite_seed(name: str) -> str:
    """An examples/ suite cut down to tiny checks (at most two), each with its limits; valid."""
    from isrcheck.cli.suite import parse_suite

    doc = tomllib.loads(suite_seed_texts()[name])
    defaults = {k: v for k, v in doc.get("defaults", {}).items() if _key(k) not in BOUND_KEYS}
    doc["defaults"] = {**defaults, "max-records": 1, "max-leader-epoch": 1}
    checks = []
    for table in doc["check"]:
        table = {k: v if k in ("name", "description", "properties", "expect", "when") else _clamp(v, _key(k))
                 for k, v in table.items() if _key(k) not in BOUND_KEYS}
        axes = [k for k, v in table.items() if isinstance(v, list) and k not in ("properties", "when")]
        for k in axes[2:]:  # two axes of two values at most: four tiny checks
            table[k] = table[k][0]
        for attempt in (table, {k: v for k, v in table.items() if k != "when"}):
            text = ft.toml_dumps(with_limits({**doc, "check": [attempt]}))
            try:
                parse_suite(text, Path(f"{name}.toml"))
            except Exception:  # noqa: BLE001 - this check does not survive the cut; try the next
                continue
            checks.append(attempt)
            break
        if len(checks) == 2:
            break
    assert checks, f"no check of {name} survives being made tiny"
    text = ft.toml_dumps(with_limits({**doc, "check": checks}))
    parse_suite(text, Path(f"{name}.toml"))
    return text


# ---- view-trace ------------------------------------------------------------------------------------------------
TRACE_WORDS = ["hw-truncation", "kip-101", "kip-279", "kip-320", *ft.PROPERTIES, "always", "sometimes", "NONE",
               "ITF", "isrcheck", "2", "3.9", "all", "1", "0", "os", "always"]
TRACE_KEYS = ["#meta", "#set", "#map", "#bigint", "alive", "index", "action", "params", "config", "rf", "min_isr",
              "core", "property", "replicaLog", "replicaState", "quorumState", "vars", "states", "x", ""]
SPECIAL_TRACE_FILES = ["dir", "fifo", "/dev/zero", "/dev/null", "/dev/urandom", "missing", "empty", "sparse-65M",
                       "loop", "../../outside/sentinel.txt", "link-to-trace", "not-utf8"]


@dataclass
class TraceCase:
    seed: str
    edits: list = field(default_factory=list)
    byte_edits: list = field(default_factory=list)
    special: str = ""  # instead of the edited trace: one of SPECIAL_TRACE_FILES
    options: list = field(default_factory=list)


def trace_focus(doc: Any) -> list[tuple]:
    last = len(doc["states"]) - 1
    return [("#meta",), ("vars",), ("states", 0, "#meta"), ("states", 1, "#meta"), ("states", last)]


def view_options() -> st.SearchStrategy[list[str]]:
    group = st.one_of(
        st.sampled_from(["text", "json", "JSON", ""]).map(lambda f: ["--format", f]),
        st.just(["--changed-only"]), st.just(["--color"]), st.just(["--no-color"]),
        path_words(False).map(lambda p: ["--html", p]), st.just(["--html", "page.html"]),
        st.sampled_from(["60", "100", "400", "59", "401", "0", "-1", "\u0661\u0660\u0660", "", "1e2"]).map(
            lambda w: ["--width", w]),
    )
    return st.lists(group, max_size=2).map(lambda gs: [w for g in gs for w in g])


@st.composite
def trace_cases(draw) -> TraceCase:
    seed = draw(st.sampled_from(TRACE_SEEDS))
    options = draw(view_options())
    if draw(st.integers(0, 9)) == 0:
        return TraceCase(seed, special=draw(st.sampled_from(SPECIAL_TRACE_FILES)), options=options)
    doc = json.loads(trace_seed(seed))
    edits = draw(ft.document_edits(doc, trace_focus(doc), TRACE_WORDS, TRACE_KEYS))
    return TraceCase(seed, edits, draw(ft.byte_edits(max_edits=1)) if draw(st.integers(0, 3)) == 0 else [],
                     options=options)


def write_trace(case: TraceCase, box: ft.Sandbox) -> str:
    """Put the case's file in the sandbox; the argument that names it."""
    data = trace_seed(case.seed)
    path = box.inputs / "trace.itf.json"
    if case.special in ("", "link-to-trace"):
        doc = ft.apply_edits(json.loads(data), case.edits)
        path.write_bytes(ft.apply_byte_edits(ft.json_dumps(doc).encode("utf-8", "surrogatepass"), case.byte_edits))
        if case.special == "link-to-trace":
            os.symlink(path, box.work / "link.json")
            return "link.json"
        return str(path)
    if case.special == "empty":
        path.write_bytes(b"")
    elif case.special == "not-utf8":
        path.write_bytes(data.replace(b'"states"', b'"st\xe4tes"'))
    elif case.special == "sparse-65M":
        with open(path, "wb") as f:
            f.truncate(65 << 20)
    elif case.special == "missing":
        return str(box.inputs / "missing.json")
    else:
        return case.special
    return str(path)


def canonical_oracle(path_arg: str):
    """view-trace showed the file: it must be exactly what to_itf writes for the trace it shows."""

    def check(out: ft.Outcome, box: ft.Sandbox) -> None:
        if out.code != 0 or "--help" in out.args or "-h" in out.args:
            return
        from isrcheck.traces import itf
        from isrcheck.traces.view_data import load_checked

        path = Path(path_arg) if os.path.isabs(path_arg) else box.work / path_arg
        if not path.is_file():
            return
        try:
            given_doc = json.loads(path.read_bytes(), object_pairs_hook=pairs_once)
        except ValueError as e:
            raise ft.EditedTraceAccepted(f"view-trace showed a file that is not plain JSON ({e}):\n{out.describe()}") from None
        shown = itf.to_itf(load_checked(path))
        where = first_difference(unordered(given_doc), unordered(json.loads(json.dumps(shown))))
        if where is not None:
            raise ft.EditedTraceAccepted(f"view-trace showed an edited trace: {where}\n{out.describe()}")

    return check


def pairs_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs, each key once (``json`` would keep a repeated key's last value unseen)."""
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a key given twice among {keys[:8]}")
    return dict(pairs)


def unordered(doc: Any) -> Any:
    """ITF's sets and maps have no order: their elements (map entries) sorted, duplicates kept."""
    if isinstance(doc, dict):
        out = {k: unordered(v) for k, v in doc.items()}
        for k in ("#set", "#map"):
            if isinstance(out.get(k), list):
                out[k] = sorted(out[k], key=lambda x: json.dumps(x, sort_keys=True))
        return out
    if isinstance(doc, list):
        return [unordered(x) for x in doc]
    return doc


def first_difference(a: Any, b: Any, path: tuple = ()) -> str | None:
    """Where two JSON values differ, types included (1, 1.0 and true are three values); None if equal."""
    if type(a) is not type(b):
        return f"at {list(path)}: {type(a).__name__} {str(a)[:60]!r} where isrcheck writes {str(b)[:60]!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in b:
                return f"at {list(path)}: key {k!r} that isrcheck does not write"
            if k not in a:
                return f"at {list(path)}: no key {k!r}"
            d = first_difference(a[k], b[k], path + (k,))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"at {list(path)}: {len(a)} items where isrcheck writes {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, path + (i,))
            if d:
                return d
        return None
    if a != b:
        return f"at {list(path)}: {str(a)[:60]!r} where isrcheck writes {str(b)[:60]!r}"
    return None


def view_outputs(args: list[str]) -> list[tuple[str, bool]]:
    return outputs_of(args, {"--html": None}, set())


@fuzz("view")
@given(case=trace_cases())
@example(case=TraceCase(TRACE_SEEDS[0], special="/dev/zero"))
@example(case=TraceCase(TRACE_SEEDS[0], special="fifo"))
@example(case=TraceCase(TRACE_SEEDS[0], special="sparse-65M"))
@example(case=TraceCase(TRACE_SEEDS[0], [("set", ("states", 1, "#meta", "index"), ft.deep_list(100000))]))
@example(case=TraceCase(TRACE_SEEDS[0], [("set", ("states", 1, "#meta", "index"), Raw("1" * 5000))]))
@example(case=TraceCase(TRACE_SEEDS[0], [("set", ("#meta", "isrcheck", "config", "min_isr"), 5)]))
@example(case=TraceCase(TRACE_SEEDS[1], [("set", ("#meta", "isrcheck", "config", "min_isr"), 5)]))
@example(case=TraceCase(TRACE_SEEDS[1], [("reorder", ("vars",), "reverse")]))
@example(case=TraceCase(TRACE_SEEDS[1], [("set", ("states", 2, "#meta", "index"), 7)]))
@example(case=TraceCase(TRACE_SEEDS[1], [("set", ("#meta", "isrcheck", "property"), "committed-survive")],
                        options=["--format", "json"]))
@example(case=TraceCase(TRACE_SEEDS[2], [("set", ("#meta", "isrcheck", "expectation"), "always")]))
@example(case=TraceCase(TRACE_SEEDS[1], [("set", ("states", 0, "nextRecordId"), {"#bigint": "\u0660"})]))
@example(case=TraceCase(TRACE_SEEDS[2], [("delete", ("#meta", "isrcheck", "expectation"))]))
@example(case=TraceCase(TRACE_SEEDS[0], [("delete", ("#meta", "isrcheck", "property"))]))
@example(case=TraceCase(TRACE_SEEDS[0], [("delete", ("#meta", "isrcheck", "doc"))]))
@example(case=TraceCase(TRACE_SEEDS[0], [("twice", ("states", 1, "nextLeaderEpoch"), 99)]))
def test_view_trace(base, case):
    note(f"case: {case!r}")

    def oracles(out: ft.Outcome, box: ft.Sandbox) -> None:
        canonical_oracle(out.args[0])(out, box)
        must_refuse(list(case.options))(out, box)

    run_checked(base, "view-trace", list(case.options), view_outputs(case.options),
                prepare=lambda box: [write_trace(case, box)], then=oracles)


# ---- check-suite -----------------------------------------------------------------------------------------------
def suite_option_keys() -> list[str]:
    from isrcheck.cli.suite import option_keys

    return sorted(option_keys())


SUITE_WORDS = [*ft.PROPERTIES, "holds", "violated", "witnessed", "never", "violated-within 3", "witnessed-within 9",
               "all", "1", "0", "3.9", "2.1", "kip-101", "hw-truncation", "vector", "scalar", "z3", "spark", "bfs",
               "unbounded", "local[1]", "5s", "1G"]
SUITE_KEYS = ["name", "description", "defaults", "check", "properties", "expect", "when", "rf", "min-isr",
              "min_isr", "acks", "crashes", "engine", "kernel", "workers", "max-depth", "core", "protocol",
              "kafka-version", "trace-dir", "format", "checkpoint", "resume", "junit", "view", "progress",
              "property", "spark-master", "prove", "", " ", "a.b", "\u540d\u524d", "max-records"]


@dataclass
class SuiteCase:
    seed: str
    edits: list = field(default_factory=list)
    byte_edits: list = field(default_factory=list)
    options: list = field(default_factory=list)
    github: bool = False


def suite_options() -> st.SearchStrategy[list[str]]:
    jobs = st.one_of(*[st.just(["--jobs", "1"])] * 6, st.just(["-j", "2"]),
                     st.sampled_from(ft.NUMBER_WORDS + ["257", "1000"]).map(lambda w: ["--jobs", w]))
    extra = st.one_of(st.just(["--list"]), st.just(["--markdown"]), st.just(["--progress"]),
                      path_words(False).map(lambda p: ["--junit", p]), path_words(False).map(lambda p: ["--report", p]),
                      path_words(True).map(lambda p: ["--trace-dir", p]), st.just(["--junit", "out.xml"]),
                      st.just(["--report", "report.html"]))
    return st.tuples(jobs, st.lists(extra, max_size=2)).map(lambda t: t[0] + [w for g in t[1] for w in g])


@st.composite
def suite_cases(draw) -> SuiteCase:
    seed = draw(st.sampled_from(SUITE_SEEDS))
    doc = tomllib.loads(suite_seed(seed))
    keys = SUITE_KEYS + suite_option_keys()
    edits = draw(ft.document_edits(doc, [("defaults",), ("check", 0)], SUITE_WORDS, keys,
                                   values=ft.toml_value_strategy))
    return SuiteCase(seed, edits, draw(ft.byte_edits(max_edits=1)) if draw(st.integers(0, 4)) == 0 else [],
                     draw(suite_options()), draw(st.integers(0, 4)) == 0)


SUITE_OUTPUTS = {"--trace-dir": "traces-out", "--junit": None, "--report": None}


def write_suite(case: SuiteCase, box: ft.Sandbox) -> Path:
    doc = ft.apply_edits(tomllib.loads(suite_seed(case.seed)), case.edits)
    text = ft.toml_dumps(with_limits(doc))
    path = box.inputs / f"{case.seed}.toml"
    path.write_bytes(ft.apply_byte_edits(text.encode("utf-8", "surrogatepass"), case.byte_edits))
    return path


def suite_bound(path: Path) -> float | None:
    """Seconds the suite may take (its checks' limits and then some); None when a check has no limits,
    which only a byte edit can do (the input is then out of scope)."""
    from isrcheck.cli.suite import parse_suite

    try:
        suite = parse_suite(path.read_bytes().decode("utf-8"), path)
    except BaseException:  # noqa: BLE001 - the command says what is wrong: it must exit 2
        return ft.RUN_SECONDS
    for check in suite.checks:
        o = check.run.options
        if o.time_limit is None or o.time_limit > 3 or o.max_memory is None or o.max_memory > 1 << 30:
            return None
    return ft.RUN_SECONDS + 4 * len(suite.checks)


@fuzz("suite")
@given(case=suite_cases())
@example(case=SuiteCase("production-configs", [("delete", ("check", 0, "name"))], options=["--jobs", "1"]))
@example(case=SuiteCase("production-configs", [("set", ("check", 0, "name"), "a\x00b")], options=["--jobs", "1"]))
@example(case=SuiteCase("production-configs", [("insert", ("check", 0), "max-depth", 0)], options=["--jobs", "1"]))
@example(case=SuiteCase("production-configs", [("set", ("check", 0, "expect", "committed-survive"),
                                                "violated-within " + "9" * 5000)], options=["--jobs", "1"]))
@example(case=SuiteCase("tradeoff-rf3", [("set", ("check", 0, "name"), "")], options=["--jobs", "1"]))
@example(case=SuiteCase("production-configs", [("set", ("defaults",), Raw("1" * 5000))], options=["--jobs", "1"]))
@example(case=SuiteCase("kafka-releases", [], options=["--jobs", "1", "--junit", "", "--report", "dir"]))
@example(case=SuiteCase("production-configs", [("insert", ("check", 0), "max-depth", list(range(1, 101))),
                                               ("insert", ("check", 0), "time-limit", [f"{n}s" for n in range(1, 102)])],
                        options=["--list"]))  # issue 55: 10,100 checks from one [[check]]; 1.66 million took 3.3 GB
def test_check_suite(base, case):
    from hypothesis import assume

    note(f"case: {case!r}")

    def bound(args: list[str]) -> float:
        seconds = suite_bound(Path(args[0]))
        assume(seconds is not None)
        return seconds

    run_checked(base, "check-suite", list(case.options), outputs_of(case.options, SUITE_OUTPUTS, {"--trace-dir"}),
                prepare=lambda box: [str(write_suite(case, box))], seconds=bound,
                env={"GITHUB_ACTIONS": "true"} if case.github else None, then=must_refuse(list(case.options)))


# ---- checkpoints: --resume of an edited checkpoint folder ----------------------------------------------------------
MANIFEST_WORDS = ["isrcheck-checkpoint-1", "isrcheck-checkpoint-2", "isrcheck-spark-checkpoint-1",
                  "isrcheck-spark-checkpoint-2", "isrcheck-spark-checkpoint-3", "isrcheck-vector-checkpoint-1",
                  "i", "l", "H", "I", "b", "d", "q",
                  *ft.PROPERTIES, "bfs", "spark", "vector", "scalar", "0.1.0", "2"]
MANIFEST_KEYS = ["format", "model_version", "isrcheck_version", "config", "options", "states", "state_bytes",
                 "parent_type", "action_type", "crc", "cursor", "level_ends", "generated", "found", "elapsed",
                 "checksum", "levels", "files", "partitions", "kind", "x", ""]


@dataclass
class CheckpointCase:
    seed: str
    edits: list = field(default_factory=list)
    reseal: bool | str = False  # True: under the checkpoint key, as isrcheck would; "sha256": a plain checksum
    file_edits: list = field(default_factory=list)  # (file index, op, argument)
    byte_edits: list = field(default_factory=list)  # of the manifest, after everything else


FILE_OPS = ["cut", "flip", "append", "delete", "dir", "empty", "fifo"]


def data_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != "manifest.json")


@st.composite
def checkpoint_cases(draw, seeds: list[str]) -> CheckpointCase:
    seed = draw(st.sampled_from(seeds))
    folder = checkpoint_seed(seed) if seed in CHECKPOINT_RUNS else spark_seed()
    manifest = json.loads((folder / "manifest.json").read_bytes())
    edits = draw(ft.document_edits(manifest, [(k,) for k in manifest], MANIFEST_WORDS, MANIFEST_KEYS))
    files = data_files(folder)
    file_edits = []
    if files and draw(st.integers(0, 3)) == 0:
        file_edits.append((draw(st.integers(0, len(files) - 1)), draw(st.sampled_from(FILE_OPS)),
                           draw(st.integers(0, 999))))
        if draw(st.booleans()):
            edits = []
    return CheckpointCase(seed, edits, draw(st.booleans()), file_edits,
                          draw(ft.byte_edits(max_edits=1)) if draw(st.integers(0, 5)) == 0 else [])


def write_checkpoint(case: CheckpointCase, box: ft.Sandbox) -> None:
    """The seed's checkpoint, edited, as ``ck`` in the working folder."""
    from isrcheck.checker import checkpoint

    seed = checkpoint_seed(case.seed) if case.seed in CHECKPOINT_RUNS else spark_seed()
    ck = box.work / "ck"
    shutil.copytree(seed, ck, symlinks=True)
    manifest = json.loads((seed / "manifest.json").read_bytes())
    doc = ft.apply_edits(manifest, case.edits)
    if case.reseal == "sha256" and isinstance(doc, dict) and not _has_raw(doc):  # issue 55: an outsider's reseal
        body = {k: v for k, v in doc.items() if k != "checksum"}
        doc = {**body, "checksum": hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()}
        data = ft.json_dumps(doc).encode("utf-8", "surrogatepass")
    elif case.reseal and isinstance(doc, dict) and hasattr(checkpoint, "write_manifest") and not _has_raw(doc):
        try:
            checkpoint.write_manifest(ck, doc)  # the checksum matches: only the fields' checks are left
        except (TypeError, ValueError):
            pass
        data = (ck / "manifest.json").read_bytes()
    else:
        data = ft.json_dumps(doc).encode("utf-8", "surrogatepass")
    (ck / "manifest.json").write_bytes(ft.apply_byte_edits(data, case.byte_edits))
    files = data_files(seed)
    for index, op, arg in case.file_edits:
        target = ck / files[index % len(files)]
        blob = target.read_bytes()
        if op == "cut":
            target.write_bytes(blob[: len(blob) * arg // 1000])
        elif op == "flip" and blob:
            i = len(blob) * arg // 1000 % len(blob)
            target.write_bytes(blob[:i] + bytes([blob[i] ^ 0xFF]) + blob[i + 1:])
        elif op == "append":
            target.write_bytes(blob + bytes([arg % 256]) * (1 + arg))
        elif op == "delete":
            target.unlink()
        elif op == "dir":
            target.unlink()
            target.mkdir()
        elif op == "empty":
            target.write_bytes(b"")
        elif op == "fifo":  # issue 55: resume waited on it past its time limit and SIGTERM
            target.unlink()
            os.mkfifo(target)


def _has_raw(doc: Any) -> bool:
    if isinstance(doc, Raw):
        return True
    if isinstance(doc, dict):
        return any(_has_raw(v) for v in doc.values())
    if isinstance(doc, list):
        return any(_has_raw(v) for v in doc)
    return isinstance(doc, float) and doc != doc


def resume(base: Path, case: CheckpointCase, run_args: list[str]) -> None:
    note(f"case: {case!r}")
    args = [*run_args, "--resume", "ck", "--trace-dir", "t", "--format", "json", *LIMITS]
    run_checked(base, "check-model", args, model_outputs(args), prepare=lambda box: write_checkpoint(case, box))


@fuzz("checkpoint")
@given(case=checkpoint_cases(["vector", "scalar", "kafka"]))
@example(case=CheckpointCase("scalar", [("set", ("found",), [])], reseal=True))
@example(case=CheckpointCase("scalar", [("set", ("level_ends",), [1, 0])], reseal=True))
@example(case=CheckpointCase("scalar", [("set", ("cursor",), 0)], reseal=True))
@example(case=CheckpointCase("scalar", [("set", ("elapsed",), -1e9)], reseal=True))
@example(case=CheckpointCase("vector", [("set", ("elapsed",), -1e9)], reseal=True))
@example(case=CheckpointCase("vector", [("set", ("elapsed",), -1e9)], reseal=False))
@example(case=CheckpointCase("scalar", [("set", ("config",), 5)], reseal=True))
@example(case=CheckpointCase("vector", [("set", ("options",), "bfs")], reseal=True))
@example(case=CheckpointCase("vector", [("set", ("config",), [1, "a"])], reseal=True))
@example(case=CheckpointCase("scalar", [("twice", ("generated",), 10**9)]))  # the checksum is of the last value
@example(case=CheckpointCase("scalar", [("set", ("generated",), 10**6)], reseal="sha256"))
@example(case=CheckpointCase("vector", [("set", ("elapsed",), 1000.0)], reseal="sha256"))
@example(case=CheckpointCase("vector", [("set", ("full_states",), 1)], reseal="sha256"))
@example(case=CheckpointCase("scalar", file_edits=[(0, "fifo", 0)]))
@example(case=CheckpointCase("scalar", file_edits=[(2, "fifo", 0)]))
@example(case=CheckpointCase("vector", file_edits=[(0, "fifo", 0)]))
def test_checkpoint_resume(base, case):
    resume(base, case, CHECKPOINT_RUNS[case.seed])


# ---- Spark checkpoints: read before Spark starts (the harness never starts it) ---------------------------------------
SPARK_RUN = ["--core", "--protocol", "kip-101", "--rf", "2", *TINY, "--engine", "spark", "--spark-master", "local[1]"]


@functools.cache
def spark_seed() -> Path:
    """A Spark checkpoint written by a real check-model process (Spark runs in it: about 20 s)."""
    work = seeds_dir() / "spark"
    work.mkdir()
    proc = subprocess.run([str(ft.BIN / "check-model"), *SPARK_RUN, "--checkpoint", "ck", "--trace-dir", "t",
                           "--time-limit", "120s", "--no-progress"], cwd=work, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode in (0, 1) and (work / "ck" / "manifest.json").exists(), (proc.stdout, proc.stderr)
    return work / "ck"


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")
@fuzz("spark_checkpoint")
@given(case=checkpoint_cases(["spark"]))
@example(case=CheckpointCase("spark", [("set", ("levels", 0, "files", 0, 1), "../../../outside/sentinel.txt")],
                             reseal=True))
@example(case=CheckpointCase("spark", [("set", ("levels", 0, "partitions"), 0)], reseal=True))
@example(case=CheckpointCase("spark", [("set", ("elapsed",), -1e9)], reseal=True))
def test_spark_checkpoint_resume(base, case):
    resume(base, case, [w for w in SPARK_RUN])


# ---- the harness itself: a fork of this process behaves as the console script -------------------------------------
@pytest.mark.parametrize("command, args", [
    ("check-model", ["--rf", "2", *TINY, "--format", "json", "--trace-dir", "t", *LIMITS]),
    ("check-model", ["--rf", "0", *LIMITS]),
    ("check-model", ["--core", "--protocol", "hw-truncation", "--rf", "2", *TINY, "--trace-dir", "t", *LIMITS]),
    ("view-trace", ["missing.json"]),
])
def test_the_harness_agrees_with_the_console_scripts(tmp_path, command, args):
    forked = ft.run(command, args, tmp_path)
    ft.check_contract(forked)
    real = subprocess.run([str(ft.BIN / command), *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert forked.code == real.returncode, (forked.describe(), real.stderr)
    assert forked.stderr.splitlines()[:1] == real.stderr.splitlines()[:1]
    words = lambda text: re.sub(r"[\d.,]+", "N", text)  # noqa: E731 - timings and memory differ
    assert words(forked.stdout) == words(real.stdout)


def test_the_harness_reports_a_traceback_and_a_hang(tmp_path, monkeypatch):
    """What the fuzz tests rely on: an exception escaping main and a run past its bound are seen."""
    from isrcheck.cli import view_trace

    def broken(*a, **kw):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(view_trace, "load_checked", broken)
    out = ft.run("view-trace", [str(tmp_path / "x.json")], tmp_path)
    assert out.uncaught and "ZeroDivisionError" in out.uncaught
    with pytest.raises(ft.UncaughtException):
        ft.check_contract(out)
    monkeypatch.setattr(view_trace, "load_checked", lambda *a, **kw: __import__("time").sleep(60))
    out = ft.run("view-trace", [str(tmp_path / "x.json")], tmp_path, seconds=1)
    assert out.killed == "time" and out.seconds < 10
    with pytest.raises(ft.OverTime):
        ft.check_contract(out)
