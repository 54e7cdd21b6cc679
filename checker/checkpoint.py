"""Checkpoints of a breadth-first search: append-only data, an atomic manifest.

A BFS only ever appends: states, parent indices and action indices grow at the
end. So a checkpoint folder holds three append-only data files and one small
JSON manifest that says how much of them is valid (with CRC-32s of exactly that
prefix), where the search stands (cursor, level ends, verdicts found, counters)
and what wrote it (isrcheck and model versions, configuration, options).

Writing: append the new tail of each data file, fsync, then replace the manifest
atomically (temporary file, fsync, rename, fsync of the folder). A kill at any
moment leaves the previous manifest or the new one, each describing data that is
on disk; bytes past the manifest's lengths are ignored and trimmed on resume.
Reading checks everything before anything is written, so a refused checkpoint is
left as it was.

The manifest's frame (format, versions, identity, a seal of its own content),
its atomic writing and its checks are shared with the vector kernel's checkpoints
(``checkpoint_vector``) and the Spark engine's (``spark_checkpoint``). The seal is
an HMAC-SHA256 under a key kept outside the folder (``key_path``): a manifest edited
and resealed with a plain checksum (a cursor set back, generated raised by 1,000, the
last level dropped, elapsed raised) is refused, since its counters, which the data
cannot all give back, would otherwise be reported as found. What the data does give
back is checked too (levels against the states and parents stored), and every field by
type and range, so that even a manifest resealed with the key cannot make a resume
loop or misread its data.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import math
import os
import secrets
import stat
import zlib
from array import array
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import numpy as np

from isrcheck import MODEL_VERSION, __version__
from isrcheck.files import FileProblem, atomic_write, load_json

from .bfs import SearchState
from .engine import CheckpointError  # noqa: F401 - checkpoint.CheckpointError, as its users import it

FORMAT = "isrcheck-checkpoint-2"
MANIFEST = "manifest.json"
FILES = ("states.bin", "parents.bin", "actions.bin")
MANIFEST_LIMIT = 64 << 20  # the largest manifest read: a real one is a few kilobytes a level
CHUNK = 1 << 16  # states encoded at a time


def identity(config: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """What must match for a checkpoint to be resumed: the model's and the search's inputs."""
    return {"config": config, "options": options}


class CheckpointWriter:
    """Writes one search's checkpoints into a folder, incrementally."""

    def __init__(self, folder: Path, ident: dict[str, Any], state_bytes: int, resume_from: dict | None = None) -> None:
        self.folder = Path(folder)
        self.ident = ident
        self.width = state_bytes
        self.written = 0
        self.crc = {name: 0 for name in FILES}
        if resume_from is not None:
            self.written = resume_from["states"]
            self.crc = dict(resume_from["crc"])

    def write(self, st: SearchState) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        n = len(st.states)
        sizes = {"states.bin": self.width, "parents.bin": st.parents.itemsize, "actions.bin": st.actions.itemsize}
        for name in FILES:
            path = self.folder / name
            with open(path, "r+b" if path.exists() else "wb") as f:
                f.seek(self.written * sizes[name])
                for lo in range(self.written, n, CHUNK):  # bounded extra memory, even at a memory stop
                    data = self._encode(name, st, lo, min(n, lo + CHUNK))
                    f.write(data)
                    self.crc[name] = zlib.crc32(data, self.crc[name])
                f.truncate()
                f.flush()
                os.fsync(f.fileno())
        self.written = n
        manifest = {
            **header(FORMAT, self.ident),
            "state_bytes": self.width,
            "parent_type": st.parents.typecode,
            "action_type": st.actions.typecode,
            "states": n,
            "crc": self.crc,
            "cursor": st.cursor,
            "level_ends": st.level_ends,
            "generated": st.generated,
            "found": st.found,
            "elapsed": st.elapsed,
        }
        write_manifest(self.folder, manifest)

    def _encode(self, name: str, st: SearchState, lo: int, hi: int) -> bytes:
        if name == "states.bin":
            width = self.width
            return b"".join(s.to_bytes(width, "little") for s in st.states[lo:hi])
        return (st.parents if name == "parents.bin" else st.actions)[lo:hi].tobytes()


