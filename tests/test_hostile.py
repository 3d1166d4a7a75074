"""The quick subset of benchmarks/hostile.py: one hostile input per class through the CLI.

Each case runs `planner ...` in a subprocess with a timeout (a FIFO or an alias bomb must not
hang the suite) and asserts its exit code, its message, a short stderr without warnings and
its after-check. `python benchmarks/hostile.py` runs every case and prints the counts.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _harness():
    spec = importlib.util.spec_from_file_location("hostile", ROOT / "benchmarks" / "hostile.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["hostile"] = module
    spec.loader.exec_module(module)
    return module


hostile = _harness()
QUICK = [case for case in hostile.all_cases() if case.quick]


def test_the_quick_subset_covers_every_class():
    assert {case.kind for case in QUICK} == set(hostile.CLASSES.values())


@pytest.mark.parametrize("case", QUICK, ids=lambda c: c.name)
def test_hostile_input_ends_as_expected(case):
    outcome = hostile.run_case(case, timeout=60.0)
    assert outcome.result != "hang", f"{case.name}: no answer within 60 s"
    assert outcome.passed, f"{case.name}: {outcome.why}; stderr: {outcome.stderr}"
