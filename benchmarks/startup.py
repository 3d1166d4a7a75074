"""Where one `planner solve SCENARIO --no-export` spends its CPU (issue 16): each phase timed
with `time.process_time` inside a fresh interpreter (imports of numpy, pydantic + PyYAML,
highspy, planner's modules for solve, the catalog, the scenario, the plan, the text report),
the median of `repeats` processes, and the whole process's CPU (user + system) beside it.
Each figure is also a ratio to the CPU time of `python -c "import numpy"` measured in the same
run, so figures compare across machines. Run it with bytecode written, as an install does:

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/startup.py [repeats] [scenario] [--before DIR]

`--before DIR` times another checkout too (`git archive <commit> | tar -x -C DIR`), interleaved
process by process; each runs from its own folder, which Python puts first on sys.path.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PHASES = r"""
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as planner.cli starts numpy
marks = [("start", time.process_time())]
def mark(name): marks.append((name, time.process_time()))
import numpy; mark("numpy")
import pydantic, yaml; mark("pydantic + PyYAML")
import highspy; mark("highspy (pulp before session 28)")
from planner.inputs.catalog import load_catalog
from planner.inputs.platforms import is_platform
from planner.inputs.scenarios import load_scenario
from planner.planning.pipeline import plan
from planner.render.text import render_plan
mark("planner's modules for solve (rich, schemas; pandas before session 27)")
is_platform(sys.argv[1]); catalog = load_catalog(None); mark("catalog (snapshot)")
scenario, catalog = load_scenario(sys.argv[1], catalog); mark("scenario")
result = plan(scenario, catalog); mark("plan")
render_plan(result); mark("text report")
print(json.dumps({b[0]: b[1] - a[1] for a, b in zip(marks, marks[1:])}))
"""


def cpu(args: list[str], cwd: Path = ROOT) -> tuple[float, str]:
    """User + system CPU seconds of one child process, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(args, capture_output=True, text=True, check=True, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return used, done.stdout


def _medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {name: statistics.median(r[name] for r in runs) for name in runs[0]}


def main(argv: list[str]) -> None:
    trees = {"now": ROOT}
    if "--before" in argv:
        at = argv.index("--before")
        trees = {"after": ROOT, "before": Path(argv[at + 1]).resolve()}
        argv = argv[:at] + argv[at + 2 :]
    n = int(argv[0]) if argv else 5
    scenario = str((ROOT / (argv[1] if len(argv) > 1 else "scenarios/chatbot.yaml")).resolve())
    solve = [sys.executable, "-m", "planner.cli", "solve", scenario, "--no-export"]
    for tree in trees.values():
        cpu(solve, tree)  # warm-up: bytecode, the catalog snapshot
    unit: list[float] = []
    runs: dict[str, list[dict[str, float]]] = {t: [] for t in trees}
    for _ in range(n):
        unit.append(cpu([sys.executable, "-c", "import numpy"])[0])
        for name, tree in trees.items():
            whole = cpu(solve, tree)[0]
            used, out = cpu([sys.executable, "-c", PHASES, scenario], tree)
            runs[name].append({**json.loads(out), "phases, whole process": used, "solve": whole})
    u = statistics.median(unit)
    print(f'baseline: python -c "import numpy" = {u:.3f} CPU s (median of {n})')
    print(f"`planner solve {Path(scenario).name} --no-export`, CPU s, median of {n} processes\n")
    print("| phase | " + " | ".join(f"{t} CPU s | x numpy" for t in trees) + " |")
    print("|---|" + "---|---|" * len(trees))
    medians = {t: _medians(r) for t, r in runs.items()}
    for phase in medians[next(iter(trees))]:
        cells = [f"{m[phase]:.3f} | {m[phase] / u:.2f}" for m in medians.values()]
        label = "`planner solve`, whole process" if phase == "solve" else phase
        print(f"| {label} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
