"""Golden plans: every shipped scenario's JSON plan, held against a stored copy.

A change that moves a plan shows here as a diff. When the change is meant, regenerate with
`PLANNER_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py` and say why in the commit.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from planner import load_scenario, plan
from planner.render.json import plan_dict, to_json

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
# the plans that take over a second (the diurnal plan over time: 3-6 s) are slow
SLOW = {"diurnal-chatbot", "mixed-traffic", "owned-fleet"}
GOLDEN = Path(__file__).resolve().parent / "golden"
REL_TOL = 1e-6


def differences(want: object, got: object, path: str = "") -> list[str]:
    """Every place where two JSON values differ, numbers compared to REL_TOL."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}/{k}: only in golden" for k in want.keys() - got.keys()]
        out += [f"{path}/{k}: not in golden" for k in got.keys() - want.keys()]
        for k in sorted(want.keys() & got.keys()):
            out += differences(want[k], got[k], f"{path}/{k}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(want)} items in golden, {len(got)} now"]
        pairs = enumerate(zip(want, got, strict=True))
        return [d for i, (a, b) in pairs for d in differences(a, b, f"{path}[{i}]")]
    numbers = (int, float)
    if isinstance(want, numbers) and isinstance(got, numbers) and not isinstance(want, bool):
        if math.isclose(want, got, rel_tol=REL_TOL, abs_tol=1e-12):
            return []
    elif want == got:
        return []
    return [f"{path}: golden {want!r}, now {got!r}"]


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW else p for p in SCENARIOS],
    ids=lambda p: p.stem,
)
def test_shipped_scenario_plan_matches_its_golden_file(path: Path, catalog, unhurried) -> None:
    """Golden plans are optimal ones: solved under a generous limit, not the 5 s default that
    a loaded machine can hit before the diurnal plan over time closes."""
    scenario, cat = load_scenario(path, catalog)
    now = json.loads(to_json(plan_dict(plan(unhurried(scenario), cat))))
    golden = GOLDEN / f"{path.stem}.json"
    if os.environ.get("PLANNER_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    want = json.loads(golden.read_text())
    diffs = differences(want, now)
    assert not diffs, f"{path.name}: {len(diffs)} differences, first: " + "; ".join(diffs[:8])


def test_every_shipped_scenario_has_a_golden_file() -> None:
    assert {p.stem for p in SCENARIOS} == {p.stem for p in GOLDEN.glob("*.json")}
