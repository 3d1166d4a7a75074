"""CPU seconds of `planner solve` on every shipped single-period scenario, with and without the
workbook (issue 16), each also as a ratio to the CPU time of `python -c "import numpy"`
measured in the same run, so that figures compare across machines. Each figure is the median
of `repeats` runs after one warm-up run of each checkout (which compiles bytecode and writes
the catalog snapshot, planner/inputs/catalog_cache.py). `--before DIR` also times another
checkout of planner (`git archive <commit> | tar -x -C DIR`), interleaved with this one; run
it from outside the repository (the current folder would shadow DIR on sys.path).

    python benchmarks/scenario_speed.py [repeats] [--before DIR]
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu(args: list[str], env: dict[str, str] | None = None) -> float:
    """User + system CPU seconds of one child process (nan when it fails)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used if done.returncode in (0, 1) else float("nan")  # 1: infeasible, still a plan


def single_period() -> list[Path]:
    """Shipped scenarios without a `finance:` section (no plan over time)."""
    return [
        p
        for p in sorted((ROOT / "scenarios").glob("*.yaml"))
        if "\nfinance:" not in p.read_text(encoding="utf-8")
    ]


def _env(code: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return env


def _median(args: list[str], env: dict[str, str], n: int) -> float:
    return statistics.median(cpu(args, env) for _ in range(n))


def main(argv: list[str]) -> None:
    before = Path(argv[argv.index("--before") + 1]) if "--before" in argv else None
    rest = [a for a in argv if a != "--before" and (before is None or a != str(before))]
    n = int(rest[0]) if rest else 3
    trees = {"after": None, "before": before} if before else {"now": None}
    unit = statistics.median(cpu([sys.executable, "-c", "import numpy"]) for _ in range(n))
    solve = [sys.executable, "-m", "planner.cli", "solve"]
    print(f'baseline: python -c "import numpy" = {unit:.3f} CPU s (median of {n})')
    head = " | ".join(f"{t} no export | x | {t} workbook | x" for t in trees)
    print(f"| scenario | {head} |")
    print("|---|" + "---|---|---|---|" * len(trees))
    with tempfile.TemporaryDirectory() as out:
        for code in trees.values():  # warm-up: bytecode, the catalog snapshot
            cpu([*solve, str(single_period()[0]), "--no-export"], _env(code))
        for path in single_period():
            cells = []
            for tree, code in trees.items():
                env = _env(code)
                bare = _median([*solve, str(path), "--no-export"], env, n)
                book = str(Path(out) / f"{path.stem}-{tree}.xlsx")
                full = _median([*solve, str(path), "-o", book], env, n)
                cells.append(f"{bare:.2f} | {bare / unit:.1f} | {full:.2f} | {full / unit:.1f}")
            print(f"| {path.stem} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
