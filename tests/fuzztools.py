"""The fuzz suite's tools (``test_fuzz.py``): run a command as a user would, check the
exit-code contract, and mutate real files with their structure in mind.

Running (``run``): the command's ``main`` runs in a child forked from the test process,
so nothing is imported again and a run that only refuses its input costs a few
milliseconds; the child is still a process of its own, as the console script is. In the
child, stdin is /dev/null, stdout and stderr are files with the console's error handlers,
the working directory, HOME and TMPDIR are in a sandbox, warnings and logging print as in
a fresh interpreter, and at the end non-daemon threads are joined and atexit functions
run (the interpreter's shutdown) before the child exits with the status ``main`` gave.
An exception that escapes ``main`` is printed as Python would print it and recorded: the
real command would have shown that traceback. The parent kills the child's whole process
group when it runs past ``RUN_SECONDS`` of wall-clock time or its processes hold more than
``MEMORY_BOUND`` bytes of resident memory (the runs are always given
``--max-memory 1G`` or a model too small to need more), and records why.

Two things differ from the console script on purpose. The Spark engine is never started
(a JVM takes seconds): when a run gets as far as starting it, ``SparkWouldStart`` (a
BaseException, so no ``except Exception`` of the command catches it) ends the child and
the outcome says ``spark_started``; everything before (option checks, the Spark master's
form, a checkpoint to resume) has run for real. And arguments never hold a NUL character,
which no real command line can carry.

The contract (``cli/common.py``) is checked by ``check_contract``: exit 0, 1, 2 or 3 only;
exactly one line on stderr with exit 2; no traceback anywhere; nothing created, changed or
removed in the sandbox outside the outputs the command line names; within the time and
memory bounds. Each broken rule raises its own AssertionError subclass, so that Hypothesis
reports distinct bugs as distinct failures.
"""

from __future__ import annotations

import atexit
import copy
import io
import json
import logging
import math
import os
import re
import resource
import shlex
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
import traceback
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import psutil
from hypothesis import strategies as st

from isrcheck.checker.engine import release_freed_memory

BIN = Path(sys.executable).parent
RUN_SECONDS = float(os.environ.get("ISRCHECK_FUZZ_RUN_SECONDS", "20"))
LOG = os.environ.get("ISRCHECK_FUZZ_LOG", "")  # a file to append one line per run to: time, exit, command
MEMORY_BOUND = int(float(os.environ.get("ISRCHECK_FUZZ_MEMORY_GIB", "3")) * (1 << 30))
EXIT_CODES = (0, 1, 2, 3)
UNCAUGHT = 70  # the child's status when an exception escaped main (Python itself would exit 1)
SPARK = 71  # the child's status when the run got as far as starting Spark
HARNESS_FAILED = 72


# ---- what a broken contract raises ------------------------------------------------------------------
class ContractBroken(AssertionError):
    """A run broke the exit-code contract of cli/common.py."""


class UncaughtException(ContractBroken):
    """An exception escaped the command's main: the user sees a traceback."""


class TracebackShown(ContractBroken):
    """A traceback was printed although main returned."""


class BadExitCode(ContractBroken):
    """The exit status is not 0, 1, 2 or 3 (or the process died of a signal)."""


class NotOneLine(ContractBroken):
    """Exit 2 without exactly one line on stderr."""


class OverTime(ContractBroken):
    """The run went on past the wall-clock bound, whatever --time-limit it was given."""


class OverMemory(ContractBroken):
    """The run's processes held more resident memory than the bound (it was given --max-memory 1G or less)."""


class StrayWrite(ContractBroken):
    """A file or folder outside the named outputs was created, changed or removed."""


class NotRefused(ContractBroken):
    """An input that no command should accept (an empty value, non-ASCII digits) was accepted."""


class EditedTraceAccepted(ContractBroken):
    """view-trace showed a trace file that is not the one isrcheck writes for the trace it shows."""


# ---- running a command in a forked child ---------------------------------------------------------------
class SparkWouldStart(BaseException):
    """Raised in the child where the Spark engine would start: the run is accepted, Spark is not started."""


def commands() -> dict[str, Any]:
    from isrcheck.cli.check_model import main as check_model
    from isrcheck.cli.check_suite import main as check_suite
    from isrcheck.cli.view_trace import main as view_trace

    return {"check-model": check_model, "check-suite": check_suite, "view-trace": view_trace}


@dataclass
class Outcome:
    command: str
    args: tuple[str, ...]
    cwd: Path
    code: int | None  # the exit status (negative: killed by that signal); None when the harness killed it
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    killed: str = ""  # why the harness killed it: "time", "memory", or "machine" (others used the memory)
    peak_rss: int = 0  # the most resident memory its processes held together, as sampled
    uncaught: str = ""  # the traceback of an exception that escaped main
    spark_started: bool = False

    def command_line(self) -> str:
        return f"cd {shlex.quote(str(self.cwd))} && {self.command} " + " ".join(shlex.quote(a) for a in self.args)

    def describe(self) -> str:
        what = f"killed at the {self.killed} bound" if self.killed else f"exit {self.code}"
        return (f"{self.command_line()}\n  -> {what} after {self.seconds:.1f} s, peak {self.peak_rss >> 20} MiB"
                f"\n  stdout: {_clip(self.stdout)}\n  stderr: {_clip(self.stderr)}"
                + (f"\n  uncaught: {_clip(self.uncaught, 3000)}" if self.uncaught else ""))


