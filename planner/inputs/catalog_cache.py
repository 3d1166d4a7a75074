"""A compiled snapshot of the validated catalog, keyed by the hash of everything it is built
from (issue #16): reading and validating the ~80 catalog YAML files costs a few tenths of a
CPU second a run; unpickling the result costs milliseconds.

The key is a SHA-256 over the planner's version, Python's and pydantic's versions, the source
of the schema and catalog-loading modules, and the path and bytes of every catalog file read
(shipped and user folders). Any edit to any of them is a different key, so a snapshot is never
stale: it is only ever the catalog those exact bytes validate to. A snapshot that cannot be
read or written is skipped silently (the catalog is then read from the YAML, as without a
cache). Snapshots live in $PLANNER_CACHE_DIR, else $XDG_CACHE_HOME/planner, else
~/.cache/planner; PLANNER_CACHE_DIR=off turns the cache off. Only a writer with access to
that folder (the user) can place a snapshot there: pickle trusts it as it trusts the code.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import platform
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import pydantic

import planner
from planner.schema import limits
from planner.writing import write_atomic

T = TypeVar("T")
CACHE_ENV = "PLANNER_CACHE_DIR"
OFF = {"off", "0", "none", "false"}
KEEP = 8  # snapshots kept per folder: the newest, so switching branches stays fast
_CODE = [
    Path(planner.__file__).parent / "schema",
    Path(planner.__file__).parent / "inputs" / "catalog.py",
    Path(planner.__file__).parent / "inputs" / "loading.py",
    Path(__file__),
]


def cache_dir() -> Path | None:
    """Where snapshots go; None when the cache is turned off."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit is not None:
        return None if explicit.strip().lower() in OFF or not explicit.strip() else Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "planner"


def _code_files() -> list[Path]:
    out: list[Path] = []
    for item in _CODE:
        out += sorted(item.glob("*.py")) if item.is_dir() else [item]
    return out


def content_key(folders: Iterable[Path]) -> str:
    """The hash of the code and of every YAML file under `folders` (path and bytes)."""
    h = hashlib.sha256()
    versions = (planner.__version__, sys.version, pydantic.VERSION, platform.machine())
    h.update(repr(versions).encode())
    for path in _code_files():
        h.update(f"\0code {path.name}\0".encode())
        h.update(path.read_bytes())
    for folder in folders:
        for path in sorted(folder.glob("*/*.y*ml")):
            info = path.stat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > limits.MAX_DOCUMENT_BYTES:
                raise OSError(f"{path}: not hashed")  # a FIFO would block: the loader refuses it
            h.update(f"\0file {path.resolve()}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def cached(folders: Iterable[Path], build: Callable[[], T]) -> T:
    """`build()`, or the snapshot of its result for exactly these folders' contents."""
    where = cache_dir()
    if where is None:
        return build()
    try:
        snapshot = where / f"catalog-{content_key(folders)}.pickle"
    except OSError:  # a file vanished or is unreadable: let the loader report it
        return build()
    try:
        with open(snapshot, "rb") as fh:
            return pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
        pass
    value = build()
    _store(snapshot, value)
    return value


def _store(snapshot: Path, value: object) -> None:
    """Write a snapshot atomically and drop the oldest beyond KEEP; quietly do nothing when
    the folder cannot be made or written."""
    try:
        snapshot.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        write_atomic(snapshot, lambda tmp: tmp.write_bytes(data))
        old = sorted(snapshot.parent.glob("catalog-*.pickle"), key=lambda p: p.stat().st_mtime)
        for path in old[:-KEEP]:
            path.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001 - a cache that cannot be written only costs speed
        return
