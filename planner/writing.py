"""Atomic file writes: a temporary file in the same folder, renamed into place."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from planner.errors import InputError


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write `text` to `path` so that readers see the old file or the whole new one."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"cannot write {path}: folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    return path
