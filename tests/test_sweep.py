"""planner sweep: points from --set and --vary, full plans per point, the same rows wherever
they run (inline, a process pool, Ray), the table, its summary and tornado, the CLI."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from planner.cli import cli
from planner.errors import InputError
from planner.inputs.scenarios import load_scenario
from planner.inputs.sweep import load_vary, parse_set
from planner.planning import sweep as sw
from planner.planning import sweep_table as tables
from planner.render.sweep import sweep_dict, write_table
from planner.schema.sweep import VaryFile

ROOT = Path(__file__).resolve().parent.parent
MOE = ROOT / "scenarios" / "moe.yaml"
# small and deterministic: two GPU types, a generous time limit so no solve stops early
FAST = (("hardware.gpus", (["h100-sxm", "a100-80gb"],)), ("solver.time_limit_s", (120,)))
GRID = (*FAST, ("workload.requests_per_second", (5, 40)), ("constraints.max_gpus", (2, None)))
VARY = {
    "seed": 11,
    "vary": {
        "workload.requests_per_second": {"dist": "lognormal", "median": 10, "sigma": 0.5},
        "hardware.pricing.usd_per_gpu_hour.h100-sxm": {
            "dist": "uniform",
            "low": 1.5,
            "high": 4.0,
        },
    },
}


@pytest.fixture(scope="module")
def moe(catalog):
    return load_scenario(MOE, catalog)


@pytest.fixture(scope="module")
def grid_result(moe):
    base, cat = moe
    return sw.sweep(base, cat, sw.SweepSpec(grid=GRID), jobs=1)


def _same_rows(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal tables but for the wall-time column."""
    pd.testing.assert_frame_equal(a.drop(columns="seconds"), b.drop(columns="seconds"))


# ---- --set values and key paths --------------------------------------------------------


def test_set_values_are_yaml_scalars_and_lists():
    assert parse_set("workload.requests_per_second=5,10.5") == (
        "workload.requests_per_second",
        [5, 10.5],
    )
    assert parse_set("sla.tpot_ms=40ms,0.05s") == ("sla.tpot_ms", ["40ms", "0.05s"])
    assert parse_set("hardware.gpus=[h100-sxm,h200],[b200]") == (
        "hardware.gpus",
        [["h100-sxm", "h200"], ["b200"]],
    )
    assert parse_set("constraints.max_gpus=8,null")[1] == [8, None]
    for bad in ("workload.requests_per_second", "=3", "sla.tpot_ms=", "a=[1,"):
        with pytest.raises(InputError, match="--set"):
            parse_set(bad)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"workload.request_per_second": 5}, "did you mean 'requests_per_second'"),
        ({"sla.tpot_msec": 5}, "did you mean 'tpot_ms'"),
        ({"sla.tpot_ms": -1}, r"sla\.tpot_ms: must be a finite number greater than 0"),
        ({"hardware.gpus": ["h100-sx"]}, r"hardware\.gpus\[0\]: unknown GPU 'h100-sx'.*h100-sxm"),
        ({"workload.requests_per_second.x": 1}, "holds a value, not keys"),
        ({"workload.classes[3].share": 0.5}, r"workload\.classes\[3\] does not exist"),
        ({"search.quants": ["fp7"]}, "unknown quantization 'fp7'"),
    ],
)
def test_invalid_keys_and_values_name_the_key(moe, override, message):
    base, cat = moe
    with pytest.raises(InputError, match=message):
        sw.apply(base, override, cat)


def test_an_override_is_validated_like_a_file(moe):
    base, cat = moe
    point = sw.apply(
        base,
        {"sla.tpot_ms": "40ms", "hardware.pricing.usd_per_gpu_hour.h100-sxm": 2.5},
        cat,
    )
    assert point.sla.tpot_ms == 40.0
    assert point.hardware.pricing.usd_per_gpu_hour == {"h100-sxm": 2.5}
    assert sw.apply(base, {}, cat) is base
    assert sw.current_value(base, "workload.requests_per_second") == (
        base.workload.requests_per_second
    )


def test_the_grid_is_every_combination_last_key_fastest():
    points = sw.grid_points([("a", [1, 2]), ("b", ["x", "y", "z"])])
    assert [p.index for p in points] == list(range(6))
    assert [tuple(p.overrides.values()) for p in points][:4] == [
        (1, "x"),
        (1, "y"),
        (1, "z"),
        (2, "x"),
    ]
    with pytest.raises(InputError, match="given twice"):
        sw.grid_points([("a", [1]), ("a", [2])])


