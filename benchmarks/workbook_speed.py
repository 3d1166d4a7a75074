"""How fast the Excel workbook is written, against the 2 s targets the tests used to time.

Two writes, each with its break-even analysis computed beforehand (as `planner solve` does):
a steady plan (llama-3.1-70b, 10 req/s) whose candidate table is padded to 20,000 rows, and
the plan over time of scenarios/diurnal-chatbot.yaml. Prints the best of N wall-clock
times of `write_workbook` alone, and whether each meets its target. Not run by pytest: the
tests assert what is written, this measures how long it takes on this machine.

    python benchmarks/workbook_speed.py [repeats]
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from planner.inputs.catalog import load_catalog
from planner.inputs.scenarios import load_scenario
from planner.planning.breakeven import analyse
from planner.planning.pipeline import plan as make_plan
from planner.render.xlsx import write_workbook
from planner.schema.scenario import Scenario

ROOT = Path(__file__).resolve().parent.parent
CANDIDATE_ROWS = 20_000
TARGET_S = 2.0


def best_of(repeats: int, write: Callable[[], object]) -> float:
    """The fastest of `repeats` runs of `write`, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        write()
        best = min(best, time.perf_counter() - start)
    return best


def report(label: str, seconds: float) -> None:
    verdict = "meets" if seconds < TARGET_S else "MISSES"
    print(f"  {label}: {seconds:.2f} s ({verdict} the {TARGET_S:g} s target)")


def main(repeats: int = 3) -> None:
    catalog = load_catalog()
    steady = make_plan(
        Scenario.model_validate(
            {
                "name": "t",
                "model": "llama-3.1-70b",
                "workload": {"requests_per_second": 10, "input_tokens": 1024, "output_tokens": 256},
                "sla": {"tpot_ms": 50, "ttft_ms": 2000},
            }
        ),
        catalog,
    )
    reps = -(-CANDIDATE_ROWS // len(steady.candidates))
    rows = pd.concat([steady.candidates] * reps, ignore_index=True).iloc[:CANDIDATE_ROWS]
    big = dataclasses.replace(steady, candidate_table=rows)
    big_analysis = analyse(steady)
    scenario, cat = load_scenario(ROOT / "scenarios" / "diurnal-chatbot.yaml", catalog)
    over_time = make_plan(scenario, cat)
    over_time_analysis = analyse(over_time)
    print(f"write_workbook, best of {repeats}:")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        seconds = best_of(repeats, lambda: write_workbook(big, out / "big.xlsx", big_analysis))
        report(f"{CANDIDATE_ROWS:,} candidate rows", seconds)
        seconds = best_of(
            repeats, lambda: write_workbook(over_time, out / "diurnal.xlsx", over_time_analysis)
        )
        report(f"diurnal-chatbot plan over time ({len(over_time.candidates):,} rows)", seconds)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
