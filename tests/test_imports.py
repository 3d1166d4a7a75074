"""Issue 16: heavy third-party modules are imported where they are used, not when the CLI
starts; each check runs in a fresh interpreter and reads its sys.modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("pulp", "openpyxl", "matplotlib", "plotly", "ray", "pandas", "scipy", "highspy")


def _loaded(code: str) -> set[str]:
    """The HEAVY modules a fresh interpreter holds after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    modules = set(json.loads(out.stdout.strip().splitlines()[-1]))
    return {m for m in HEAVY if m in modules}


def test_importing_the_cli_imports_none_of_the_heavy_modules():
    assert _loaded("import planner.cli") == set()


def test_help_imports_none_of_the_heavy_modules():
    code = (
        "import sys, planner.cli\n"
        "sys.argv = ['planner', 'solve', '--help']\n"
        "try:\n    planner.cli.main()\nexcept SystemExit:\n    pass"
    )
    assert _loaded(code) == set()


@pytest.mark.parametrize("module", ["planner.planning.pipeline", "planner.planning.breakeven"])
def test_planning_does_not_import_the_exporters_or_plotting(module):
    assert not _loaded(f"import {module}") & {"openpyxl", "matplotlib", "plotly", "ray"}


# what one single-period `planner solve --no-export` never uses (issue 16: each costs import
# time): other commands' code, the plan over time, exporters and their third-party modules
NOT_FOR_SOLVE = (
    "planner.fleet.overtime",
    "planner.planning.timeplan",
    "planner.planning.sweep",
    "planner.planning.breakeven",
    "planner.calibration",
    "planner.schema.platform",
    "planner.inputs.hf_import",
    "planner.render.xlsx",
    "planner.render.html",
    "planner.render.png",
    "openpyxl",
    "matplotlib",
    "plotly",
    "ray",
    "scipy",
    "pandas",  # a third of the run (0.19 of 0.62 CPU s): the solve path keeps perf.table.Table
    "pulp",  # the fleet MIPs and LPs of one period go to HiGHS as arrays (fleet/matrix.py)
    "numpy.ma",  # numpy 2's plain np.unique imports it (12-30 ms): planner.arrays.distinct
)
ROOT = Path(__file__).resolve().parent.parent
# every shipped scenario without a finance section: the plan over time is written in pandas
SINGLE_PERIOD = sorted(
    p.name for p in (ROOT / "scenarios").glob("*.yaml") if "\nfinance:" not in p.read_text()
)


def _cli_run(*argv: str) -> tuple[str, set[str]]:
    """`planner ARGV` in a fresh interpreter at the repository's root: its stdout (before
    the module list) and every module it loaded, whatever it exited with."""
    code = (
        "import sys, planner.cli\n"
        f"sys.argv = ['planner', *{list(argv)!r}]\n"
        "try:\n    planner.cli.main()\nexcept SystemExit:\n    pass\n"
        "import json\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    *shown, modules = out.stdout.strip().splitlines()
    return "\n".join(shown), set(json.loads(modules))


@pytest.mark.parametrize("name", SINGLE_PERIOD)
def test_solve_without_export_loads_only_what_it_uses(name):
    _, modules = _cli_run("solve", f"scenarios/{name}", "--no-export")
    assert "planner.planning.pipeline" in modules  # it did plan
    assert [m for m in NOT_FOR_SOLVE if m in modules] == []


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in (ROOT / "scenarios").glob("*.yaml") if "\nfinance:" in p.read_text()),
)
def test_a_plan_over_time_loads_no_pandas(name):
    """The plan over time shortlists its candidates on the offered `Table` (issue 16: pandas
    was 0.2-0.3 of these scenarios' 0.7-1.0 CPU s without the workbook)."""
    _, modules = _cli_run("solve", f"scenarios/{name}", "--no-export")
    assert "planner.planning.timeplan" in modules  # it did plan over time
    assert "pandas" not in modules and "pulp" not in modules