# ---- Monte Carlo points --------------------------------------------------------------


def test_samples_are_reproducible_from_the_seed_and_clipped():
    vary = VaryFile.model_validate(
        {
            "vary": {
                "a": {"dist": "normal", "mean": 1.0, "sd": 5.0, "min": 0.1},
                "b": {"dist": "choice", "values": ["on_demand", "spot"], "weights": [3, 1]},
                "c": {"dist": "lognormal", "median": 2.0, "sigma": 0.2},
            }
        }
    )
    first, again = sw.sample_points(vary, 200, seed=3), sw.sample_points(vary, 200, seed=3)
    assert first == again
    assert first != sw.sample_points(vary, 200, seed=4)
    assert sw.sample_points(vary, 20, seed=3) == first[:20], "more samples extend the sequence"
    a = np.array([p.overrides["a"] for p in first])
    assert a.min() == 0.1 and (a >= 0.1).all()
    assert {p.overrides["b"] for p in first} == {"on_demand", "spot"}
    c = np.array([p.overrides["c"] for p in first])
    assert 1.8 < float(np.median(c)) < 2.2


def test_the_vary_file_is_strict(tmp_path):
    path = tmp_path / "vary.yaml"
    path.write_text("vary:\n  workload.requests_per_second: {dist: uniform, low: 1, hihg: 2}\n")
    with pytest.raises(InputError, match="hihg"):
        load_vary(path)
    path.write_text("vary:\n  x: {dist: gamma, shape: 2}\n")
    with pytest.raises(InputError, match=str(path)):
        load_vary(path)
    path.write_text("vary:\n  x: {dist: uniform, low: 3, high: 2}\n")
    with pytest.raises(InputError, match="low"):
        load_vary(path)
    path.write_text("vary:\n  x: {dist: choice, values: [1, 2], weights: [1]}\n")
    with pytest.raises(InputError, match="weights"):
        load_vary(path)


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (
            "vary:\n  x: {lognormal: {median: 10, sigma: 0.5}}\n",
            [
                "vary.x: no 'dist:' key",
                "uniform, normal, lognormal, choice",
                "write {dist: lognormal, ...}",
                "e.g. {dist: lognormal, median: 10, sigma: 0.5}",
            ],
        ),
        (
            "vary:\n  x: {dist: lognorm, median: 10, sigma: 0.5}\n",
            ["'dist: lognorm' is not a kind here", "(did you mean 'lognormal'?)"],
        ),
        (
            "samples: 5\nvary:\n  x: {dist: uniform, low: 1, high: 2}\n",
            ["samples: unknown key (give --samples N on the command line)"],
        ),
    ],
)
def test_a_distribution_without_its_kind_says_how_to_write_it(tmp_path, text, needles):
    """pydantic's "Unable to extract tag using discriminator 'dist'" becomes the key, its
    kinds, a close match and an example."""
    path = tmp_path / "vary.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_vary(path)
    for needle in needles:
        assert needle in caught.value.message
    assert "discriminator" not in caught.value.message


def test_spec_modes_and_their_errors():
    vary = VaryFile.model_validate(VARY)
    mode, keys, points = sw.SweepSpec(grid=FAST, vary=vary, samples=3).points()
    assert mode == "monte_carlo" and keys == tuple(VARY["vary"]) and len(points) == 3
    assert all(p.overrides["solver.time_limit_s"] == 120 for p in points)
    assert sw.SweepSpec(vary=vary, samples=3).used_seed == 11
    assert sw.SweepSpec(vary=vary, samples=3, seed=5).used_seed == 5
    for spec, message in [
        (sw.SweepSpec(), "nothing to sweep"),
        (sw.SweepSpec(samples=3), "needs --vary"),
        (sw.SweepSpec(vary=vary), "--samples"),
        (sw.SweepSpec(grid=GRID, vary=vary, samples=3), "one value per key"),
    ]:
        with pytest.raises(InputError, match=message):
            spec.points()


# ---- running points -------------------------------------------------------------------


