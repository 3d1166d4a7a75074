"""Multi-model platforms (issue 12): one MIP equals the separate solves when no shared limit
binds, a binding shared limit changes the split, every replica serves one model, redundancy
holds per model, user errors exit 2, and the shipped platform scenario solves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from planner import load_scenario, plan
from planner.cli import cli
from planner.errors import InfeasibleError, InputError
from planner.fleet.redundancy import headroom_after_loss
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import solve_fleet
from planner.inputs.platforms import load_platform
from planner.planning import platform as pl

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "tests" / "fixtures" / "small-platform.yaml"
SHIPPED = ROOT / "scenarios" / "platforms" / "platform.yaml"
OPTIONS = SolverOptions(time_limit_s=60)


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), obj={})


def variant(tmp_path: Path, source: Path = SMALL, **constraints) -> Path:
    """The platform file with some constraints (or hardware.inventory) changed."""
    doc = yaml.safe_load(source.read_text())
    inventory = constraints.pop("inventory", None)
    doc.setdefault("constraints", {}).update(constraints)
    if inventory is not None:
        doc.setdefault("hardware", {})["inventory"] = inventory
    out = tmp_path / "p.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


def test_joint_mip_equals_the_separate_solves_when_no_shared_limit_binds(catalog):
    """The one MIP (solved as one, not by the shortcut) costs the sum of each model alone;
    the cap of 100 GPUs is far from binding."""
    platform, cat = load_platform(SMALL, catalog)
    services = [pl._service(platform, i, cat) for i in range(len(platform.models))]
    joint = solve_fleet(pl.joint_problem(services, platform, cat), OPTIONS)
    alone = [solve_fleet(s.alone, OPTIONS).cost_per_hour for s in services]
    assert joint.status == "optimal"
    assert joint.cost_per_hour == pytest.approx(sum(alone), rel=1e-9)
    result = pl.plan_platform(platform, cat)
    assert result.total_cost_per_hour_usd == pytest.approx(sum(alone), rel=1e-9)
    assert "no shared limit binds" in result.notes[0]


def test_each_section_is_the_models_own_single_model_plan(catalog):
    """Each section's fleet equals planning that model as a scenario of its own."""
    platform, cat = load_platform(SMALL, catalog)
    result = pl.plan_platform(platform, cat)
    for i, section in enumerate(result.sections):
        own = plan(platform.service_scenario(i), cat)
        assert section.fleet.total_cost_per_hour_usd == pytest.approx(
            own.fleet.total_cost_per_hour_usd, rel=1e-9
        )


def test_a_binding_shared_inventory_changes_the_split(tmp_path, catalog):
    """Alone each model takes one L40S; with one L40S between them, one model moves."""
    free = pl.plan_platform(*load_platform(SMALL, catalog))
    assert free.gpus_by_type == {"l40s": 2}
    bound = pl.plan_platform(*load_platform(variant(tmp_path, inventory={"l40s": 1}), catalog))
    assert bound.gpus_by_type.get("l40s", 0) <= 1
    assert bound.total_cost_per_hour_usd > free.total_cost_per_hour_usd
    assert bound.alone_cost_per_hour_usd == pytest.approx(free.alone_cost_per_hour_usd)
    assert "shared limits bind" in bound.notes[0]


def test_every_replica_serves_one_model(tmp_path, catalog):
    platform, cat = load_platform(variant(tmp_path, inventory={"l40s": 1}), catalog)
    services = [pl._service(platform, i, cat) for i in range(len(platform.models))]
    problem = pl.joint_problem(services, platform, cat)
    cand, cols = np.asarray(problem.service), np.asarray(problem.demand_service)
    assert (problem.capacity[cand[:, None] != cols[None, :]] == 0).all()
    sol = solve_fleet(problem, OPTIONS)
    assert (sol.load[cand[:, None] != cols[None, :]] == 0).all()


def test_a_budget_below_the_models_alone_exits_1_before_the_joint_solve(tmp_path, catalog):
    """Each model alone is one L40S ($0.79/h x 730 h = $577/month), together $1,153: a $700
    budget is refused from the alone costs at once (it ran the joint MIP to its limit and
    could exit 3); the joint solve is never reached."""
    path = variant(tmp_path, max_monthly_budget_usd=700)
    with pytest.raises(InfeasibleError) as err:
        pl.plan_platform(*load_platform(path, catalog))
    assert str(err.value) == (
        "constraints.max_monthly_budget_usd: $700/month is below what the models cost planned "
        "alone (at least $1,153/month: tiny $577; code $577), and together they cost no less; "
        "raise the budget or drop a model"
    )
    assert err.value.details == {"binding": "budget"}