def _clip(text: str, n: int = 1500) -> str:
    return repr(text if len(text) <= n else text[: n // 2] + " [...] " + text[-n // 2:])


_SCRATCH = Path(tempfile.mkdtemp(prefix="isrcheck-fuzz-"))  # made on import, removed at exit
atexit.register(shutil.rmtree, _SCRATCH, True)
_made = [0]


def scratch(what: str) -> Path:
    """A new folder of this process's own, named by a counter: no ``random`` (Hypothesis frowns on it
    while drawing, and seeds are written while drawing)."""
    _made[0] += 1
    path = _SCRATCH / f"{what}-{os.getpid()}-{_made[0]}"
    path.mkdir()
    return path


def run(command: str, args: Iterable[str], cwd: Path, *, home: Path | None = None, tmpdir: Path | None = None,
        seconds: float | None = None, env: dict[str, str] | None = None) -> Outcome:
    """Run ``command`` (check-model, check-suite or view-trace) with ``args`` in ``cwd``, in a forked child."""
    args = tuple(str(a) for a in args)
    assert not any("\0" in a for a in args), "no command line can hold a NUL"
    main = commands()[command]
    limit = RUN_SECONDS if seconds is None else seconds
    box = scratch("run")  # the harness's own files, outside every sandbox
    out_path, err_path, tb_path, spark_path = box / "out", box / "err", box / "uncaught", box / "spark"
    sys.stdout.flush()
    sys.stderr.flush()
    release_freed_memory()  # the child starts with this process's resident set: not what earlier tests freed
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            _child(main, command, args, cwd, home, tmpdir, env or {}, out_path, err_path, tb_path, spark_path)
        finally:
            os._exit(HARNESS_FAILED)
    outcome = Outcome(command, args, Path(cwd), None)
    status = _wait(pid, limit, outcome)
    outcome.seconds = time.monotonic() - started
    outcome.code = None if outcome.killed else os.waitstatus_to_exitcode(status)
    outcome.stdout = out_path.read_bytes().decode("utf-8", "replace") if out_path.exists() else ""
    outcome.stderr = err_path.read_bytes().decode("utf-8", "replace") if err_path.exists() else ""
    outcome.uncaught = tb_path.read_text() if tb_path.exists() else ""
    outcome.spark_started = spark_path.exists()
    shutil.rmtree(box, ignore_errors=True)
    if LOG:
        with open(LOG, "a") as f:
            f.write(f"{outcome.seconds:6.2f} s {outcome.peak_rss >> 20:5d} MiB exit {outcome.code} "
                    f"{outcome.killed or ''} {command} {' '.join(shlex.quote(a[:80]) for a in args)[:300]!r} "
                    f"-> {(outcome.stderr.strip().splitlines() or [''])[-1][:160]!r}\n")
    if outcome.code == HARNESS_FAILED:
        raise RuntimeError(f"the fuzz harness failed in the child:\n{outcome.stderr}")
    return outcome


def _wait(pid: int, limit: float, outcome: Outcome) -> int:
    """Wait for the child, killing its process group at the time or memory bound; its wait status."""
    started = time.monotonic()
    pause = 0.002
    while True:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is not None:  # ended: whatever it left behind goes with it
            _kill_group(pid)
            return os.waitpid(pid, 0)[1]
        rss = _tree_rss(pid)
        outcome.peak_rss = max(outcome.peak_rss, rss)
        if rss > MEMORY_BOUND:
            outcome.killed = "memory"
        elif time.monotonic() - started > limit:
            outcome.killed = "time"
        elif psutil.virtual_memory().available < (1 << 30):  # the machine is others' too
            outcome.killed = "memory" if rss > MEMORY_BOUND // 2 else "machine"
        if outcome.killed:
            _kill_group(pid)
            return os.waitpid(pid, 0)[1]
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tree_rss(pid: int) -> int:
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _child(main, command: str, args: tuple[str, ...], cwd: Path, home: Path | None, tmpdir: Path | None,
           env: dict[str, str], out_path: Path, err_path: Path, tb_path: Path, spark_path: Path) -> None:
    os.setsid()  # its own process group: the parent kills it and everything it started at once
    import faulthandler

    faulthandler.disable()  # as in a fresh interpreter: a crash is a signal, not pytest's dump
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        new = os.open(path, flags, 0o600)
        os.dup2(new, fd)
        os.close(new)
    # the console's streams under C.UTF-8: stdout surrogateescape, stderr backslashreplace
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8",
                                                  errors="surrogateescape")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                                    errors="surrogateescape")
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                                    errors="backslashreplace", line_buffering=True)
    _fresh_interpreter_state()
    os.chdir(cwd)
    if home is not None:
        os.environ["HOME"] = str(home)
    if tmpdir is not None:
        os.environ["TMPDIR"] = str(tmpdir)
        tempfile.tempdir = None
    os.environ.update(env)
    os.environ.pop("GITHUB_ACTIONS", None)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))  # no runaway file fills the disk
    main_module = types.ModuleType("__main__")  # as the console script's: spawned workers import it
    main_module.__file__ = str(BIN / command)
    sys.modules["__main__"] = main_module
    sys.argv = [str(BIN / command), *args]
    _stub_spark()
    code = 0
    try:
        try:
            main.main(args=list(args), prog_name=command)
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:  # as the interpreter does: print the object, exit 1
                print(e.code, file=sys.stderr)
                code = 1
        _shutdown()
    except SparkWouldStart:
        Path(spark_path).write_text("spark")
        code = SPARK
    except BaseException:  # noqa: BLE001 - what escapes main is what the user would see
        text = traceback.format_exc()
        Path(tb_path).write_text(text)
        try:
            sys.stderr.write(text)
        except BaseException:  # noqa: BLE001
            pass
        code = UNCAUGHT
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    os._exit(code & 0xFF)