def test_each_point_is_a_full_plan_and_infeasible_points_are_rows(grid_result, moe):
    table = grid_result.table
    assert list(table["point"]) == [0, 1, 2, 3]
    assert list(table["status"]) == ["optimal", "optimal", "infeasible", "optimal"]
    infeasible = table.iloc[2]
    assert infeasible["reason"] and math.isnan(infeasible["cost_per_hour_usd"])
    assert pd.isna(infeasible["gpus_h100-sxm"])
    ok = table[table["status"] == "optimal"]
    assert (ok["cost_per_month_usd"] == ok["cost_per_hour_usd"] * 730).all()
    gpu_cols = [c for c in table if c.startswith("gpus_")]
    assert (ok[gpu_cols].sum(axis=1) == ok["total_gpus"]).all()
    # the point equals plan() of the same scenario written out by hand
    base, cat = moe
    from planner.planning.pipeline import plan

    by_hand = base.model_copy(
        update={
            "hardware": base.hardware.model_copy(update={"gpus": ["h100-sxm", "a100-80gb"]}),
            "solver": base.solver.model_copy(update={"time_limit_s": 120}),
            "workload": base.workload.model_copy(update={"requests_per_second": 40}),
        }
    )
    assert table.iloc[3]["cost_per_hour_usd"] == plan(by_hand, cat).fleet.total_cost_per_hour_usd


def test_the_table_has_its_declared_columns(grid_result):
    table = grid_result.table
    keys = tuple(k for k, _ in GRID)
    gpu_cols = [c for c in table if c.startswith(tables.GPU_PREFIX)]
    assert list(table.columns) == ["point", *keys, *tables.OUTCOME, *gpu_cols]
    assert gpu_cols == sorted(gpu_cols) and gpu_cols
    for col in tables.COLUMNS:
        assert str(table[col.name].dtype) == col.dtype.replace("string", "string"), col.name


def test_the_process_pool_gives_the_same_rows(grid_result, moe):
    base, cat = moe
    pooled = sw.sweep(base, cat, sw.SweepSpec(grid=GRID), jobs=2)
    assert pooled.runner == "local (2 local processes)"
    _same_rows(pooled.table, grid_result.table)


def test_grid_tornado_and_summary(grid_result):
    t = grid_result.tornado
    assert t is not None and t.metric == "cost_per_month_usd"
    bar = {b.key: b for b in t.bars}["workload.requests_per_second"]
    table = grid_result.table
    # reference: max_gpus is the scenario's own (None); demand is the first listed (5)
    assert t.baseline == table.iloc[1]["cost_per_month_usd"]
    assert (bar.low_label, bar.high_label) == ("5", "40")
    assert (bar.low_cost, bar.high_cost) == tuple(table.iloc[[1, 3]]["cost_per_month_usd"])
    summary = grid_result.summary.set_index("metric")
    costs = table["cost_per_month_usd"].dropna()
    assert summary.loc["cost_per_month_usd", "points"] == 3
    assert summary.loc["cost_per_month_usd", "p50"] == pytest.approx(costs.median())


def test_sample_tornado_on_a_known_table():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, 400), rng.uniform(0, 1, 400)
    table = pd.DataFrame(
        {
            "point": range(400),
            "x": x,
            "y": y,
            "tier": np.where(x > 2, "never", np.where(y > 0.5, "spot", "on_demand")),
            "status": "optimal",
            "cost_per_month_usd": 1000 * x + 10 * y,
        }
    )
    t = tables.sample_tornado(table, ("y", "x", "tier"), "cost_per_month_usd")
    assert [b.key for b in t.bars][0] == "x"
    assert t.bars[0].low_cost < 200 and t.bars[0].high_cost > 800


def test_ctrl_c_keeps_finished_points(moe):
    base, cat = moe
    points = sw.SweepSpec(grid=GRID).points()[2]

    def stopper():
        """A progress callback that presses Ctrl-C once, at the first finished point."""
        pressed = []

        def progress(n):
            if not pressed:
                pressed.append(n)
                raise KeyboardInterrupt

        return progress

    inline = sw.run_local(base, cat, points, jobs=1, progress=stopper())
    assert inline.interrupted and len(inline.rows) == 1
    pooled = sw.run_local(base, cat, points, jobs=2, progress=stopper())
    assert pooled.interrupted and 1 <= len(pooled.rows) <= len(points)
    assert len({r["point"] for r in pooled.rows}) == len(pooled.rows)