def test_a_platform_loads_no_pandas():
    """Several models on one budget: each model's candidates stay on the `Table`; the pandas
    diagnosis loads only when a model cannot be served (0.25 of 1.28 CPU s before)."""
    shown, modules = _cli_run("solve", "scenarios/platforms/platform.yaml", "--no-export")
    assert "planner.planning.platform" in modules and "chat" in shown  # it did plan
    assert "pandas" not in modules


def test_the_workbook_writer_loads_no_network_modules(tmp_path):
    """xml.sax.saxutils pulls in urllib.request and ssl (40-60 ms a workbook export); the
    stream writer escapes XML itself (issue 16)."""
    code = (
        "import planner.render.xlsx, planner.render.xlsx.stream as s, json, sys\n"
        "assert s.escape('a<b & c>d') == 'a&lt;b &amp; c&gt;d'\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert "openpyxl" in modules  # it did load the writer
    assert {"ssl", "urllib.request", "xml.sax.saxutils"} & modules == set()


def _openblas_threads(env_value: str | None) -> str:
    """OPENBLAS_NUM_THREADS as a fresh interpreter sees it once the CLI is imported, and
    whether numpy was already loaded (the setting must come first to take effect)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    code = (
        "import os, sys, planner.cli\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return out.stdout.strip()


def test_the_cli_runs_openblas_on_one_thread_unless_the_user_says_otherwise():
    """Issue 16: OpenBLAS's spinning threads cost more CPU than the grid; a user's value wins."""
    assert _openblas_threads(None) == "1 False"
    assert _openblas_threads("4") == "4 False"


@pytest.mark.parametrize("name", ["chatbot.yaml", "mixed-traffic.yaml"])
def test_a_single_period_workbook_does_not_load_the_plan_over_time(tmp_path, name):
    """The break-even analysis re-solves plans over time only for a plan that has one: a
    single-period workbook leaves that solver unimported, and pandas with it: the Candidates
    and Charts sheets read the plan's Table (issue 16; pandas was 0.19 CPU s of an export)."""
    book = tmp_path / "plan.xlsx"
    _, modules = _cli_run("solve", f"scenarios/{name}", "-o", str(book))
    assert book.is_file() and "planner.render.xlsx.workbook" in modules  # it did write
    assert "planner.fleet.overtime" not in modules
    assert "pandas" not in modules
    assert "pulp" not in modules  # the break-even MIPs are arrays too (fleet/matrix.py)
    assert "numpy.ma" not in modules  # no plain np.unique (planner.arrays.distinct)


def test_estimate_loads_no_pandas():
    """`planner estimate` evaluates its one row on the Table and renders a dict (issue 16:
    pandas was a third of the command); its JSON and text are the same as before."""
    shown, modules = _cli_run(
        "estimate", "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--tp", "2",
        "--quant", "fp8", "--concurrency", "25", "--json",
    )  # fmt: skip
    assert '"ttft_ms"' in shown  # it did estimate
    assert "planner.planning.estimate" in modules and "pandas" not in modules


def test_a_benchmark_first_round_loads_no_pandas():
    """`--num-prompts` times the first round with `perf.wave`, which reads the Table (issue 16:
    it had loaded the calibration package, pandas and all: 0.97 CPU s, now 0.33)."""
    shown, modules = _cli_run(
        "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--concurrency", "16",
        "--num-prompts", "64", "--input-len", "2048", "--output-len", "256", "--json",
    )  # fmt: skip
    assert '"first_round_share": 0.25' in shown  # it did time the first round
    assert "planner.calibration" not in modules
    assert "planner.planning.estimate" in modules and "pandas" not in modules


@pytest.mark.parametrize(
    "argv",
    [
        ["capacity", "scenarios/fleet-16xh100.yaml", "--rate", "20"],
        ["job", "scenarios/batch-job.yaml"],
    ],
)
def test_capacity_and_job_load_no_pandas(argv):
    """`planner capacity` and `planner job` judge the candidates on the Table, as `solve`
    does (issue 16: pandas was 0.3 of their 0.7 CPU s); only a scenario no candidate serves
    loads it, for the diagnosis."""
    shown, modules = _cli_run(*argv)
    assert "replicas" in shown  # it did answer
    assert "planner.planning.pipeline" in modules and "pandas" not in modules