def test_a_shared_gpu_cap_too_small_names_the_shared_limit(tmp_path, catalog):
    """One GPU each alone, max_gpus 1 together: the joint MIP finds no plan."""
    path = variant(tmp_path, max_gpus=1)
    with pytest.raises(InfeasibleError, match="shared limits: every model can be served alone"):
        pl.plan_platform(*load_platform(path, catalog))


def test_per_model_gaps_are_not_claimed_when_the_joint_solve_stops_short(catalog):
    """A joint solve at its time limit proves no bound per model: each section's share kept
    its own cost as the bound (gap 0.0%) beside a platform gap of 28%; it is now NaN (null
    in the JSON) and the text says the gap is not proven for the model."""
    from planner.render.text import render_plan

    platform, cat = load_platform(SMALL, catalog)
    services = [pl._service(platform, i, cat) for i in range(len(platform.models))]
    problem = pl.joint_problem(services, platform, cat)
    joint = solve_fleet(problem, OPTIONS)
    stopped = pl.replace(joint, status="time_limit", lower_bound=joint.cost_per_hour * 0.72)
    share = pl._split(stopped, problem, services, 0)
    assert np.isnan(share.lower_bound) and np.isnan(share.gap)
    assert pl._split(joint, problem, services, 0).gap == 0.0  # optimal: the share is proven
    section = pl._section(services[0], share, cat, OPTIONS, "time_limit")
    assert "time_limit (gap not proven for this model: see the platform's)" in " ".join(
        render_plan(section).split()
    )


def test_redundancy_holds_for_each_model(tmp_path, catalog):
    path = variant(tmp_path, redundancy="n_plus_1", same_vendor=True)
    result = pl.plan_platform(*load_platform(path, catalog))
    for section in result.sections:
        assert section.failover and min(f.peak_share_after_loss for f in section.failover) >= 1
        left = headroom_after_loss(section.problem, _replicas(section), OPTIONS)
        assert left and min(left.values()) >= 1 - 1e-9  # recomputed after dropping each
        vendors = {catalog.gpus[d.gpu].vendor for d in section.fleet.deployments}
        assert len(vendors) == 1


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"model": "llama-3.1-8b"}, "not both"),
        ({"finance": {"horizon_months": 12}}, "not supported yet"),
        ({"constraints": {"redundancy": "n_plus_0"}}, "constraints.redundancy"),
        ({"models": [{"model": "llama-3.2-1b", "workload": {"requests_per_second": 1,
          "input_tokens": 10, "output_tokens": 10}}] * 2}, "unique name"),
        ({"models": [{"model": "lama-3.2-1b", "workload": {"requests_per_second": 1,
          "input_tokens": 10, "output_tokens": 10}}]}, "models[0].model"),
    ],
)  # fmt: skip
def test_platform_user_errors_exit_2(tmp_path, change, needle):
    doc = yaml.safe_load(SMALL.read_text())
    doc.update(change)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = invoke("solve", str(path), "--no-export")
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output


def test_plot_with_a_platform_exits_2(tmp_path):
    res = invoke("solve", str(SMALL), "--no-export", "--plot")
    assert res.exit_code == 2 and "not supported yet for a platform" in res.output


def test_platform_json_and_workbooks_on_the_command_line(tmp_path):
    res = invoke("solve", str(SMALL), "--json", "-o", str(tmp_path / "p.xlsx"))
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [m["name"] for m in data["models"]] == ["tiny", "code"]
    total = sum(m["total_cost_per_hour_usd"] for m in data["models"])
    assert data["total"]["total_cost_per_hour_usd"] == pytest.approx(total)
    written = sorted(p.name for p in tmp_path.glob("*.xlsx"))
    assert written == ["p-code.xlsx", "p-tiny.xlsx", "p.xlsx"]
    from openpyxl import load_workbook

    sheet = load_workbook(tmp_path / "p.xlsx")["Platform"]
    assert [sheet.cell(r, 1).value for r in range(2, 5)] == ["tiny", "code", "total"]
    assert sheet.cell(4, 6).value == "=SUM(F2:F3)"


