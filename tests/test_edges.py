"""The pieces that hold the edge, one by one: bounded types, the guarded loaders, message
truncation, stale temporary files, write failures, exit codes, and the bounded Erlang formula."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from planner.cli import cli
from planner.errors import InputError, OutputError, shorten, unknown_name_message
from planner.fleet import solver
from planner.inputs.loading import nesting_depth, parse_json, parse_yaml
from planner.perf.queueing import _erlang_b_exact, _erlang_b_window, erlang_c
from planner.schema.bounded import Range
from planner.schema.scenario import Scenario
from planner.writing import STALE_AFTER_S, clean_stale_temps, write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = {"requests_per_second": 5, "input_tokens": 512, "output_tokens": 128}


def scenario(**over) -> Scenario:
    return Scenario.model_validate({"model": "llama-3.1-8b", "workload": WORKLOAD, **over})


# ---- bounded types -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "ok"),
    [(5, True), (5.0, True), ("5", True), ("1e3", True), (True, False), ("yes", False),
     (float("nan"), False), (float("inf"), False), (10**400, False), (-1, False),
     ([5], False), ({"x": 1}, False), ("1e309", False)],
)  # fmt: skip
def test_a_rate_is_a_finite_number_in_range_and_never_a_boolean(value, ok):
    workload = {**WORKLOAD, "requests_per_second": value}
    if ok:
        assert scenario(workload=workload).workload.requests_per_second == float(value)
    else:
        with pytest.raises(ValidationError, match="requests/s"):
            scenario(workload=workload)


def test_a_whole_number_takes_3_0_as_3_and_refuses_3_5():
    assert scenario(search={"tp": [1.0, 2]}).search.tp == [1, 2]
    with pytest.raises(ValidationError, match="whole number"):
        scenario(search={"tp": [1.5]})


def test_range_text_states_both_ends_and_the_unit():
    text = Range(0, 1e6, low_open=True, unit="requests/s").text()
    assert text == "a finite number greater than 0 and at most 1,000,000 requests/s"


def test_repeated_entries_are_refused_with_both_positions():
    with pytest.raises(ValidationError, match=r"lists 'l40s' twice \(entries 0 and 2\)"):
        scenario(hardware={"gpus": ["l40s", "h100-sxm", "l40s"]})


def test_a_boolean_field_takes_only_true_or_false():
    profile = {"hourly": [1.0] * 24}
    for bad in (1, "yes", "true", 0):
        with pytest.raises(ValidationError, match="true or false"):
            scenario(finance={"profile": profile, "spot": {"enabled": bad}})


# ---- loaders and messages ---------------------------------------------------------------------


def test_yaml_merge_keys_still_work_and_only_real_duplicates_are_refused():
    doc = parse_yaml("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  x: 3\n", Path("m.yaml"))
    assert doc["c"] == {"x": 3, "y": 2}
    with pytest.raises(InputError, match=r"m.yaml: c.x: duplicate key at line 4"):
        parse_yaml("c:\n  x: 1\n  y: 2\n  x: 3\n", Path("m.yaml"))


def test_an_alias_bomb_is_refused_before_it_is_built():
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    start = time.perf_counter()
    with pytest.raises(InputError, match="expands through YAML aliases"):
        parse_yaml("\n".join(rows) + "\n", Path("bomb.yaml"))
    assert time.perf_counter() - start < 2.0


def test_json_duplicates_and_depth_are_refused_and_depth_is_counted_without_recursion():
    with pytest.raises(InputError, match="duplicate key 'a'"):
        parse_json('{"a": 1, "b": {"c": 2}, "a": 3}', "x.json")
    assert nesting_depth({"a": [[1], {"b": [2]}]}) == 4
    with pytest.raises(InputError, match="nested more than 64"):
        parse_json("[" * 100_000 + "]" * 100_000, "x.json")


def test_messages_never_render_a_value_whole():
    nested: list = ["lol"] * 9
    for _ in range(8):
        nested = [nested] * 9  # 9**9 strings if expanded
    start = time.perf_counter()
    assert len(shorten(nested)) <= 60 and len(shorten("x" * 10**7)) <= 60
    assert time.perf_counter() - start < 0.5
    message = unknown_name_message("GPU", "y" * 10**6, ["l40s"])
    assert len(message) < 200


GPUS = ["a100-80gb", "h100-nvl", "h100-pcie", "h100-sxm", "h200", "mi300x"]


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        # a shortened id: every id it begins (difflib alone picked h200 for 'h100')
        ("h100", "(did you mean 'h100-nvl', 'h100-pcie' or 'h100-sxm'?)"),
        ("mi300", "(did you mean 'mi300x'?)"),
        ("H100_SXM", "(did you mean 'h100-sxm'?)"),  # case and separators only
        ("h100-smx", "(did you mean 'h100-sxm'?)"),  # a misspelling: difflib's closest
        ("h20", "(did you mean 'h200'?)"),
    ],
)
def test_an_unknown_id_suggests_what_the_user_likely_meant(given, hint):
    assert hint in unknown_name_message("GPU", given, GPUS)


def test_no_suggestion_for_an_id_like_nothing_known():
    message = unknown_name_message("GPU", "tpu-v5e", GPUS)
    assert "did you mean" not in message and "known: a100-80gb" in message


# ---- writing ------------------------------------------------------------------------------------


def test_stale_temporary_files_of_planner_are_cleaned_and_nothing_else(tmp_path):
    old = time.time() - STALE_AFTER_S - 60
    names = {
        ".plan.xlsx.k3j2h1g0.tmp": True,
        ".plan.ab_cd123.xlsx": True,
        ".plan-frontier.png.zzzzzzzz.png": True,
        ".notes.txt": False,  # not ours
        "plan.k3j2h1g0.tmp": False,  # not hidden
        ".fresh.yaml.k3j2h1g0.tmp": False,  # ours but young
    }
    for name in names:
        (tmp_path / name).write_text("x")
        if name != ".fresh.yaml.k3j2h1g0.tmp":
            os.utime(tmp_path / name, (old, old))
    clean_stale_temps(tmp_path)
    for name, removed in names.items():
        assert (tmp_path / name).exists() is not removed, name


def test_a_full_disk_is_an_output_error_naming_the_path(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    target = tmp_path / "x.yaml"
    with pytest.raises(OutputError, match=f"cannot write {target}: No space left on device"):
        write_text_atomic(target, "a: 1\n")
    assert list(tmp_path.iterdir()) == []  # the temporary file is gone too


# ---- exit codes ----------------------------------------------------------------------------------


def test_ctrl_c_exits_130(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("planner.planning.estimate.estimate_row", interrupted)
    res = CliRunner().invoke(cli, ["estimate", "--model", "llama-3.1-8b", "--gpu", "l40s"], obj={})
    assert res.exit_code == 130 and "interrupted" in res.output


def test_an_os_error_from_a_path_is_exit_2_naming_it(monkeypatch):
    def too_long(*args, **kwargs):
        raise OSError(errno.ENAMETOOLONG, "File name too long", "p" * 300)

    monkeypatch.setattr("planner.planning.estimate.estimate_row", too_long)
    res = CliRunner().invoke(cli, ["estimate", "--model", "llama-3.1-8b", "--gpu", "l40s"], obj={})
    assert res.exit_code == 2 and "File name too long" in res.output and "ppp" in res.output


def test_an_infeasible_status_at_the_time_limit_is_no_plan_not_infeasible(monkeypatch):
    import pulp

    lp = pulp.LpProblem("p", pulp.LpMinimize)
    x = pulp.LpVariable("x", lowBound=0)
    lp += x
    lp += x >= 1
    monkeypatch.setattr(solver, "_status", lambda lp: "infeasible")
    options = solver.SolverOptions(time_limit_s=1e-9)
    assert solver.solve(lp, options).status == "none"
    assert solver.solve(lp, solver.SolverOptions(time_limit_s=60)).status == "infeasible"


# ---- algorithms bounded in their inputs ------------------------------------------------


@pytest.mark.parametrize("servers", [5000, 20_000, 100_000])
@pytest.mark.parametrize("load", [0.5, 0.8, 0.95, 0.999])
def test_erlang_b_window_matches_the_full_recursion(servers, load):
    c, a = np.array([servers]), np.array([load * servers])
    exact, window = _erlang_b_exact(c, a)[0], _erlang_b_window(c, a)[0]
    assert window == pytest.approx(exact, rel=1e-12, abs=1e-300)


def test_erlang_c_of_ten_million_servers_takes_a_moment():
    start = time.perf_counter()
    wait = erlang_c(np.array([10_000_000, 1_000_000]), np.array([0.999, 0.8]))
    assert time.perf_counter() - start < 5.0
    assert 0.0 < wait[0] < 1.0 and wait[1] == 0.0


def test_infeasible_without_any_limit_names_the_class_or_is_a_solver_failure():
    from planner.errors import SolverError
    from planner.fleet.steady import FleetProblem
    from planner.planning.diagnose import _unbounded_failure

    def problem(capacity):
        n = len(capacity)
        return FleetProblem(
            gpu=("l40s",) * n,
            tp=(1,) * n,
            cost_per_hour=np.ones(n),
            capacity=np.array(capacity, dtype=float).reshape(n, 2),
            demand=np.ones(2),
        )

    assert "class 'docs'" in _unbounded_failure(problem([[1, 0]]), "infeasible", ["chat", "docs"])
    with pytest.raises(SolverError, match="numerical range"):
        _unbounded_failure(problem([[1, 1]]), "infeasible", ["chat", "docs"])
