"""Atomic file writes: a temporary file in the same folder, renamed into place.

Every writer of planner (YAML entries here, PNG charts, workbooks) names its temporary file
`.<name>.<8 random characters>.<tmp|png|xlsx>` beside the target. A run killed mid-write
(kill -9, power loss) leaves one behind; the next write to that folder removes those older
than STALE_AFTER_S. Every failure to write (missing or read-only folder, full disk, a name
too long) is one OutputError naming the path: exit 2, never a traceback.

`tempfile.mkstemp` creates its file 0600; before the rename the file gets the mode a plain
`open()` would have given it (0666 less the umask), or the replaced file's own mode, so an
atomic write never makes a shared file private.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import time
from collections.abc import Callable
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


def current_umask() -> int:
    """The process umask; os has no getter, so set a private one for an instant and restore."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def file_mode(path: str | Path) -> int:
    """Permission bits for writing `path`: an existing file's own, else 0666 less the umask."""
    try:
        return Path(path).stat().st_mode & 0o777
    except OSError:
        return 0o666 & ~current_umask()


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


def write_atomic(path: str | Path, write: Callable[[Path], object], suffix: str = ".tmp") -> Path:
    """Call `write` on a temporary file beside `path`, give it `file_mode(path)`, rename it
    into place: readers see the old file or the whole new one, never a 0600 stranger."""
    path = Path(path)
    mode = file_mode(path)
    fd, tmp = temp_beside(path, suffix)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write {path}: {reason(exc)}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write `text` to `path` (UTF-8) so that readers see the old file or the whole new one."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