# ---- outputs --------------------------------------------------------------------------


def test_csv_and_parquet_hold_the_table(grid_result, tmp_path):
    csv = pd.read_csv(write_table(grid_result, tmp_path / "sweep.csv"))
    assert list(csv.columns) == list(grid_result.table.columns)
    assert csv["cost_per_month_usd"].tolist() == pytest.approx(
        grid_result.table["cost_per_month_usd"].astype(float).tolist(), nan_ok=True
    )
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the [ray] extra)")
    parquet = pd.read_parquet(write_table(grid_result, tmp_path / "sweep.parquet"))
    pd.testing.assert_frame_equal(parquet, grid_result.table, check_dtype=False)
    with pytest.raises(InputError, match="csv or .parquet"):
        write_table(grid_result, tmp_path / "sweep.xlsx")


def test_json_is_one_object_with_rows_summary_and_tornado(grid_result):
    doc = sweep_dict(grid_result)
    assert doc["mode"] == "grid" and doc["points"] == 4
    assert set(doc["columns"]) == set(tables.OUTCOME)
    assert doc["rows"][2]["status"] == "infeasible" and doc["rows"][2]["cost_per_hour_usd"] is None
    assert doc["tornado"]["bars"][0]["key"] == "workload.requests_per_second"
    json.dumps(doc)


def _set_args(grid) -> list[str]:
    args = []
    for key, values in grid:
        args += ["--set", f"{key}=" + ",".join(json.dumps(v) for v in values)]
    return args