def refuse_existing(folder: Path) -> None:
    """--checkpoint takes an empty folder: one that holds a checkpoint would be overwritten,
    and one that holds anything else would be mixed with it."""
    folder = Path(folder)
    if (folder / MANIFEST).exists():
        raise CheckpointError(
            f"{folder} already holds a checkpoint: continue it with --resume {folder}, or choose an empty folder"
        )
    if folder.is_dir() and any(folder.iterdir()):
        raise CheckpointError(f"{folder} is not empty and holds no checkpoint (a run stopped before its first "
                              f"save leaves one so): choose an empty folder")


@contextmanager
def holding(folder: Path | None, resuming: bool) -> Iterator[None]:
    """The checkpoint folder, held by this run until it ends: a second run on the same folder,
    which would interleave its writes with this one's, is refused in one line. The lock is
    the kernel's (flock on the folder itself, so nothing is added to it), and a run that is
    killed lets go of it with its last breath."""
    if folder is None:
        yield
        return
    folder = Path(folder)
    if resuming and not folder.is_dir():
        raise CheckpointError(f"no checkpoint in {folder} (no such folder)")
    if not resuming:
        refuse_existing(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise CheckpointError(f"cannot take {folder} for a checkpoint: {e.strerror or e}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CheckpointError(f"{folder} is in use by another isrcheck run: wait for it to end, "
                                  f"or choose another folder") from None
        yield
    finally:
        os.close(fd)


def open_saved(folder: Path, name: str) -> BinaryIO:
    """A checkpoint's data file, opened for reading if it is a regular file: a FIFO or a
    device in its place would block the resume or feed it without end."""
    try:
        fd = os.open(Path(folder) / name, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint in {folder} is incomplete: {name} is missing") from None
    except OSError as e:
        raise CheckpointError(f"checkpoint in {folder} is unreadable: {name} ({e.strerror or e})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CheckpointError(f"checkpoint in {folder} is unusable: {name} is not a regular file")
    return os.fdopen(fd, "rb")


def header(fmt: str, ident: dict[str, Any]) -> dict[str, Any]:
    """The first fields of every manifest: what wrote it, and for which run."""
    return {"format": fmt, "isrcheck_version": __version__, "model_version": MODEL_VERSION, **ident}


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    """Replace the folder's manifest atomically, sealed under this user's checkpoint key."""
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    atomic_write(Path(folder) / MANIFEST, json.dumps({**body, "checksum": _seal(body, _key(create=True))},
                                                     indent=1).encode())


def _seal(body: dict[str, Any], key: bytes) -> str:
    return hmac.new(key, json.dumps(body, sort_keys=True).encode(), hashlib.sha256).hexdigest()


KEY_ENV = "ISRCHECK_CHECKPOINT_KEY"


def key_path() -> Path:
    """Where the key that seals checkpoints is kept: ``$ISRCHECK_CHECKPOINT_KEY``, else
    ``$XDG_DATA_HOME/isrcheck/checkpoint.key`` (``~/.local/share/...``). A checkpoint resumes
    where this file is the writer's: copy it with the folder to resume elsewhere."""
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV])
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "isrcheck" / "checkpoint.key"


def _key(create: bool) -> bytes:
    """The checkpoint key (32 random bytes, as hex), made at the first save: created whole
    under a temporary name and linked into place, so two runs starting together agree on it."""
    path = key_path()
    try:
        if create and not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
            finally:
                tmp.unlink()
        with open_saved(path.parent, path.name) as f:
            text = f.read(200)
    except CheckpointError as e:
        raise CheckpointError(f"the checkpoint key {path} is unusable: {str(e).rsplit(': ', 1)[-1]}") from None
    except OSError as e:
        raise CheckpointError(f"cannot keep the checkpoint key at {path}: {e.strerror or e} "
                              f"(set {KEY_ENV} to a file you can write)") from None
    try:
        key = bytes.fromhex(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != 32:
        raise CheckpointError(f"the checkpoint key {path} is not 64 hexadecimal digits")
    return key


def load(folder: Path, ident: dict[str, Any]) -> tuple[SearchState, dict[str, Any]]:
    """Read and verify a checkpoint; raise CheckpointError naming what is wrong."""
    folder = Path(folder)
    m = read_manifest(folder, FORMAT, ident)
    mpath = folder / MANIFEST
    with malformed(mpath):
        n, width = count(m, "states"), count(m, "state_bytes", 1, 64)
        st = SearchState.__new__(SearchState)
        st.parents = array(_typecode(m, "parent_type", "il"))
        st.actions = array(_typecode(m, "action_type", "HI"))
        st.level_ends = [whole(x, "a level end", 1, n) for x in _list(m, "level_ends")]
        st.cursor = count(m, "cursor", 0, n)
        st.generated = count(m, "generated")
        st.found = found_states(m, lambda index: whole(index, "a deciding state", 0, n - 1))
        st.elapsed = seconds(m)
        sizes = {"states.bin": width, "parents.bin": st.parents.itemsize, "actions.bin": st.actions.itemsize}
        blobs = {name: _read_checked(folder, name, n * sizes[name], m) for name in FILES}
    ends = st.level_ends or [0]
    level_start = ends[-2] if len(ends) > 1 else 0  # the cursor is inside the level being expanded
    if not st.level_ends or ends != sorted(set(ends)) or not level_start <= st.cursor <= ends[-1]:
        raise CheckpointError(f"checkpoint manifest {mpath} is inconsistent: its levels and cursor do not fit together")
    _check_levels(st, blobs["parents.bin"], n, mpath)
    raw = blobs["states.bin"]
    st.states = [int.from_bytes(raw[i : i + width], "little") for i in range(0, len(raw), width)]
    st.parents.frombytes(blobs["parents.bin"])
    st.actions.frombytes(blobs["actions.bin"])
    return st, m


def _check_levels(st: SearchState, parents: bytes, n: int, mpath: Path) -> None:
    """The levels and cursor against the parents stored: the first level's states have none,
    each later level's come from the level before, and the states past the last complete
    level from the part of it expanded. So levels dropped or moved are refused."""
    index = np.frombuffer(parents, dtype=np.dtype(st.parents.typecode))
    ends = st.level_ends
    ok = bool((index[: ends[0]] == -1).all())
    spans = list(zip([0, 0, *ends], [0, *ends, n]))  # (start, end) of level k-1 and of level k, k >= 1
    for (before, start), (_, end) in zip(spans[1:], spans[2:]):
        high = st.cursor if end == n and n > ends[-1] else start  # the level being built: what was expanded
        if ok and end > start:
            part = index[start:end]
            ok = before <= int(part.min()) and int(part.max()) < high
    if not ok or ends[-1] > n:
        raise CheckpointError(f"checkpoint manifest {mpath} is inconsistent: its levels do not fit the states stored")


def _read_checked(folder: Path, name: str, size: int, m: dict[str, Any]) -> bytes:
    try:
        with open_saved(folder, name) as f:
            data = f.read(size)
    except OSError as e:
        raise CheckpointError(f"checkpoint in {folder} is unreadable: {name} ({e.strerror or e})") from None
    if len(data) != size:
        raise CheckpointError(f"checkpoint in {folder} is truncated: {name} is shorter than the manifest says")
    if zlib.crc32(data) != count(m["crc"], name, 0, 2**32 - 1):
        raise CheckpointError(f"checkpoint in {folder} is corrupted: {name} does not match its checksum")
    return data


# ---- the manifest's fields, checked by type and range -----------------------------------------
@contextmanager
def malformed(mpath: Path) -> Iterator[None]:
    """A block in which a missing or mistyped manifest field becomes one CheckpointError line."""
    try:
        yield
    except CheckpointError:
        raise
    except KeyError as e:
        raise CheckpointError(f"checkpoint manifest {mpath} is malformed (no field {e})") from None
    except (TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"checkpoint manifest {mpath} is malformed ({' '.join(str(e).split())[:120]})") from None


def count(m: dict[str, Any], key: str, low: int = 0, high: int = 2**62) -> int:
    """``m[key]`` if it is an int (not a bool) in [low, high]; ValueError otherwise."""
    return whole(m[key], key, low, high)


def whole(value: Any, what: str, low: int = 0, high: int = 2**62) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ValueError(f"{what} is {str(value)[:40]!r}, not a whole number from {low} to {high}")
    return value


def seconds(m: dict[str, Any]) -> float:
    value = m["elapsed"]
    if type(value) not in (int, float) or not (math.isfinite(value) and 0 <= value < 10**9):
        raise ValueError(f"elapsed is {str(value)[:40]!r}, not a number of seconds")
    return float(value)


def found_states(m: dict[str, Any], where) -> dict[str, Any]:
    """The manifest's property -> deciding state map, each location read by ``where``."""
    found = m["found"]
    if not isinstance(found, dict) or not all(isinstance(k, str) for k in found):
        raise ValueError("found is not a map from property names")
    return {name: where(value) for name, value in found.items()}


def _list(m: dict[str, Any], key: str) -> list:
    if not isinstance(m[key], list):
        raise ValueError(f"{key} is not a list")
    return m[key]


def _typecode(m: dict[str, Any], key: str, allowed: str) -> str:
    if m[key] not in tuple(allowed):
        raise ValueError(f"{key} is {str(m[key])[:10]!r}")
    return m[key]


def read_manifest(folder: Path, fmt: str, ident: dict[str, Any]) -> dict[str, Any]:
    """The manifest in ``folder`` if it is of format ``fmt``, unedited and for this run; else CheckpointError."""
    mpath = Path(folder) / MANIFEST
    if not mpath.exists():
        raise CheckpointError(f"no checkpoint in {folder} (no {MANIFEST})")
    try:
        m = load_json(mpath, "checkpoint manifest", limit=MANIFEST_LIMIT)
    except FileProblem as e:
        raise CheckpointError(f"{e} (unreadable or corrupted)") from None
    saved = m.get("options") if isinstance(m, dict) else None
    engine = ident["options"].get("engine")
    if isinstance(saved, dict) and str(m.get("format", "")).startswith("isrcheck-") and saved.get("engine") != engine:
        raise CheckpointError(
            f"checkpoint in {folder} was written by --engine {saved.get('engine')}; this run uses --engine {engine}"
        )
    if not isinstance(m, dict) or m.get("format") != fmt:
        raise CheckpointError(f"{mpath} is not an isrcheck checkpoint manifest of this kind ({fmt})")
    if m.get("model_version") != MODEL_VERSION:
        raise CheckpointError(
            f"checkpoint was written for model version {m.get('model_version')} by isrcheck "
            f"{m.get('isrcheck_version')}; this isrcheck has model version {MODEL_VERSION}"
        )
    if not key_path().exists():
        raise CheckpointError(f"checkpoint in {folder} cannot be verified: the checkpoint key {key_path()} that "
                              f"sealed it is not here (copy the writer's, or set {KEY_ENV})")
    sealed = m.get("checksum")
    if not isinstance(sealed, str) or not hmac.compare_digest(sealed, _seal(
            {k: v for k, v in m.items() if k != "checksum"}, _key(create=False))):
        raise CheckpointError(f"checkpoint manifest {mpath} was edited or corrupted, or sealed under another "
                              f"checkpoint key than {key_path()}: its checksum does not match")
    for key in ("config", "options"):
        if m.get(key) != ident[key]:
            diff = _first_difference(m.get(key), ident[key])
            raise CheckpointError(f"checkpoint in {folder} is for another run: {diff}")
    return m


def _first_difference(saved: Any, now: dict) -> str:
    if not isinstance(saved, dict) or not all(isinstance(k, str) for k in saved):
        return "its manifest does not describe a run"
    for key in sorted(set(saved) | set(now)):
        if saved.get(key) != now.get(key):
            return f"{key} was {str(saved.get(key))[:60]!r} there and is {now.get(key)!r} now"
    return "they differ"