@pytest.mark.slow  # three models with n+1 and same_vendor: ~15 s of solves
def test_shipped_platform_scenario_solves_and_matches_separate_solves(catalog):
    result = pl.plan_platform(*load_platform(SHIPPED, catalog))
    assert result.status == "optimal"
    assert result.total_cost_per_hour_usd == pytest.approx(sum(result.alone_cost_per_hour_usd))
    for section in result.sections:
        vendors = {catalog.gpus[d.gpu].vendor for d in section.fleet.deployments}
        assert len(vendors) == 1
        assert min(f.peak_share_after_loss for f in section.failover) >= 1


def test_n_plus_1_on_the_shipped_moe_scenario(catalog):
    """moe.yaml with min_replicas 2 pairs an H100-NVL with an H100-PCIe: losing the NVL
    leaves under a third of the peak. n_plus_1 plans a fleet that keeps the whole peak."""
    scenario, cat = load_scenario(ROOT / "scenarios" / "moe.yaml", catalog)
    base = plan(scenario, cat)
    before = headroom_after_loss(base.problem, _replicas(base), OPTIONS)
    assert min(before.values()) < 0.5
    held = scenario.model_copy(
        update={"constraints": scenario.constraints.model_copy(update={"redundancy": "n_plus_1"})}
    )
    after = plan(held, cat)
    assert after.failover and min(f.peak_share_after_loss for f in after.failover) >= 1
    assert after.fleet.total_cost_per_hour_usd > base.fleet.total_cost_per_hour_usd


def _replicas(result) -> np.ndarray:
    """The plan's replicas per offered candidate (the fleet lines matched by key)."""
    keys = result.offered.key_frame()
    out = np.zeros(len(keys), dtype=np.int64)
    for d in result.fleet.deployments:
        match = (
            (keys["gpu"] == d.gpu)
            & (keys["tp"] == d.tp)
            & (keys["quant"] == d.quant)
            & (keys["kv_dtype"] == d.kv_dtype)
            & (keys["batch"] == d.batch)
        )
        out[np.flatnonzero(match.to_numpy())] = d.replicas
    return out


def test_input_error_for_unknown_gpu_in_a_platform(tmp_path, catalog):
    doc = yaml.safe_load(SMALL.read_text())
    doc["hardware"]["gpus"] = ["h100-sx"]
    path = tmp_path / "gpu.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"models\[0\]: hardware.gpus\[0\].*h100-sxm"):
        load_platform(path, catalog)


def test_other_commands_refuse_a_platform_with_exit_2():
    res = invoke("compare", str(SHIPPED))
    assert res.exit_code == 2 and "only `planner solve`" in res.output


def test_a_service_on_tensorrt_llm_leaves_the_amd_gpus_to_the_others(tmp_path, catalog):
    """One model on TensorRT-LLM, the fleet's list with an MI300X: that service plans NVIDIA
    GPUs only and its section says why; the vLLM service may still use the MI300X."""
    doc = yaml.safe_load(SMALL.read_text())
    doc["models"][1]["engine"] = "trtllm"
    doc["hardware"]["gpus"] = ["l40s", "h100-sxm", "mi300x"]
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = pl.plan_platform(*load_platform(path, catalog))
    code = result.sections[1]
    assert "mi300x" not in {d.gpu for d in code.fleet.deployments}
    assert any(n.startswith("trtllm does not run on mi300x") for n in code.notes)
    assert not any("does not run on" in n for n in result.sections[0].notes)


def test_a_service_on_llama_cpp_leaves_fp8_out(tmp_path, catalog):
    """One model on llama.cpp: its service plans without fp8 and its section says why."""
    doc = yaml.safe_load(SMALL.read_text())
    doc["models"][1]["engine"] = "llamacpp"
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = pl.plan_platform(*load_platform(path, catalog))
    code = result.sections[1]
    assert {d.quant for d in code.fleet.deployments} <= {"bf16"}
    assert any(n.startswith("llamacpp does not run fp8, so left out") for n in code.notes)
    assert not any("does not run fp8" in n for n in result.sections[0].notes)