def test_cli_sweep_grid_json_and_csv(tmp_path):
    out = tmp_path / "grid.csv"
    res = CliRunner().invoke(
        cli, ["sweep", str(MOE), *_set_args(GRID), "--jobs", "1", "--json", "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert [r["status"] for r in doc["rows"]] == ["optimal", "optimal", "infeasible", "optimal"]
    assert len(pd.read_csv(out)) == 4


def test_cli_sweep_bad_key_is_exit_2_with_a_close_match():
    res = CliRunner().invoke(cli, ["sweep", str(MOE), "--set", "workload.request_per_second=1,2"])
    assert res.exit_code == 2
    assert "workload.request_per_second" in res.output and "requests_per_second" in res.output
    res = CliRunner().invoke(cli, ["sweep", str(MOE), "--set", "sla.tpot_ms=40,-1"])
    assert res.exit_code == 2 and "sla.tpot_ms" in res.output


def test_cli_ctrl_c_writes_the_finished_points(tmp_path, monkeypatch):
    real = sw.run_point
    calls = []

    def interrupted(base, catalog, point):
        calls.append(point.index)
        if len(calls) > 1:
            raise KeyboardInterrupt
        return real(base, catalog, point)

    monkeypatch.setattr(sw, "run_point", interrupted)
    out = tmp_path / "partial.csv"
    res = CliRunner().invoke(
        cli, ["sweep", str(MOE), *_set_args(GRID), "--jobs", "1", "-o", str(out)]
    )
    assert res.exit_code == 130, res.output
    assert "INTERRUPTED" in res.output and len(pd.read_csv(out)) == 1


def test_cli_monte_carlo_text_has_percentiles(tmp_path):
    vary = tmp_path / "vary.yaml"
    vary.write_text(json.dumps(VARY))
    res = CliRunner().invoke(
        cli,
        ["sweep", str(MOE), *_set_args(FAST), "--vary", str(vary), "--samples", "3", "--jobs", "1"],
    )
    assert res.exit_code == 0, res.output
    assert "seed 11" in res.output and "P10" in res.output and "P90" in res.output


def test_the_point_table_keeps_words_whole_with_many_long_inputs(grid_result, monkeypatch):
    """#13/#14: four long keys at 100 columns were folded into 6-column strips and the
    status broke as `optima` / `l`; now the inputs are #1.. with a legend, numbers unbroken,
    and $ per 1K output tokens has the digits it needs."""
    from dataclasses import replace

    from planner.render.sweep import render_sweep
    from planner.render.tables import Layout

    monkeypatch.setenv("COLUMNS", "100")
    keys = (
        "workload.requests_per_second",
        "finance.growth_per_month",
        "finance.reserved.discount_vs_on_demand",
        "hardware.pricing.usd_per_gpu_hour.b200",
    )
    frame = grid_result.table.copy()
    for i, k in enumerate(keys):
        frame[k] = [0.000373 + i + j / 7 for j in range(len(frame))]
    text = render_sweep(replace(grid_result, keys=keys, table=frame))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "Inputs: #1 workload.requests_per_second; #2 finance.growth_per_month" in text
    planned = frame["status"].eq("optimal").sum()
    assert sum(" optimal " in f"{line} " for line in lines) == planned
    assert "0.000373" in text  # 3 significant digits, not folded
    assert not any(line.rstrip().endswith("optima") for line in lines)
    wide = render_sweep(replace(grid_result, keys=keys, table=frame), Layout(wide=True))
    assert "workload.requests_per_second" in wide.splitlines()[2]  # full names when wide


def test_a_plan_over_time_stopped_at_the_limit_is_a_time_limit_row(catalog):
    """A Monte Carlo point of diurnal-chatbot whose plan over time stopped at the limit (gap
    1.3%) read `optimal`, the steady fleet's status, with the gap only in `reason`."""
    from dataclasses import replace

    from planner.planning.pipeline import plan

    scenario, cat = load_scenario(Path(MOE).parent / "build-vs-api.yaml", catalog)
    result = plan(scenario, cat)
    assert tables.outcome_of_plan(result)["status"] == "optimal"
    tp = result.over_time
    bound = tp.solution.total_cost * (1 - 0.013)
    stopped = replace(tp, solution=replace(tp.solution, status="time_limit", lower_bound=bound))
    row = tables.outcome_of_plan(replace(result, over_time=stopped))
    assert row["status"] == "time_limit"
    assert row["reason"] == "plan over time: solver gap 1.30%"


# ---- Ray ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of 2 CPUs on 127.0.0.1 only, started here and shut down after the
    module."""
    from planner.planning.sweep_ray import LOOPBACK_ONLY

    os.environ.setdefault(LOOPBACK_ONLY, "0")  # before ray is imported
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
def test_ray_gives_the_same_rows_as_the_local_run(ray_cluster, grid_result, moe):
    base, cat = moe
    on_ray = sw.sweep(base, cat, sw.SweepSpec(grid=GRID), ray_address="local")
    assert on_ray.runner.startswith("ray local (2 CPUs)")
    assert {n["NodeManagerAddress"] for n in ray_cluster.nodes()} == {"127.0.0.1"}
    _same_rows(on_ray.table, grid_result.table)
    assert on_ray.tornado == grid_result.tornado
    pd.testing.assert_frame_equal(on_ray.summary, grid_result.summary)
    spec = sw.SweepSpec(grid=FAST, vary=VaryFile.model_validate(VARY), samples=3)
    mc_ray = sw.sweep(base, cat, spec, ray_address="local")
    mc_local = sw.sweep(base, cat, spec, jobs=1)
    _same_rows(mc_ray.table, mc_local.table)
    assert mc_ray.seed == 11 and len(mc_ray.table) == 3


def test_a_point_skips_the_comparisons_but_its_row_is_the_full_plans():
    """#14: a point plans without the comparison plans (single GPU type, all on-demand, all
    reserved, energy), and its row is exactly the row of the full plan of the same inputs."""
    from planner.inputs.catalog import load_catalog
    from planner.planning.pipeline import plan

    base, cat = load_scenario(ROOT / "scenarios" / "diurnal-chatbot.yaml", load_catalog())
    point = sw.Point(0, {"hardware.gpus": ["h100-sxm", "h200"], "solver.time_limit_s": 120})
    scenario = sw.apply(base, point.overrides, cat)
    full = plan(scenario, cat)
    lean = plan(scenario, cat, comparisons=False)
    assert full.over_time is not None and lean.over_time is not None
    assert full.over_time.solution.status == "optimal"  # no clock in the comparison
    assert full.single_gpu_best is not None and full.over_time.all_on_demand is not None
    assert lean.single_gpu_best is None and lean.over_time.all_on_demand is None
    assert lean.energy is None
    row = sw.run_point(base, cat, point)
    expected = tables.outcome_of_plan(full)
    assert {k: row[k] for k in expected} == expected


def test_the_summary_prints_each_metric_in_its_unit():
    """P10/P50/P90 of a monthly cost are whole dollars, a price per 1K tokens three
    significant digits (the table printed 14,363.8 and 0.000941)."""
    from planner.render.sweep import _metric_text

    assert _metric_text("cost_per_month_usd", 14_363.8) == "$14,364"
    assert _metric_text("over_time_per_month_usd", 8_144.6) == "$8,145"
    assert _metric_text("cost_per_1k_output_tokens_usd", 0.000941) == "$0.000941"
    assert _metric_text("cost_per_month_usd", float("nan")) == ""


def test_a_bad_metric_exits_before_any_point_runs(monkeypatch):
    """--metric is checked before the sweep plans its points (a Monte Carlo of 1,000 points
    ran to the end and then refused), with the close matches."""
    from click.testing import CliRunner

    from planner.cli import cli

    def no_run(*_a, **_k):
        raise AssertionError("a point ran before --metric was checked")

    monkeypatch.setattr(sw, "execute", no_run)
    path = str(ROOT / "scenarios" / "chatbot.yaml")
    args = ["sweep", path, "--set", "sla.tpot_ms=40,50", "--metric", "cost_per_month"]
    res = CliRunner().invoke(cli, args, obj={})
    assert res.exit_code == 2, res.output
    assert "did you mean 'cost_per_month_usd'?" in res.output


def test_a_point_in_error_shows_why(tmp_path):
    """A point that fails (TensorRT-LLM asked of AMD GPUs only) says why in the table, as an
    infeasible one does; its GPUs cell was empty."""
    from click.testing import CliRunner

    from planner.cli import cli

    doc = {
        "name": "amd",
        "model": "llama-3.1-8b",
        "workload": {"requests_per_second": 2, "input_tokens": 512, "output_tokens": 128},
        "sla": {"tpot_ms": 50, "ttft_ms": 2000},
        "hardware": {"gpus": ["mi300x"]},
    }
    path = tmp_path / "amd.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = CliRunner().invoke(cli, ["sweep", str(path), "--set", "engine=vllm,trtllm"], obj={})
    assert res.exit_code == 0, res.output
    row = next(line for line in res.output.splitlines() if " trtllm " in line)
    assert "error" in row and "engine: trtllm runs on" in row


def test_errors_of_the_vary_file_name_it_not_set(tmp_path):
    """A misspelt `vary:` key and a draw the scenario refuses (a normal of mean 2, sd 5 draws
    -0.68 req/s at point 4 with seed 0) are the --vary file's, named with its path and how to
    bound the draws; they were reported as a `--set` the user never typed."""
    from planner.cli import cli

    def run(vary: dict) -> str:
        path = tmp_path / "vary.yaml"
        path.write_text(yaml.safe_dump({"vary": vary}))
        args = ["sweep", str(MOE), "--vary", str(path), "--samples", "8"]
        res = CliRunner().invoke(cli, args, obj={})
        assert res.exit_code == 2, res.output
        assert "--set" not in res.output
        return res.output

    normal = {"dist": "normal", "mean": 2, "sd": 5}
    out = run({"workload.requests_per_secnd": normal})
    assert f"--vary {tmp_path / 'vary.yaml'}: vary key workload.requests_per_secnd" in out
    assert "did you mean 'requests_per_second'" in out
    out = run({"workload.requests_per_second": normal})
    assert "point 4 drew workload.requests_per_second=-0.678" in out
    assert "min:/max:" in out


def test_a_key_no_class_reads_is_named(tmp_path):
    """mixed-traffic's classes each carry their own sla, so a top-level sla.tpot_ms of 10 or
    100 ms plans the same $17,177 a month: the sweep says why the swing is $0 and what to
    sweep instead, in its text and JSON."""
    from planner.cli import cli

    path = ROOT / "scenarios" / "mixed-traffic.yaml"
    args = ["sweep", str(path), "--set", "sla.tpot_ms=10,100", "--jobs", "1"]
    res = CliRunner().invoke(cli, [*args, "--json"], obj={})
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["notes"] == [
        "sla.tpot_ms: no class reads it: every class of workload.classes has its own sla; "
        "sweep workload.classes[i].sla.tpot_ms instead"
    ]
    costs = {r["cost_per_month_usd"] for r in data["rows"]}
    assert len(costs) == 1