def _fresh_interpreter_state() -> None:
    """Warnings, logging, signals and atexit as a fresh ``python`` has them, not as pytest left them."""
    warnings.resetwarnings()
    for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
        warnings.simplefilter("ignore", category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]
    warnings._showwarnmsg_impl = lambda msg: sys.stderr.write(warnings._formatwarnmsg(msg))  # type: ignore
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    logging.lastResort = logging._StderrHandler(logging.WARNING)  # type: ignore[attr-defined]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    atexit._clear()  # pytest's and Hypothesis's are not the command's
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        atexit.register(mp_util._exit_function)


def _shutdown() -> None:
    """What the interpreter does after main: join non-daemon threads, run atexit functions."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()


def _stub_spark() -> None:
    import isrcheck.cli.runner as runner

    real = runner.get_engine

    def get_engine(name, *a, **kw):
        if name == "spark":
            raise SparkWouldStart()
        return real(name, *a, **kw)

    runner.get_engine = get_engine


# ---- sandboxes: where a run may write, and what it wrote --------------------------------------------
class Sandbox:
    """A fresh folder per example: ``work`` (the working directory), ``home``, ``tmp`` (TMPDIR) and
    ``inputs``; ``outside`` is shared by every example of a test and holds a sentinel file.
    ``snapshot()`` before and ``changes()`` after a run say what the run did to both."""

    def __init__(self, base: Path) -> None:
        self.base = Path(base)
        self.outside = self.base / "outside"
        if not self.outside.exists():
            self.outside.mkdir(parents=True)
            (self.outside / "sentinel.txt").write_text("nobody writes here\n")
        self.root = Path(tempfile.mkdtemp(dir=self.base, prefix="ex-"))
        self.work, self.home, self.tmp, self.inputs = (self.root / n for n in ("work", "home", "tmp", "inputs"))
        for d in (self.work, self.home, self.tmp, self.inputs):
            d.mkdir()
        self._before: dict[str, tuple] = {}

    def snapshot(self) -> None:
        self._before = self._scan()

    def _scan(self) -> dict[str, tuple]:
        out: dict[str, tuple] = {}
        for top in (self.root, self.outside):
            for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
                for name in dirnames + filenames:
                    path = os.path.join(dirpath, name)
                    try:
                        s = os.lstat(path)
                    except OSError:
                        continue
                    kind = stat.S_IFMT(s.st_mode)
                    if stat.S_ISDIR(s.st_mode):
                        out[path] = (kind,)
                    elif stat.S_ISLNK(s.st_mode):
                        out[path] = (kind, os.readlink(path))
                    else:
                        out[path] = (kind, s.st_size, s.st_mtime_ns, s.st_ino)
        return out

    def changes(self) -> list[tuple[str, str]]:
        """(path, created|changed|removed) for everything that differs from the snapshot."""
        after = self._scan()
        diff = [(p, "created") for p in after if p not in self._before]
        diff += [(p, "removed") for p in self._before if p not in after]
        diff += [(p, "changed") for p in after if p in self._before and after[p] != self._before[p]]
        return sorted(diff)

    def cleanup(self) -> None:
        def unlock(func, path, _):
            try:
                os.chmod(os.path.dirname(path), 0o700)
                os.chmod(path, 0o700)
            except OSError:
                pass
            try:
                func(path)
            except OSError:
                pass

        shutil.rmtree(self.root, onerror=unlock)


def allowed_outputs(cwd: Path, named: Iterable[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Absolute forms of the named outputs (path, is_folder): as given, and where a link leads."""
    out = []
    for text, folder in named:
        if text == "" or "\0" in text:
            continue
        path = os.path.normpath(os.path.join(str(cwd), text))
        out.append((path, folder))
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            continue
        if real != path:
            out.append((real, folder))
    return out


def stray(changes: list[tuple[str, str]], allowed: list[tuple[str, bool]]) -> list[tuple[str, str]]:
    """The changes that no named output explains. A folder may appear on the way to an output."""
    bad = []
    for path, how in changes:
        ok = False
        for out, folder in allowed:
            if path == out or (folder and path.startswith(out.rstrip("/") + "/")):
                ok = True
            elif how == "created" and out.startswith(path.rstrip("/") + "/") and os.path.isdir(path):
                ok = True  # a parent folder of an output, created on the way
            if ok:
                break
        if not ok:
            bad.append((path, how))
    return bad


