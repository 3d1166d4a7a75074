"""Atomic file writes: a temporary file in the same folder, renamed into place.

`tempfile.mkstemp` creates its file 0600; before the rename the file gets the mode a plain
`open()` would have given it (0666 less the umask), or the replaced file's own mode, so an
atomic write never makes a shared file private.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from planner.errors import InputError


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


def write_atomic(path: str | Path, write: Callable[[Path], object], suffix: str = ".tmp") -> Path:
    """Call `write` on a temporary file beside `path`, give it `file_mode(path)`, rename it
    into place: readers see the old file or the whole new one, never a 0600 stranger."""
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"cannot write {path}: folder {folder} does not exist")
    mode = file_mode(path)
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=suffix)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write `text` to `path` (UTF-8) so that readers see the old file or the whole new one."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
