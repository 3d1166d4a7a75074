"""Helpers shared by the evidence scripts of issues #13 and #14 (finance_evidence.py,
sweep_evidence.py): run a CLI command and time it, count PDF pages per sheet, render
Markdown tables. Benchmarks only: nothing in planner/ imports this."""

from __future__ import annotations

import atexit
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
PLANNER = [sys.executable, "-m", "planner.cli"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True)
class Run:
    """One finished child process: its exit code, output and cost."""

    args: list[str]
    rc: int
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float

    @property
    def widest(self) -> int:
        """The longest line of stdout + stderr in characters, colour codes removed."""
        text = ANSI.sub("", self.stdout + self.stderr)
        return max((len(line) for line in text.splitlines()), default=0)


def run(args: list[str], columns: int | None = 100, timeout: float = 600) -> Run:
    """Run a command from the project root; wall and child CPU seconds (user + system)."""
    env = dict(os.environ)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(args, done.returncode, done.stdout, done.stderr, wall, cpu)


def planner(*args: str, columns: int | None = 100) -> Run:
    """`planner ARGS` through this interpreter (the venv's planner)."""
    return run([*PLANNER, *args], columns=columns)


def table(header: list[str], rows: list[list[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def soffice() -> str | None:
    """LibreOffice's command line, if installed."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def to_pdf(books: list[Path], out_dir: Path) -> dict[Path, Path]:
    """Print every workbook to PDF with LibreOffice headless (one start, a fresh profile)."""
    binary = soffice()
    if binary is None or not books:
        return {}
    profile = Path(tempfile.mkdtemp(prefix="lo-evidence-"))
    try:
        subprocess.run(
            [binary, f"-env:UserInstallation={profile.as_uri()}", "--headless",
             "--convert-to", "pdf", "--outdir", str(out_dir), *map(str, books)],
            capture_output=True, timeout=600, check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    pdfs = {b: out_dir / f"{b.stem}.pdf" for b in books}
    return {b: p for b, p in pdfs.items() if p.exists()}


_OBJ = re.compile(rb"(\d+)\s+0\s+obj(.*?)endobj", re.S)


def _title(raw: bytes) -> str:
    """A PDF text string: (literal) or <FEFF hex> UTF-16."""
    if raw.startswith(b"<"):
        data = bytes.fromhex(raw[1:-1].decode())
        return data[2:].decode("utf-16-be") if data[:2] == b"\xfe\xff" else data.decode()
    return raw[1:-1].decode("latin-1")


def _page_order(objs: dict[int, bytes], node: int) -> list[int]:
    """Page object numbers in reading order, walking the /Pages tree from `node`."""
    body = objs[node]
    kids = re.search(rb"/Kids\s*\[(.*?)\]", body, re.S)
    if kids is None:
        return [node]
    refs = [int(n) for n in re.findall(rb"(\d+)\s+0\s+R", kids.group(1))]
    return [p for r in refs for p in _page_order(objs, r)]


def pages_per_sheet(pdf: Path) -> tuple[int, dict[str, int]]:
    """Total pages of a LibreOffice Calc PDF and the pages of each sheet, from the PDF's
    outline (Calc writes one bookmark per sheet pointing at its first page)."""
    data = pdf.read_bytes()
    objs = {int(m.group(1)): m.group(2) for m in _OBJ.finditer(data)}
    root = next(n for n, o in objs.items() if re.search(rb"/Type\s*/Catalog", o))
    pages_ref = re.search(rb"/Pages\s+(\d+)\s+0\s+R", objs[root])
    order = _page_order(objs, int(pages_ref.group(1))) if pages_ref else []
    index = {p: i for i, p in enumerate(order)}
    marks = []
    for body in objs.values():
        title = re.search(rb"/Title\s*(\([^)]*\)|<[0-9A-Fa-f]+>)", body)
        dest = re.search(rb"/Dest\s*\[\s*(\d+)\s+0\s+R", body)
        if title and dest and int(dest.group(1)) in index:
            marks.append((index[int(dest.group(1))], _title(title.group(1))))
    marks.sort()
    sheets: dict[str, int] = {}
    for k, (first, name) in enumerate(marks):
        end = marks[k + 1][0] if k + 1 < len(marks) else len(order)
        sheets[name] = end - first
    return len(order), sheets


def scratch(prefix: str) -> Path:
    """A temporary folder removed when the script exits."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def run_sections(
    title: str,
    script: str,
    sections: dict[str, Callable[[], list[str]]],
    default: tuple[str, ...],
    argv: list[str],
) -> None:
    """Print the chosen sections (default: `default`) as one Markdown document."""
    chosen = argv or list(default)
    unknown = set(chosen) - set(sections)
    if unknown:
        sys.exit(f"unknown section(s) {sorted(unknown)}; choose from {', '.join(sections)}")
    t0 = time.perf_counter()
    print(f"# {title}\n")
    print(f"`python benchmarks/{script}{''.join(' ' + a for a in argv)}`\n")
    for name, section in sections.items():
        if name in chosen:
            print("\n".join(section()), flush=True)
    print(f"_Generated in {time.perf_counter() - t0:.0f} s._")