# ---- the contract ----------------------------------------------------------------------------------------
def check_contract(out: Outcome, box: Sandbox | None = None, outputs: Iterable[tuple[str, bool]] = ()) -> None:
    """Raise the ContractBroken subclass of the first rule ``out`` breaks."""
    if out.killed == "time":
        raise OverTime(f"still running after {RUN_SECONDS:.0f} s:\n{out.describe()}")
    if out.killed == "memory":
        raise OverMemory(f"held more than {MEMORY_BOUND >> 20} MiB:\n{out.describe()}")
    if out.killed == "machine":  # not the run's doing: say so, rather than blame it
        raise RuntimeError(f"the machine ran short of memory during the run (others use it too):\n{out.describe()}")
    if out.uncaught:
        last = out.uncaught.strip().splitlines()[-1] if out.uncaught.strip() else "?"
        raise UncaughtException(f"{last}\n{out.describe()}")
    if out.spark_started:
        pass  # accepted: it would have gone on to run Spark
    elif out.code not in EXIT_CODES:
        raise BadExitCode(f"exit status {out.code}:\n{out.describe()}")
    if "Traceback (most recent call last)" in out.stdout + out.stderr:
        raise TracebackShown(out.describe())
    if out.code == 2:
        lines = out.stderr.splitlines()
        if len(lines) != 1 or not lines[0].strip():
            raise NotOneLine(f"{len(lines)} lines on stderr:\n{out.describe()}")
    if box is not None:
        bad = stray(box.changes(), allowed_outputs(out.cwd, outputs))
        if bad:
            listing = "; ".join(f"{how} {p}" for p, how in bad[:8])
            raise StrayWrite(f"outside the named outputs: {listing}\n{out.describe()}")


def accepted(out: Outcome) -> bool:
    """The run took its input: it checked (0, 1, 3) or would have started Spark."""
    return out.spark_started or out.code in (0, 1, 3)


