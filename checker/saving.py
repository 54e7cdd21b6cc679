"""How a breadth-first search is saved and resumed: the scalar kernel's checkpoints
(``checkpoint``) or the vector kernel's (``checkpoint_vector``), whichever kernel runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isrcheck.files import FileProblem, load_json

from . import checkpoint, checkpoint_vector
from .bfs import SearchState


class BfsSaving:
    """Where a breadth-first search saves itself, and what it resumes. The kernel that
    runs decides the checkpoint's kind (``scalar`` or ``vector``); on resume, the kind
    found in the folder says which kernel wrote it, and that kernel goes on."""

    def __init__(self, folder: Path, ident: dict[str, Any], resuming: bool) -> None:
        self.folder, self.ident, self.resuming = Path(folder), ident, resuming
        if not resuming:
            checkpoint.refuse_existing(self.folder)
        self.saved_format = _format_in(self.folder) if resuming else None

    @property
    def vector_saved(self) -> bool:
        return self.saved_format == checkpoint_vector.FORMAT

    def scalar(self, state_bytes: int) -> tuple[SearchState | None, Any]:
        """(the search state to resume or None, the function that saves one)."""
        if self.vector_saved:
            raise checkpoint.CheckpointError(f"the checkpoint in {self.folder} was written by the vector kernel: "
                                  "resume it with --kernel vector")
        if not self.resuming:
            return None, checkpoint.CheckpointWriter(self.folder, self.ident, state_bytes).write
        state, manifest = checkpoint.load(self.folder, self.ident)
        return state, checkpoint.CheckpointWriter(self.folder, self.ident, state_bytes, resume_from=manifest).write

    def vector(self, words: int, action_dtype: Any) -> tuple[Any, Any]:
        """(the saved levels to resume or None, the writer that saves each level)."""
        if not self.resuming:
            return None, checkpoint_vector.VectorCheckpointWriter(self.folder, self.ident)
        levels, entries = checkpoint_vector.load(self.folder, self.ident, words, action_dtype)
        return levels, checkpoint_vector.VectorCheckpointWriter(self.folder, self.ident, entries)


def _format_in(folder: Path) -> Any:
    try:
        m = load_json(Path(folder) / checkpoint.MANIFEST, "checkpoint manifest", limit=checkpoint.MANIFEST_LIMIT)
    except FileProblem:
        return None  # read_manifest says what is wrong with it
    return m.get("format") if isinstance(m, dict) else None
