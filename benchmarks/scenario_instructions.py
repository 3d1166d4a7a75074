"""Instructions executed by `planner solve` on every shipped single-period scenario, with and
without the workbook (issue 16), counted by valgrind's callgrind: the same count, to a few
hundredths of a percent, on a busy machine as on an idle one, so a change of 1% shows where
CPU seconds on a shared machine vary by 10%. Each count is also a ratio to the count of
`python -c "import numpy"` in the same run. Instructions are not seconds (cache misses and
memory stalls are not counted, so a change that saves cache misses, like fewer garbage
collections, shows less here than in `scenario_speed.py`): the two benchmarks go together.

`--before DIR` also counts another checkout (`git archive <commit> | tar -x -C DIR`, with
`planner/catalogs` and `planner/data` linked to its `catalogs/` and `data/`); run it from
outside the repository (the current folder would shadow DIR on sys.path). Each process runs
under callgrind at about 45x its CPU time (the chatbot: 13 s); `--jobs N` runs N at a time.
Needs `valgrind` (Debian package).

    python benchmarks/scenario_instructions.py [--before DIR] [--jobs N] [--only a,b]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import scenario_speed
from scenario_speed import single_period

REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(args: list[str], code: Path | None, out: Path) -> int:
    """Instructions one process executes under callgrind (its whole run, imports included)."""
    env = dict(_env(code), PYTHONHASHSEED="0")  # the same dict orders, run to run
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found = REFS.search(done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from callgrind: {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout of planner to count")
    parser.add_argument("--jobs", type=int, default=1, help="processes counted at a time")
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    trees = {"after": None, "before": args.before} if args.before else {"now": None}
    wanted = {s for s in args.only.split(",") if s}
    paths = [p for p in single_period() if not wanted or p.stem in wanted]
    solve = [sys.executable, "-m", "planner.cli", "solve"]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        out = Path(tmp)
        for code in trees.values():  # bytecode (the workbook's modules too) and the catalog
            # snapshot, not counted: a fresh checkout's first workbook compiles 0.2 G more
            warm = [*solve, str(paths[0]), "-o", str(out / "warm.xlsx")]
            subprocess.run(warm, env=_env(code), check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        unit = instructions([sys.executable, "-c", "import numpy"], None, out / "numpy.cg")
        jobs = {}
        for path in paths:
            for tree, code in trees.items():
                book = out / f"{path.stem}-{tree}.xlsx"
                for kind, extra in (("bare", ["--no-export"]), ("book", ["-o", str(book)])):
                    cg = out / f"{path.stem}-{tree}-{kind}.cg"
                    call = [*solve, str(path), *extra]
                    jobs[path.stem, tree, kind] = pool.submit(instructions, call, code, cg)
        print(f'baseline: python -c "import numpy" = {unit / 1e9:.3f} G instructions')
        head = " | ".join(f"{t} no export | x | {t} workbook | x" for t in trees)
        print(f"| scenario (G instructions) | {head} |")
        print("|---|" + "---|---|---|---|" * len(trees))
        for path in paths:
            cells = []
            for tree in trees:
                bare = jobs[path.stem, tree, "bare"].result()
                book = jobs[path.stem, tree, "book"].result()
                cells.append(
                    f"{bare / 1e9:.3f} | {bare / unit:.1f} | {book / 1e9:.3f} | {book / unit:.1f}"
                )
            print(f"| {path.stem} | {' | '.join(cells)} |", flush=True)


def _env(code: Path | None) -> dict[str, str]:
    """`scenario_speed`'s environment for `code`, with bytecode written (as an install does)."""
    env = scenario_speed._env(code)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


if __name__ == "__main__":
    main(sys.argv[1:])