# ---- JSON documents: structure-aware edits ------------------------------------------------------------------
class Raw:
    """Text written as is into a JSON or TOML document: what the standard writers cannot produce
    (a 5000-digit number, NaN, nesting thousands deep, a TOML date)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:60]!r}{'...' if len(self.text) > 60 else ''}, {len(self.text)} chars)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Raw) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __deepcopy__(self, memo):
        return self


def deep_list(n: int) -> Raw:
    return Raw("[" * n + "]" * n)


def deep_object(n: int) -> Raw:
    return Raw('{"a":' * n + "1" + "}" * n)


def json_dumps(doc: Any, indent: int | None = 1) -> str:
    """JSON text of ``doc``, where Raw values are written as they are."""
    raws: dict[str, str] = {}

    def strip(v: Any) -> Any:
        if isinstance(v, Raw):
            key = f"@@raw{len(raws)}@@"
            raws[key] = v.text
            return key
        if isinstance(v, dict):
            return {str(k): strip(x) for k, x in v.items()}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    text = json.dumps(strip(doc), indent=indent)
    for key, raw in raws.items():
        text = text.replace(json.dumps(key), raw, 1)
    return text


HUGE_DIGITS = "9" * 5000

# values no reader should trip over: each wrong in some way somewhere
HOSTILE_JSON: list[Any] = [
    None, True, False, 0, -1, 1, 2, 255, 65536, 2**31, 2**53 + 1, 2**63, -(2**63) - 1, 10**30, -10**30,
    0.5, -0.0, 1e308, -1e9, 1e9, float("nan"), float("inf"),
    "", " ", "0", "-1", "1.5", "\u0663", "\uff12", "\u00b2", "NONE", "none", "unbounded", "all", "\x00", "\ud800",
    "\u202e", "a\nb", "x" * 70000,
    [], {}, [None], [[]], {"": None}, [0, 0], {"#set": []}, {"#map": []}, {"#map": [[0]]}, {"#map": [[0, 1, 2]]},
    {"#set": [{"#set": []}]}, {"#bigint": "12"}, {"#bigint": "\u0663"}, {"#bigint": "-"}, {"#bigint": " 1"},
    {"#bigint": "1_0"}, {"#bigint": 3}, {"#bigint": HUGE_DIGITS}, {"#tup": [1, 2]}, {"#unserializable": "x"},
    Raw("NaN"), Raw("-Infinity"), Raw("1" * 5000), Raw("-" + HUGE_DIGITS), Raw("1e999"), Raw("-0"), Raw("1.0"),
    Raw("1E2"), deep_list(70), deep_list(100000), deep_object(1000), Raw("[" + "1," * 200000 + "1]"),
]


def value_strategy(existing: Any, words: list[str]) -> st.SearchStrategy:
    """A value to put where ``existing`` was: one near it, one of its kind, or a hostile one."""
    near: list[st.SearchStrategy] = []
    if isinstance(existing, bool):
        near.append(st.just(not existing))
    elif isinstance(existing, int):
        near += [st.integers(-3, 12), st.integers(existing - 2, existing + 2), st.integers(-(2**70), 2**70),
                 st.just(str(existing)), st.just(float(existing)), st.just({"#bigint": str(existing)})]
    elif isinstance(existing, float):
        near += [st.floats(), st.just(-existing), st.just(int(existing) if math.isfinite(existing) else 0)]
    elif isinstance(existing, str):
        near += [st.sampled_from(words), st.text(max_size=12), st.just(existing.upper()), st.just(existing + " "),
                 st.just(existing[:-1])]
        if existing.lstrip("-").isdigit():
            near.append(st.just(int(existing)))
    elif isinstance(existing, list):
        near += [st.just(existing[:1]), st.just(existing[::-1]), st.just(existing * 2),
                 st.just({"#set": existing}), st.lists(st.integers(-2, 9), max_size=4)]
    elif isinstance(existing, dict):
        near += [st.just(list(existing.values())), st.just({k: None for k in existing}),
                 st.just(dict(list(existing.items())[1:]))]
    return st.one_of(*near, st.sampled_from(HOSTILE_JSON)) if near else st.sampled_from(HOSTILE_JSON)


def all_paths(doc: Any, limit: int = 20000) -> list[tuple]:
    """Every place in a document (the empty path: the document), breadth first."""
    out: list[tuple] = [()]
    todo = [((), doc)]
    while todo and len(out) < limit:
        nxt = []
        for path, v in todo:
            items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
            for k, x in items:
                out.append(path + (k,))
                nxt.append((path + (k,), x))
        todo = nxt
    return out


def get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def _exists(doc: Any, path: tuple) -> bool:
    try:
        for k in path:
            if isinstance(doc, dict) and k in doc or isinstance(doc, list) and isinstance(k, int) and -len(doc) <= k < len(doc):
                doc = doc[k]
            else:
                return False
        return True
    except TypeError:
        return False


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    get(doc, path[:-1])[path[-1]] = value
    return doc


def apply_edits(doc: Any, edits: Iterable[tuple]) -> Any:
    """A copy of ``doc`` with ``edits`` applied in order; an edit whose place is gone is skipped.

    ("set", path, value); ("delete", path); ("swap", path, path); ("reorder", path, "reverse"|"rotate");
    ("insert", path, key_or_index, value); ("repeat", path, times) repeats a list element;
    ("wrap", path, "list"|"dict"); ("rename", path, new_key) renames a key; ("twice", path, value) gives
    a key twice in its place, ``value`` first and its own value last (``json`` keeps the last)."""
    doc = copy.deepcopy(doc)
    for edit in edits:
        op, path = edit[0], tuple(edit[1])
        if not _exists(doc, path):
            continue
        if op == "set":
            doc = _set(doc, path, copy.deepcopy(edit[2]))
        elif op == "delete" and path:
            parent = get(doc, path[:-1])
            del parent[path[-1]]
        elif op == "swap":
            other = tuple(edit[2])
            if not _exists(doc, other) or path[: len(other)] == other or other[: len(path)] == path:
                continue
            a, b = get(doc, path), get(doc, other)
            doc = _set(doc, path, b)
            doc = _set(doc, other, a)
        elif op == "reorder":
            v = get(doc, path)
            if isinstance(v, list) and len(v) > 1:
                new = v[::-1] if edit[2] == "reverse" else v[1:] + v[:1]
                doc = _set(doc, path, new)
            elif isinstance(v, dict):
                items = list(v.items())
                items = items[::-1] if edit[2] == "reverse" else items[1:] + items[:1]
                doc = _set(doc, path, dict(items))
        elif op == "insert":
            v = get(doc, path)
            if isinstance(v, dict):
                v[str(edit[2])] = copy.deepcopy(edit[3])
            elif isinstance(v, list):
                at = edit[2] if isinstance(edit[2], int) else len(v)
                v.insert(at % (len(v) + 1), copy.deepcopy(edit[3]))
        elif op == "repeat" and path:
            parent = get(doc, path[:-1])
            if isinstance(parent, list):
                i = path[-1]
                parent[i + 1: i + 1] = [copy.deepcopy(parent[i]) for _ in range(int(edit[2]))]
        elif op == "wrap":
            v = get(doc, path)
            doc = _set(doc, path, [v] if edit[2] == "list" else {"#set": [v]} if edit[2] == "set" else {"value": v})
        elif op == "twice" and path and isinstance(get(doc, path[:-1]), dict):
            parent = get(doc, path[:-1])
            pairs = [json_dumps({k: v}, indent=None)[1:-1] for k, v in parent.items()]
            pairs.insert(list(parent).index(path[-1]), json_dumps({path[-1]: edit[2]}, indent=None)[1:-1])
            doc = _set(doc, path[:-1], Raw("{" + ", ".join(pairs) + "}"))  # the keys' order as it was
        elif op == "rename" and path:
            parent = get(doc, path[:-1])
            if isinstance(parent, dict):
                items = [(str(edit[2]) if k == path[-1] else k, x) for k, x in parent.items()]
                parent.clear()
                parent.update(items)
    return doc


@st.composite
def document_edits(draw, doc: Any, focus: list[tuple] = (), words: list[str] = (), keys: list[str] = (),
                   protect: Callable[[tuple], bool] = lambda path: False, max_edits: int = 3,
                   values: Callable[[Any, list[str]], st.SearchStrategy] = None) -> list[tuple]:
    """Edits of ``doc`` (see ``apply_edits``): mostly at places under ``focus`` prefixes, with values
    near the old ones, of their kind, or hostile; ``words`` are strings that mean something there,
    ``keys`` names to insert or rename to. Places for which ``protect`` is true are left alone;
    ``values(existing, words)`` draws a new value (``value_strategy``: JSON's values)."""
    twice = ["twice"] if values is None else []  # a key given twice: a JSON edit (tomllib refuses it itself)
    values = values or value_strategy
    paths = [p for p in all_paths(doc) if not protect(p)]
    near = [p for p in paths if any(p[: len(f)] == tuple(f) for f in focus)] or paths
    words = list(words) or ["x"]
    keys = list(keys) or ["x"]
    edits = []
    for _ in range(draw(st.integers(1, max_edits))):
        path = draw(st.sampled_from(near) | st.sampled_from(paths))
        op = draw(st.sampled_from(["set", "set", "set", "set", "delete", "swap", "reorder", "insert", "repeat",
                                   "wrap", "rename", *twice]))
        existing = get(doc, path) if _exists(doc, path) else None
        if op == "set":
            edits.append(("set", path, draw(values(existing, words))))
        elif op == "swap":
            edits.append(("swap", path, draw(st.sampled_from(near))))
        elif op == "reorder":
            edits.append(("reorder", path, draw(st.sampled_from(["reverse", "rotate"]))))
        elif op == "insert":
            target = path if isinstance(existing, (dict, list)) else path[:-1]
            edits.append(("insert", target, draw(st.sampled_from(keys) | st.integers(0, 50)),
                          draw(values(existing, words))))
        elif op == "repeat":
            edits.append(("repeat", path, draw(st.sampled_from([1, 2, 50, 3000]))))
        elif op == "wrap":
            edits.append(("wrap", path, draw(st.sampled_from(["list", "set", "dict"]))))
        elif op == "rename":
            edits.append(("rename", path, draw(st.sampled_from(keys) | st.text(max_size=8))))
        elif op == "twice":
            edits.append(("twice", path, draw(values(existing, words))))
        else:
            edits.append((op, path))
    return edits


# ---- bytes: edits of the file as written ------------------------------------------------------------------------
BYTES_INSERTED = [b"\x00", b"\xff", b"\xc3", b"\xef\xbb\xbf", b"\r", b"\n", b"\t", b"#", b"\\", b'"', b"[", b"]", b"{",
                  b"}", b",", b"=", b"'", b"\xe2\x80\xae", b"9" * 400]


@st.composite
def byte_edits(draw, max_edits: int = 2) -> list[tuple]:
    """Edits of a file's bytes: ("cut", per_mille) keeps a prefix; ("splice", per_mille, bytes) inserts;
    ("crlf",) turns every newline into CRLF; ("bom",) prefixes a byte-order mark."""
    edits = []
    for _ in range(draw(st.integers(0, max_edits))):
        kind = draw(st.sampled_from(["cut", "splice", "splice", "crlf", "bom"]))
        if kind == "cut":
            edits.append(("cut", draw(st.integers(0, 999))))
        elif kind == "splice":
            edits.append(("splice", draw(st.integers(0, 1000)), draw(st.sampled_from(BYTES_INSERTED))))
        else:
            edits.append((kind,))
    return edits


def apply_byte_edits(data: bytes, edits: Iterable[tuple]) -> bytes:
    for edit in edits:
        if edit[0] == "cut":
            data = data[: len(data) * edit[1] // 1000]
        elif edit[0] == "splice":
            at = len(data) * edit[1] // 1000
            data = data[:at] + edit[2] + data[at:]
        elif edit[0] == "crlf":
            data = data.replace(b"\n", b"\r\n")
        elif edit[0] == "bom":
            data = b"\xef\xbb\xbf" + data
    return data


# ---- TOML: a writer for suites (the standard library only reads TOML) ---------------------------------------------
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(k: Any) -> str:
    k = str(k)
    return k if _BARE.fullmatch(k) else toml_string(k)


def toml_string(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20 or o == 0x7F or 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def toml_value(v: Any) -> str:
    if isinstance(v, Raw):
        return v.text
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v) if abs(v) < 10**4000 else HUGE_DIGITS
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return toml_string(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items() if x is not None) + " }"
    if v is None:
        return '""'
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return toml_string(str(v))


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def toml_dumps(doc: Any) -> str:
    """TOML text of a document: scalars and inline arrays first, then [tables], then [[arrays of tables]]."""
    if not isinstance(doc, dict):
        return f"value = {toml_value(doc)}\n"
    lines: list[str] = []
    _toml_table(lines, doc, ())
    return "\n".join(lines) + "\n"


def _toml_table(lines: list[str], table: dict, prefix: tuple) -> None:
    for k, v in table.items():
        if v is None or isinstance(v, dict) or _is_table_array(v):
            continue
        lines.append(f"{toml_key(k)} = {toml_value(v)}")
    for k, v in table.items():
        if isinstance(v, dict):
            name = ".".join(toml_key(x) for x in prefix + (k,))
            lines += ["", f"[{name}]"]
            _toml_table(lines, v, prefix + (k,))
    for k, v in table.items():
        if _is_table_array(v):
            name = ".".join(toml_key(x) for x in prefix + (k,))
            for item in v:
                lines += ["", f"[[{name}]]"]
                _toml_table(lines, item, prefix + (k,))


HOSTILE_TOML: list[Any] = [
    0, -1, 1, 2, 7, 9, 2**31, 2**63 - 1, 10**30, -10**30, 0.5, 1e308, float("nan"), float("inf"), True, False,
    "", " ", "0", "-1", "\u0663", "\uff12", "\x00", "\ud800", "\u202e", "a\nb", "x" * 20000, "all", "1", "unbounded",
    "holds", "violated", "violated-within 0", "violated-within 1", "violated-within 99999999999999999999",
    "violated-within " + "9" * 5000, "witnessed-within \u0663", "holds-within 3", "never", "witnessed",
    "violated-within -1", "violated-within 1.5",
    [], [[]], [1, 1], [1, 2, 3], ["a", 1], [True, False], {}, {"x": 1}, {"expect": {}},
    Raw("1979-05-27T07:32:00Z"), Raw("1979-05-27"), Raw("07:32:00"), Raw("0x1F"), Raw("0o17"), Raw("1_000"),
    Raw("+inf"), Raw("-nan"), Raw("1" * 5000), Raw("'literal \\n'"), Raw('"""multi\nline"""'),
    Raw("[" * 2000 + "]" * 2000), Raw("{ a = " * 500 + "1" + " }" * 500),
]


def toml_value_strategy(existing: Any, words: list[str]) -> st.SearchStrategy:
    near: list[st.SearchStrategy] = []
    if isinstance(existing, bool):
        near.append(st.just(not existing))
    elif isinstance(existing, int):
        near += [st.integers(-2, 10), st.integers(existing - 2, existing + 2), st.just(str(existing)),
                 st.just(float(existing)), st.just([existing, existing + 1])]
    elif isinstance(existing, str):
        near += [st.sampled_from(words), st.text(max_size=12), st.just(existing + " "), st.just(existing.upper())]
    elif isinstance(existing, list):
        near += [st.just(existing[:1]), st.just(existing[::-1]), st.just((existing * 2)[:3]),
                 st.lists(st.integers(-1, 7), max_size=3)]
    elif isinstance(existing, dict):
        near += [st.just(list(existing.values())), st.just(dict(list(existing.items())[1:]))]
    return st.one_of(*near, st.sampled_from(HOSTILE_TOML)) if near else st.sampled_from(HOSTILE_TOML)


# ---- check-model's options: their kinds, and values of each kind ---------------------------------------------
INT_OPTIONS = ["--rf", "--min-isr", "--crashes", "--disk-loss", "--power-loss", "--max-records", "--log-size",
               "--max-depth", "--spark-partitions", "--workers"]
CHOICE_OPTIONS = {
    "--protocol": ["hw-truncation", "kip-101", "kip-279", "kip-320"],
    "--acks": ["all", "1", "0"],
    "--flush": ["os", "always"],
    "--engine": ["bfs", "z3", "spark"],
    "--prove": ["none", "induction", "spacer"],
    "--kernel": ["vector", "scalar"],
    "--format": ["text", "json"],
}
FLAGS = ["--core", "--unclean-election", "--clean-election", "--consumer", "--no-consumer", "--symmetry",
         "--no-symmetry", "--continue", "--verbose", "--progress", "--no-progress", "--view"]
PROPERTIES = ["weak-isr", "strong-isr", "leader-in-isr", "log-matching", "committed-survive", "committed-stored",
              "acked-survive", "read-within-hwm", "record-committed", "leader-failover", "consumer-reads",
              "write-after-crash"]
# numbers in words: no command should take them as numbers
NOT_ASCII_NUMBERS = ["\u0663", "\uff12", "\u0662\u0663", "\u00b2", "\u2167", "\uff11\uff10", "1\u0660", "\U0001d7d0"]
NUMBER_WORDS = ["0", "1", "2", "3", "-1", "-0", "+2", " 2", "2 ", "02", "0x10", "1_0", "1e3", "2.0", "9" * 25,
                "9" * 400, "99999999999999999999", "-99999999999999999999", "", " ", "two", "nan", "inf",
                "2\n", *NOT_ASCII_NUMBERS]
DURATION_WORDS = ["0.5s", "1s", "2s", "5s", "100ms", "1m", "1h30m", "0", "0s", "-1s", "1", "1.5", "1e3s", "5S",
                  "5 s", "1h1h", "s", "ms", "99999999999999999999h", "9" * 400 + "h", "\u0665s", "\uff15s", "",
                  " ", "5s ", "1m30", "nan", "inf", "1y", ".5s", "5.s"]
SIZE_WORDS = ["1G", "512M", "2G", "1g", "1GB", "1GiB", "1Gi", "100K", "1T", "0", "0G", "-1G", "1", "1.5G",
              "99999999999999999999G", "9" * 400, "9" * 400 + "T", "1e3G", "\uff12G", "\u0663G", "", " ", "G",
              "1P", "1 G", "1 g", "nan", "inf", "1G1G"]
KAFKA_VERSION_WORDS = ["3.9", "3.6", "2.8", "2.2", "2.1", "2.0", "0.10", "0.11", "1.1", "3.9.0", "3.9.9", "4.0",
                       "0.9", "3", "3.", ".9", "", " 3.9", "3.9 ", "\uff13.\uff19", "\u0663.\u0669", "v3.9", "3,9",
                       "latest", "9" * 400]
SPARK_MASTERS = ["local", "local[1]", "local[*]", "local[0]", "local[-1]", "local[99999999999999999999]",
                 "local[\u0663]", "spark://127.0.0.1:7077", "spark://host", "spark://:7077", "yarn", "k8s://x",
                 "mesos://x", "", " ", "local[", "http://x", "local[2]x", "local[1,2]"]
MAX_LEADER_EPOCH_WORDS = ["0", "1", "2", "unbounded", "Unbounded", "-1", "9", "8", "", *NOT_ASCII_NUMBERS[:3]]


def option_value(option: str) -> st.SearchStrategy[str]:
    """Words for ``option``'s value: good ones, edge ones and wrong ones."""
    if option in INT_OPTIONS:
        return st.sampled_from(NUMBER_WORDS) | st.integers(-3, 9).map(str) | st.integers(0, 3).map(str)
    if option in CHOICE_OPTIONS:
        good = CHOICE_OPTIONS[option]
        return st.sampled_from(good) | st.sampled_from(["", " ", good[0].upper(), good[0] + " ", "\u0661", "x"])
    if option == "--max-leader-epoch":
        return st.sampled_from(MAX_LEADER_EPOCH_WORDS) | st.integers(-2, 9).map(str)
    if option in ("--time-limit", "--prove-timeout", "--checkpoint-every"):
        return st.sampled_from(DURATION_WORDS)
    if option == "--max-memory":
        return st.sampled_from(SIZE_WORDS)
    if option == "--kafka-version":
        return st.sampled_from(KAFKA_VERSION_WORDS)
    if option == "--spark-master":
        return st.sampled_from(SPARK_MASTERS)
    if option == "--property":
        return st.sampled_from(PROPERTIES) | st.sampled_from(["", "all", "WEAK-ISR", "weak_isr", "weak-isr "])
    raise KeyError(option)


VALUE_OPTIONS = [*INT_OPTIONS, *CHOICE_OPTIONS, "--max-leader-epoch", "--kafka-version", "--spark-master",
                 "--property", "--prove-timeout", "--checkpoint-every"]
LIMIT_OPTIONS = ["--time-limit", "--max-memory"]
# options whose words are numbers: a non-ASCII digit in them is refused
NUMERIC_OPTIONS = [*INT_OPTIONS, "--max-leader-epoch", "--time-limit", "--prove-timeout", "--checkpoint-every",
                   "--max-memory", "--kafka-version", "--width", "--jobs"]
# options whose words are whole numbers: anything but the digits 0-9 alone (a sign, a space, 2.0) is refused
DIGITS_OPTIONS = [*INT_OPTIONS, "--max-leader-epoch", "--width", "--jobs", "--seed", "--walks"]
# flags of all three commands: they take no value
ALL_FLAGS = [*FLAGS, "--changed-only", "--color", "--no-color", "--list", "--markdown", "--help", "-h"]


def effective_values(args: list[str]) -> dict[str, list[str]]:
    """The value each option ends up with (click keeps the last; --property keeps all); the key
    "--help" when help is asked for (click then shows it and exits 0 before reading anything else)."""
    values: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            break
        if a in ("-h", "--help"):
            values["--help"] = []
            i += 1
        elif a == "-j" and i + 1 < len(args):
            values["--jobs"] = [args[i + 1]]
            i += 2
        elif a.startswith("--") and a not in ALL_FLAGS and (i + 1 < len(args) or "=" in a):
            if "=" in a:
                name, _, value = a.partition("=")
                i += 1
            else:
                name, value = a, args[i + 1]
                i += 2
            if name == "--property":
                values.setdefault(name, []).append(value)
            else:
                values[name] = [value]
        else:
            i += 1
    return values


def refusal_expected(args: list[str]) -> str:
    """Why a command must refuse ``args`` whatever else they say ('' when nothing forces it, or when
    they ask for help)."""
    given = effective_values(args)
    if "--help" in given:
        return ""
    for option, values in given.items():
        for value in values:
            if value == "" and option != "--spark-master" or option == "--spark-master" and value.strip() == "":
                return f"{option} is given an empty value"
            if option in NUMERIC_OPTIONS and any(ch.isdigit() and not ch.isascii() for ch in value):
                return f"{option} {value!r} holds a digit that is not 0-9"
            if option in DIGITS_OPTIONS and not re.fullmatch(r"[0-9]+|unbounded", value):
                return f"{option} {value!r} is not the digits 0-9 alone"
    return ""
