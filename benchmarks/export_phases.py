"""Where the workbook's share of `planner solve` goes (issue 16): for every shipped
single-period scenario, the CPU seconds of each step the export adds to a `--no-export` run,
measured in a fresh process as the CLI takes them: the break-even analysis
(`planning.breakeven.analyse`), importing the xlsx package (openpyxl with it), and
`write_workbook`. Each figure is the median of `repeats` child processes, after one warm-up
run that compiles bytecode. `--before DIR` also times another checkout (`git archive <commit>
| tar -x -C DIR`, with `planner/catalogs` and `planner/data` linked to its `catalogs/` and
`data/`), interleaved with this one; run it from outside the repository.

    python benchmarks/export_phases.py [repeats] [--before DIR]

`benchmarks/scenario_speed.py` times the whole process with and without the workbook.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scenario_speed import _env, single_period  # noqa: E402

PHASES = ("analyse", "import", "write")

# the child: the plan as the CLI makes it, then each export step timed on its own
CHILD = """
import json, os, sys, tempfile, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from planner.inputs.catalog import load_catalog
from planner.inputs.scenarios import load_scenario
from planner.planning.pipeline import plan
scenario, catalog = load_scenario(sys.argv[1], load_catalog(None))
result = plan(scenario, catalog)
clock = time.process_time
t0 = clock()
from planner.planning.breakeven import analyse
analysis = analyse(result)
t1 = clock()
from planner.render.xlsx import write_workbook
t2 = clock()
with tempfile.TemporaryDirectory() as folder:
    write_workbook(result, os.path.join(folder, "book.xlsx"), analysis)
t3 = clock()
print(json.dumps({"analyse": t1 - t0, "import": t2 - t1, "write": t3 - t2}))
"""


def phases(path: Path, code: Path | None) -> dict[str, float]:
    """CPU seconds of each export step in one child process."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        env=_env(code),
        capture_output=True,
        text=True,
        check=True,
        cwd=os.sep,  # not the repository: it would shadow `code` on sys.path
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    before = Path(argv[argv.index("--before") + 1]) if "--before" in argv else None
    rest = [a for a in argv if a != "--before" and (before is None or a != str(before))]
    n = int(rest[0]) if rest else 3
    trees: dict[str, Path | None] = {"after": None, "before": before} if before else {"now": None}
    scenarios = single_period()
    for code in trees.values():  # warm-up: bytecode, the catalog snapshot
        phases(scenarios[0], code)
    cols = " | ".join(f"{t} {p}" for t in trees for p in (*PHASES, "export"))
    print(f"CPU s, median of {n} processes\n| scenario | {cols} |")
    print("|---|" + "---|" * (len(trees) * (len(PHASES) + 1)))
    for path in scenarios:
        runs: dict[str, list[dict[str, float]]] = {t: [] for t in trees}
        for _ in range(n):
            for tree, code in trees.items():
                runs[tree].append(phases(path, code))
        cells = []
        for tree in trees:
            med = {p: statistics.median(r[p] for r in runs[tree]) for p in PHASES}
            total = statistics.median(sum(r.values()) for r in runs[tree])
            cells += [f"{med[p]:.3f}" for p in PHASES] + [f"{total:.3f}"]
        print(f"| {path.stem} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
