"""Reading and writing files safely: bounded reads, checked output paths, atomic writes.

Every file isrcheck reads (traces, suites, checkpoint manifests) comes through
``read_bounded``/``load_json``, so a device, a huge file or JSON nested thousands
deep is refused in one line instead of exhausting memory or the stack, and so is an
object that gives a key twice (which ``json`` would read as its last value). Every file
it writes (traces, reports, pages, manifests) goes through ``atomic_write`` into a
path ``check_output_file`` accepted: a regular file or nothing yet, never a device
or a FIFO. A symbolic link is followed, as ``cp`` does: its target is replaced (a link
to nothing is refused, as ``cp`` refuses it).
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MAX_READ = 64 << 20  # bytes: the largest trace, suite or manifest isrcheck reads
MAX_DEPTH = 64  # nesting of JSON arrays and objects: ours need about 8
NAME_MAX = 255  # bytes of one path component on Linux file systems
_UMASK = os.umask(0o022)
os.umask(_UMASK)


class FileProblem(ValueError):
    """A file that cannot be read or written as asked; the message is one line."""


def read_bounded(path: str | os.PathLike, what: str = "file", limit: int = MAX_READ) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (FileProblem otherwise)."""
    path = Path(path)
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer (no effect on a regular file)
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise FileProblem(f"{what} {path} is not a regular file")
            data = f.read(limit + 1)
    except OSError as e:
        raise FileProblem(f"cannot read {what} {path}: {e.strerror or e}") from None
    if len(data) > limit:
        raise FileProblem(f"{what} {path} is larger than {limit >> 20} MiB")
    return data


class _DuplicateKey(Exception):
    """An object that gives a key twice (not a ValueError: parse_json reads those as long numbers)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, unless a key comes twice: ``json`` would keep the last value
    without a word, so an edited file could say one thing to a reader and another to isrcheck."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def parse_json(text: str | bytes, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """JSON with its nesting bounded and each object's keys distinct; numbers of more than 4300
    digits are refused too."""
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as e:
        raise FileProblem(f"{what} gives the key {str(e.args[0])[:60]!r} twice in one object") from None
    except UnicodeDecodeError:
        raise FileProblem(f"{what} is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise FileProblem(f"{what} is not JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise FileProblem(f"{what} is nested more than {max_depth} levels deep") from None
    except ValueError:  # int() refusing a number of thousands of digits
        raise FileProblem(f"{what} holds a number of more than 4300 digits") from None
    if depth(data, max_depth) > max_depth:
        raise FileProblem(f"{what} is nested more than {max_depth} levels deep")
    return data


def load_json(path: str | os.PathLike, what: str = "file", limit: int = MAX_READ) -> Any:
    """A bounded read of a JSON file (FileProblem on any defect)."""
    return parse_json(read_bounded(path, what, limit), f"{what} {path}")


def depth(value: Any, stop: int) -> int:
    """How deeply ``value``'s lists and dicts nest, counting no further than ``stop + 1``."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (list, dict)):
            if d > stop:
                return d
            deepest = max(deepest, d)
            todo.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def check_output_file(path: str | os.PathLike | None, option: str) -> Path:
    """``path`` if a file can be written there: refused (FileProblem) when it is empty, a
    folder, a device, a FIFO or a socket, when its name is too long, or when its folder
    cannot be created or written. Called before a run starts, so no result waits on it."""
    if path is None or str(path) == "":
        raise FileProblem(f"{option}: the path is empty")
    path = Path(path)
    _check_names(path, option)
    try:
        target = followed(path) or path
        mode = os.stat(target).st_mode
    except FileProblem as e:
        raise FileProblem(f"{option}: {e}") from None
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise FileProblem(f"{option} {path}: {e.strerror or e}") from None
    if mode is None and target != path:
        raise FileProblem(f"{option} {path} is a symbolic link to {target}, which does not exist: refused (as cp does)")
    if mode is not None and stat.S_ISDIR(mode):
        raise FileProblem(f"{option} {path} is a folder; name a file")
    if mode is not None and not stat.S_ISREG(mode):
        raise FileProblem(f"{option} {path} is not a regular file (a device, FIFO or socket): refused")
    _writable(target.parent if str(target.parent) else Path("."), option, path)
    return path


def check_output_dir(path: str | os.PathLike | None, option: str, create: bool = True) -> Path:
    """``path`` if files can be written in it (created when ``create``); FileProblem otherwise."""
    if path is None or str(path) == "":
        raise FileProblem(f"{option}: the path is empty")
    path = Path(path)
    _check_names(path, option)
    _writable(path, option, path)
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise FileProblem(f"{option} {path}: cannot create it ({e.strerror or e})") from None
    return path


def _writable(path: Path, option: str, named: Path) -> None:
    """Refuse ``path`` unless it is, or its nearest existing ancestor is, a writable folder;
    the messages name ``named``, the path the user gave."""
    existing = path
    try:
        while not existing.exists() and existing != existing.parent:
            if existing.is_symlink():  # a dangling link
                raise FileProblem(f"{option} {named}: {existing} is a broken symbolic link")
            existing = existing.parent
    except OSError as e:
        raise FileProblem(f"{option} {named}: {e.strerror or e}") from None
    if not existing.is_dir():
        raise FileProblem(f"{option} {named}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise FileProblem(f"{option} {named}: {existing} is not writable")
    _probe(existing, option, named)


def _probe(folder: Path, option: str, path: Path) -> None:
    """Create and drop a file in ``folder``: ``os.access`` trusts the mode bits, which root
    ignores, and /proc or a full or read-only file system may refuse what they allow."""
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".isrcheck-probe-"):
            pass
    except OSError as e:
        raise FileProblem(f"{option} {path}: cannot write in {folder} ({e.strerror or e})") from None


def _check_names(path: Path, option: str) -> None:
    for part in path.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise FileProblem(f"{option}: a name in the path is longer than {NAME_MAX} bytes")
        if "\0" in part:
            raise FileProblem(f"{option}: the path holds a NUL character")


def atomic_write(path: str | os.PathLike, data: bytes | str | Iterable[bytes | memoryview]) -> Path:
    """Replace ``path`` by ``data`` (or its parts, written in turn: a file bigger than memory)
    so that a kill at any moment leaves the old or the new file whole. A symbolic link is followed (its target is replaced); anything but a
    regular file or nothing at the target is refused, never replaced."""
    path = Path(path)
    target = followed(path) or path
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is None and target != path:
        raise FileProblem(f"{path} is a symbolic link to {target}, which does not exist: refused to write through it")
    if mode is not None and not stat.S_ISREG(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise FileProblem(f"{path} is {what}: refused to replace it")
    if isinstance(data, str):
        data = data.encode("utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=".isrcheck-", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            # a replaced file keeps its permissions; a new one gets what a plain open() would give
            os.fchmod(f.fileno(), stat.S_IMODE(mode) if mode is not None else 0o666 & ~_UMASK)
            for part in [data] if isinstance(data, bytes) else data:
                f.write(part)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def followed(path: str | os.PathLike) -> Path | None:
    """The file a symbolic link at ``path`` leads to (what a write replaces), None for no link."""
    path = Path(path)
    if not path.is_symlink():
        return None
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # a loop: RuntimeError before Python 3.13, OSError after
        raise FileProblem(f"{path} is a symbolic link that leads back to itself") from None


def write_failure(path: str | os.PathLike, e: OSError | FileProblem) -> str:
    """One line on a write that failed: a FileProblem says it all, an OSError gets the path."""
    if isinstance(e, FileProblem):
        return str(e)
    return f"cannot write {path}: {e.strerror or e}"
