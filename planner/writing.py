"""Atomic file writes: a temporary file in the same folder, renamed into place.

Every writer of planner (YAML entries here, PNG charts, workbooks) names its temporary file
`.<name>.<8 random characters>.<tmp|png|xlsx>` beside the target. A run killed mid-write
(kill -9, power loss) leaves one behind; the next write to that folder removes those older
than STALE_AFTER_S. Every failure to write (missing or read-only folder, full disk, a name
too long) is one OutputError naming the path: exit 2, never a traceback.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import time
from pathlib import Path

from planner.errors import OutputError

STALE_AFTER_S = 3600.0  # a temporary file this old belongs to no running write
# what tempfile.mkstemp makes of prefix ".<name>." and our suffixes
TEMP_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.(tmp|png|xlsx)$")


def clean_stale_temps(folder: str | Path, max_age_s: float = STALE_AFTER_S) -> list[Path]:
    """Remove planner's own temporary files older than `max_age_s` from `folder`; quietly
    keeps whatever it cannot remove. Returns the files removed."""
    removed: list[Path] = []
    cutoff = time.time() - max_age_s
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if not TEMP_NAME.match(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and info.st_mtime < cutoff:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def reason(exc: OSError) -> str:
    """The OS's words for a failure ('No space left on device'), else the exception's."""
    return exc.strerror or str(exc)


def temp_beside(target: Path, suffix: str, prefix: str | None = None) -> tuple[int, Path]:
    """A new temporary file in the target's folder (stale ones cleaned first), open as a file
    descriptor; a folder that is missing or not writable is an OutputError naming `target`."""
    folder = target.parent if str(target.parent) else Path(".")
    if not os.path.isdir(folder):
        raise OutputError(f"cannot write {target}: folder {folder} does not exist")
    clean_stale_temps(folder)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix or f".{target.name}.", suffix=suffix)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {reason(exc)}") from None
    return fd, Path(tmp)


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write `text` to `path` so that readers see the old file or the whole new one."""
    path = Path(path)
    fd, tmp = temp_beside(path, ".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write {path}: {reason(exc)}") from None
    return path
