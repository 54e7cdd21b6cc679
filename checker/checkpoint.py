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

The manifest's frame (format, versions, identity), its atomic writing and its
checks are shared with the Spark engine's checkpoints (``spark_checkpoint``).
"""

from __future__ import annotations

import json
import os
import zlib
from array import array
from pathlib import Path
from typing import Any

from isrcheck import MODEL_VERSION, __version__

from .bfs import SearchState

FORMAT = "isrcheck-checkpoint-1"
MANIFEST = "manifest.json"
FILES = ("states.bin", "parents.bin", "actions.bin")
CHUNK = 1 << 16  # states encoded at a time


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message is one line."""


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
        atomic_write(self.folder / MANIFEST, json.dumps(manifest, indent=1).encode())

    def _encode(self, name: str, st: SearchState, lo: int, hi: int) -> bytes:
        if name == "states.bin":
            width = self.width
            return b"".join(s.to_bytes(width, "little") for s in st.states[lo:hi])
        return (st.parents if name == "parents.bin" else st.actions)[lo:hi].tobytes()


def refuse_existing(folder: Path) -> None:
    """--checkpoint into a folder that holds a checkpoint would overwrite it: refused."""
    if (Path(folder) / MANIFEST).exists():
        raise CheckpointError(
            f"{folder} already holds a checkpoint: continue it with --resume {folder}, or choose an empty folder"
        )


def header(fmt: str, ident: dict[str, Any]) -> dict[str, Any]:
    """The first fields of every manifest: what wrote it, and for which run."""
    return {"format": fmt, "isrcheck_version": __version__, "model_version": MODEL_VERSION, **ident}


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` so that a kill at any moment leaves the old or the new file whole."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load(folder: Path, ident: dict[str, Any]) -> tuple[SearchState, dict[str, Any]]:
    """Read and verify a checkpoint; raise CheckpointError naming what is wrong."""
    folder = Path(folder)
    m = read_manifest(folder, FORMAT, ident)
    mpath = folder / MANIFEST
    try:
        n = int(m["states"])
        width = int(m["state_bytes"])
        st = SearchState.__new__(SearchState)
        st.parents = array(m["parent_type"])
        st.actions = array(m["action_type"])
        sizes = {"states.bin": width, "parents.bin": st.parents.itemsize, "actions.bin": st.actions.itemsize}
        blobs = {}
        for name in FILES:
            with open(folder / name, "rb") as f:
                data = f.read(n * sizes[name])
            if len(data) != n * sizes[name]:
                raise CheckpointError(f"checkpoint in {folder} is truncated: {name} is shorter than the manifest says")
            if zlib.crc32(data) != int(m["crc"][name]):
                raise CheckpointError(f"checkpoint in {folder} is corrupted: {name} does not match its checksum")
            blobs[name] = data
        raw = blobs["states.bin"]
        st.states = [int.from_bytes(raw[i : i + width], "little") for i in range(0, len(raw), width)]
        st.parents.frombytes(blobs["parents.bin"])
        st.actions.frombytes(blobs["actions.bin"])
        st.level_ends = [int(x) for x in m["level_ends"]]
        st.cursor = int(m["cursor"])
        st.generated = int(m["generated"])
        st.found = {str(k): int(v) for k, v in m["found"].items()}
        st.elapsed = float(m["elapsed"])
    except CheckpointError:
        raise
    except FileNotFoundError as e:
        raise CheckpointError(f"checkpoint in {folder} is incomplete: {Path(e.filename).name} is missing") from None
    except (KeyError, TypeError, ValueError, OSError) as e:
        raise CheckpointError(f"checkpoint manifest {mpath} is malformed ({type(e).__name__}: {e})") from None
    if not (0 <= st.cursor <= n and st.level_ends and st.level_ends[-1] <= n):
        raise CheckpointError(f"checkpoint manifest {mpath} is inconsistent")
    return st, m


def read_manifest(folder: Path, fmt: str, ident: dict[str, Any]) -> dict[str, Any]:
    """The manifest in ``folder`` if it is of format ``fmt`` and for this run; else CheckpointError."""
    mpath = Path(folder) / MANIFEST
    if not mpath.exists():
        raise CheckpointError(f"no checkpoint in {folder} (no {MANIFEST})")
    try:
        m = json.loads(mpath.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"checkpoint manifest {mpath} is unreadable or corrupted ({type(e).__name__})") from None
    saved = m.get("options") if isinstance(m, dict) else None
    engine = ident["options"].get("engine")
    if isinstance(saved, dict) and str(m.get("format", "")).startswith("isrcheck-") and saved.get("engine") != engine:
        raise CheckpointError(
            f"checkpoint in {folder} was written by --engine {saved.get('engine')}; this run uses --engine {engine}"
        )
    if not isinstance(m, dict) or m.get("format") != fmt:
        raise CheckpointError(f"{mpath} is not an isrcheck checkpoint manifest")
    if m.get("model_version") != MODEL_VERSION:
        raise CheckpointError(
            f"checkpoint was written for model version {m.get('model_version')} by isrcheck "
            f"{m.get('isrcheck_version')}; this isrcheck has model version {MODEL_VERSION}"
        )
    for key in ("config", "options"):
        if m.get(key) != ident[key]:
            diff = _first_difference(m.get(key) or {}, ident[key])
            raise CheckpointError(f"checkpoint in {folder} is for another run: {diff}")
    return m


def _first_difference(saved: dict, now: dict) -> str:
    for key in sorted(set(saved) | set(now)):
        if saved.get(key) != now.get(key):
            return f"{key} was {saved.get(key)!r} there and is {now.get(key)!r} now"
    return "they differ"
