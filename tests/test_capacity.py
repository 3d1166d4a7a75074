"""Capacity of a fixed fleet (`planner capacity`): the largest-scale MIP against hand-computed
cases and a brute-force bisection, the answer checked by ordinary plans at and above it, the
reverse question (latency at a rate), and the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from planner import load_scenario, plan
from planner.cli import cli
from planner.errors import InfeasibleError, InputError
from planner.fleet.capacity import ScaleProblem, max_scale
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem, solve_fleet
from planner.planning.capacity import fleet_capacity, scenario_at_rate
from planner.render.capacity import layout_text, render_capacity
from planner.schema.scenario import Scenario

ROOT = Path(__file__).resolve().parent.parent
FLEET = ROOT / "scenarios" / "fleet-16xh100.yaml"
OPTIONS = SolverOptions(time_limit_s=60.0)


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), obj={}, catch_exceptions=False)


def feasible(problem: ScaleProblem, scale: float) -> bool:
    """Does the steady fleet MIP (the planner's own) find a fleet for `scale` within the
    fleet's counts?"""
    steady = FleetProblem(
        gpu=problem.gpu,
        tp=problem.tp,
        cost_per_hour=np.asarray(problem.tp, dtype=float),
        capacity=problem.capacity,
        demand=problem.mix * scale,
        inventory=problem.fleet,
        max_gpus=problem.max_gpus,
        min_replicas=problem.min_replicas,
    )
    return solve_fleet(steady, OPTIONS).status != "infeasible"


def bisection(problem: ScaleProblem, tol: float = 1e-7) -> float:
    """The largest feasible scale by bisection over feasibility solves (the brute force)."""
    lo, hi = 0.0, float(problem.capacity.max() * sum(problem.fleet.values())) + 1.0
    while hi - lo > tol * max(hi, 1.0):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if feasible(problem, mid) else (lo, mid)
    return lo


def test_one_candidate_by_hand():
    """tp 2 on 5 GPUs: 2 replicas of 3 req/s carry 6 req/s; one GPU stays idle."""
    problem = ScaleProblem(("g",), (2,), np.array([[3.0]]), np.array([1.0]), {"g": 5})
    sol = max_scale(problem, OPTIONS)
    assert sol.scale == pytest.approx(6.0)
    assert sol.replicas.tolist() == [2]


def test_two_classes_share_replicas_by_hand():
    """Mix 3:1 on replicas carrying 4 (class a) or 2 (class b) req/s: n replicas carry s
    with 0.75 s / 4 + 0.25 s / 2 <= n, so 4 replicas carry 4 / 0.3125 = 12.8 req/s."""
    problem = ScaleProblem(("g",), (1,), np.array([[4.0, 2.0]]), np.array([0.75, 0.25]), {"g": 4})
    sol = max_scale(problem, OPTIONS)
    assert sol.scale == pytest.approx(4.0 / (0.75 / 4 + 0.25 / 2))
    assert sol.load.sum(axis=0) == pytest.approx([0.75 * sol.scale, 0.25 * sol.scale])


def test_small_mixed_case_matches_a_bisection_over_solves():
    """Two GPU types, three candidates, two classes: packing matters (tp 4 vs tp 1)."""
    problem = ScaleProblem(
        gpu=("a", "a", "b"),
        tp=(1, 4, 2),
        capacity=np.array([[1.0, 0.0], [5.0, 3.0], [2.5, 1.5]]),
        mix=np.array([0.6, 0.4]),
        fleet={"a": 6, "b": 3},
    )
    sol = max_scale(problem, OPTIONS)
    brute = bisection(problem)
    assert sol.scale == pytest.approx(brute, rel=1e-4)
    assert sol.bound >= sol.scale
    assert feasible(problem, sol.scale) and not feasible(problem, sol.scale * 1.001)


@settings(max_examples=12, deadline=None)
@given(
    caps=st.lists(st.floats(0.1, 20.0), min_size=2, max_size=4),
    tps=st.lists(st.sampled_from([1, 2, 4]), min_size=4, max_size=4),
    count=st.integers(1, 12),
)
def test_the_answer_is_feasible_and_a_little_more_is_not(caps, tps, count):
    n = len(caps)
    problem = ScaleProblem(
        ("g",) * n, tuple(tps[:n]), np.array(caps)[:, None], np.array([1.0]), {"g": count}
    )
    sol = max_scale(problem, OPTIONS)
    if min(tps[:n]) > count:
        assert sol.scale == 0.0
        return
    assert feasible(problem, sol.scale)
    assert not feasible(problem, sol.scale * 1.001)


@pytest.fixture(scope="module")
def fleet16(catalog):
    scenario, cat = load_scenario(FLEET, catalog)
    return scenario, cat, fleet_capacity(scenario, cat, rate=20.0)


def test_16_h100s_answer_is_checked_by_plans_at_and_above_it(fleet16, unhurried):
    scenario, cat, result = fleet16
    top = result.max_requests_per_second
    assert 30 < top < 60  # the hand bisection: 38 req/s fits, 42 does not
    assert sum(d.gpus for d in result.deployments) <= 16
    at = plan(unhurried(scenario_at_rate(scenario, top)), cat)
    assert at.fleet.status == "optimal" and at.fleet.total_gpus <= 16
    with pytest.raises(InfeasibleError):
        plan(unhurried(scenario_at_rate(scenario, top * 1.001)), cat)


def test_16_h100s_binding_and_tokens(fleet16):
    _, _, result = fleet16
    assert result.binding[0] == "GPU count: 16 of 16 h100-sxm in use"
    assert any("TPOT" in b or "TTFT" in b or "memory" in b for b in result.binding[1:])
    # the next batch up and the class it fails, named as such ('batch 96 (all)' read as a size)
    assert any(re.search(r"batch \d+ fails class 'all': ", b) for b in result.binding[1:])
    assert result.max_output_tokens_per_s == pytest.approx(result.max_requests_per_second * 256)
    for d in result.deployments:
        assert max(d.tpot_ms_by_class.values()) <= 50 and max(d.ttft_ms_by_class.values()) <= 1000


def test_latency_at_a_lower_rate_is_no_worse_and_within_sla(fleet16, catalog):
    scenario, cat, result = fleet16
    assert result.at_rate is not None
    (seen,) = result.at_rate
    (line,) = [d for d in result.deployments if d.load_by_class["all"] > 0][:1]
    assert seen.requests_per_second == pytest.approx(20.0)
    assert seen.ttft_ms < line.ttft_ms_by_class["all"]  # less queueing at less load
    assert seen.tpot_ms == pytest.approx(line.tpot_ms_by_class["all"])
    with pytest.raises(InfeasibleError, match="more than this fleet serves"):
        fleet_capacity(scenario, cat, rate=result.max_requests_per_second * 1.01)


def test_a_scenario_without_a_fleet_is_a_user_error(catalog):
    scenario, cat = load_scenario(ROOT / "scenarios" / "chatbot.yaml", catalog)
    with pytest.raises(InputError, match="hardware.fleet"):
        fleet_capacity(scenario, cat)


def test_fleet_caps_solve_like_an_inventory():
    hw = Scenario.model_validate(
        {
            "model": "m",
            "workload": {"requests_per_second": 1, "input_tokens": 1, "output_tokens": 1},
            "hardware": {"fleet": {"h100-sxm": 16}, "inventory": {"h100-sxm": 8, "h200": 4}},
        }
    ).hardware
    assert hw.available() == {"h100-sxm": 8, "h200": 4}


def test_cli_capacity_json_has_the_promised_keys():
    res = invoke("capacity", str(FLEET), "--json", "--rate", "25")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    for key in ("max_requests_per_second", "max_output_tokens_per_s", "deployments", "binding"):
        assert key in data
    assert data["deployments"][0]["gpu"] == "h100-sxm"
    assert data["at_rate"]["requests_per_second"] == 25


def test_cli_capacity_text_names_rate_and_binding():
    res = invoke("capacity", str(FLEET))
    assert res.exit_code == 0, res.output
    assert "requests/s" in res.output and "Binding:" in res.output


def test_cli_unknown_fleet_gpu_exits_2_with_a_close_match(tmp_path):
    text = FLEET.read_text().replace("    h100-sxm: 16", "    h100-sxn: 16")
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    res = CliRunner().invoke(cli, ["capacity", str(path)], obj={})
    assert res.exit_code == 2
    assert "hardware.fleet" in res.output and "did you mean 'h100-sxm'" in res.output
    assert "Traceback" not in res.output


def test_cli_rate_above_capacity_exits_1():
    res = CliRunner().invoke(cli, ["capacity", str(FLEET), "--rate", "1000"], obj={})
    assert res.exit_code == 1 and "more than this fleet serves" in res.output


def test_cli_capacity_without_fleet_exits_2():
    res = CliRunner().invoke(cli, ["capacity", str(ROOT / "scenarios" / "chatbot.yaml")], obj={})
    assert res.exit_code == 2 and "hardware.fleet" in res.output


@pytest.mark.parametrize("command", ["capacity", "job"])
def test_new_commands_have_help_with_an_example(command):
    res = invoke(command, "--help")
    assert res.exit_code == 0 and "Example: planner" in res.output


def test_solve_checks_fleet_ids_too(tmp_path):
    text = FLEET.read_text().replace("    h100-sxm: 16", "    h100-sxn: 16")
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    res = CliRunner().invoke(cli, ["solve", str(path), "--no-export"], obj={})
    assert res.exit_code == 2 and "hardware.fleet" in res.output and "h100-sxm" in res.output


@pytest.mark.parametrize(
    ("job", "needle"),
    [
        ({"requests": 5, "tokens": 100}, "exactly one of 'requests' or 'tokens'"),
        ({"requests": 5, "deadline_hours": 0}, "deadline_hours"),
        ({"requests": 5, "deadline_hours": 1, "spot": True}, "unknown key"),
    ],
)
def test_bad_jobs_exit_2_with_the_key(tmp_path, job, needle):
    doc = {"input_tokens": 100, "output_tokens": 10, "deadline_hours": 1, **job}
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps({"model": "llama-3.1-8b", "workload": {"job": doc}}))
    res = CliRunner().invoke(cli, ["job", str(path)], obj={})
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output


def test_fleet_gpus_the_engine_cannot_use_are_named_among_what_binds(fleet16):
    """16 H100s and 8 MI300Xs on TensorRT-LLM: the answer is the H100s', and the MI300Xs are
    named as left out, not silently idle; a fleet of MI300Xs alone exits 2."""
    scenario, cat, alone = fleet16
    hw = scenario.hardware.model_copy(update={"fleet": {"h100-sxm": 16, "mi300x": 8}})
    trt = scenario.model_copy(update={"engine": "trtllm", "hardware": hw})
    result = fleet_capacity(trt, cat)
    assert {d.gpu for d in result.deployments} == {"h100-sxm"}
    assert any(b.startswith("trtllm does not run on mi300x") for b in result.binding)
    amd = hw.model_copy(update={"fleet": {"mi300x": 8}})
    with pytest.raises(InputError, match="engine: trtllm runs on none of the GPUs allowed"):
        fleet_capacity(trt.model_copy(update={"hardware": amd}), cat)


LONG = ROOT / "scenarios" / "long-prompt.yaml"


def _long_prompt_on_a_fleet(tmp_path, mode: str) -> Path:
    """long-prompt.yaml (16,384-token prompts) on 16 H100 + 4 H200, disaggregated: `mode`."""
    text = LONG.read_text().replace("  gpus: [h100-sxm, h200]", "  fleet: {h100-sxm: 16, h200: 4}")
    path = tmp_path / "long.yaml"
    path.write_text(text.replace("disaggregated: auto", f"disaggregated: {mode}"))
    return path


def test_capacity_says_it_leaves_pools_out(tmp_path):
    """Pools were dropped without a word: 3.42 req/s on aggregated replicas, while solve with
    pools serves 4.00 on this fleet; the answer stands, with a note in text and JSON."""
    path = _long_prompt_on_a_fleet(tmp_path, "auto")
    res = invoke("capacity", str(path), "--json")
    data = json.loads(res.output)
    assert data["max_requests_per_second"] == pytest.approx(3.42, abs=0.005)
    note, *errors = data["notes"]
    assert note.startswith("prefill/decode pools are not sized by planner capacity")
    assert all(e.startswith("Prediction error") for e in errors)  # one per GPU used (#10)
    assert "Note: prefill/decode pools" in invoke("capacity", str(path)).output


@pytest.mark.parametrize("command", ["capacity", "job"])
def test_pools_asked_for_explicitly_exit_2(tmp_path, command):
    path = _long_prompt_on_a_fleet(tmp_path, "true")
    if command == "job":
        text = path.read_text().replace(
            "  requests_per_second: 4\n",
            "  job: {requests: 1000, input_tokens: 16384, output_tokens: 256, "
            "deadline_hours: 24}\n",
        )
        text = text.replace("  input_tokens: 16384\n  output_tokens: 256\n", "")
        path.write_text(text.replace("  min_replicas: 2\n", "  min_replicas: 1\n"))
    res = CliRunner().invoke(cli, [command, str(path)], obj={})
    assert res.exit_code == 2, res.output
    assert "search.disaggregated: true" in res.output


def test_layout_text_gives_the_gpus_a_replica_takes():
    """64 GPUs in 4 replicas of tp 4, pp 2, dp 2: 4 x 2 x 2 = 16 GPUs each."""
    assert layout_text(2, 8, 2, 64, 4) == "pp 2, ep 8, dp 2 (16 GPUs each)"
    assert layout_text(1, 1, 1, 16, 2) == "-"


def test_the_batch_limit_is_the_chosen_layouts_own(tmp_path, catalog):
    """deepseek-r1 on 64 H100: the line runs tp 2 / pp 2 / ep 8 / dp 4 at batch 256, and batch
    384 of that layout fails on TPOT (54.2 ms > 50); the reason was once pp 1's out of memory
    (196 GB/GPU), a row of another layout with the same gpu/tp/quant/kv."""
    text = (ROOT / "scenarios" / "deepseek-r1-h100.yaml").read_text()
    path = tmp_path / "ds.yaml"
    path.write_text(text.replace("  gpus: [h100-sxm]", "  fleet: {h100-sxm: 64}"))
    scenario, cat = load_scenario(path, catalog)
    result = fleet_capacity(scenario, cat)
    (line,) = result.deployments
    assert (line.tp, line.pp, line.ep, line.dp_attention, line.batch) == (2, 2, 8, 4, 256)
    assert line.batch_limit == "batch 384 fails class 'all': TPOT 54.2 ms > 50 ms"
    assert line.gpus == 64 and line.replicas == 4
    shown = render_capacity(result)
    assert "pp 2, ep 8, dp 4 (16 GPUs each)" in shown
    assert "h100-sxm tp 2 pp 2 ep 8 dp 4 fp8 batch 256: batch 384 fails" in shown


def _deepseek_on(tmp_path, fleet: int, min_replicas: int = 1) -> Path:
    """deepseek-r1-h100.yaml on a fleet of `fleet` H100s (its smallest replica: 16 GPUs)."""
    text = (ROOT / "scenarios" / "deepseek-r1-h100.yaml").read_text()
    text = text.replace("  gpus: [h100-sxm]", f"  fleet: {{h100-sxm: {fleet}}}")
    path = tmp_path / "ds.yaml"
    path.write_text(text.replace("min_replicas: 1", f"min_replicas: {min_replicas}"))
    return path


def test_a_fleet_too_small_for_one_replica_says_so_without_none(tmp_path):
    """8 H100s hold no 16-GPU replica; the message said 'max_gpus None' and blamed the
    constraints. 32 H100s hold 2 such replicas, not min_replicas 3."""
    res = CliRunner().invoke(cli, ["capacity", str(_deepseek_on(tmp_path, 8))], obj={})
    assert res.exit_code == 1
    assert "None" not in res.output
    assert "8 x h100-sxm cannot hold one replica" in res.output and "16 GPUs" in res.output
    res = CliRunner().invoke(cli, ["capacity", str(_deepseek_on(tmp_path, 32, 3))], obj={})
    assert res.exit_code == 1 and "None" not in res.output
    assert "(min_replicas 3; the smallest replica needs 16 GPUs)" in res.output
    assert "relax constraints.min_replicas" in res.output


def test_solve_on_a_fleet_names_hardware_fleet_not_inventory(tmp_path):
    res = CliRunner().invoke(cli, ["solve", str(_deepseek_on(tmp_path, 8)), "--no-export"], obj={})
    assert res.exit_code == 1
    assert "raise hardware.fleet or constraints.max_gpus" in res.output
    assert "hardware.inventory" not in res.output


def test_a_fleet_on_llama_cpp_serves_with_the_quants_it_loads(fleet16):
    """llama.cpp on the 16 H100s: fp8 is left out with a note (capacity at bf16); a search of
    fp8 alone exits 2."""
    scenario, cat, _ = fleet16
    cpp = scenario.model_copy(update={"engine": "llamacpp"})
    result = fleet_capacity(cpp, cat)
    assert {d.quant for d in result.deployments} == {"bf16"}
    assert any(n.startswith("llamacpp does not run fp8, so left out") for n in result.notes)
    fp8 = cpp.search.model_copy(update={"quants": ["fp8"]})
    with pytest.raises(InputError, match="llamacpp runs none of the quants asked for"):
        fleet_capacity(cpp.model_copy(update={"search": fp8}), cat)


def _fleet16_with(fleet16, hardware: dict | None = None, constraints: dict | None = None):
    """fleet-16xh100 with hardware / constraints keys changed, and its capacity."""
    scenario, cat, _ = fleet16
    hw = scenario.hardware.model_copy(update=hardware or {})
    c = scenario.constraints.model_copy(update=constraints or {})
    changed = scenario.model_copy(update={"hardware": hw, "constraints": c})
    return changed, cat, fleet_capacity(changed, cat)


def test_an_inventory_below_the_fleet_is_what_the_headline_names(fleet16):
    """16 H100s owned, an inventory of 8: 4 tp 2 replicas, half of the 16's 8 (each replica
    41.2 / 8 = 5.15 req/s), and the headline says 8 of the 16 are usable, not '16 x h100-sxm
    serves' beside '8 of 8 in use'."""
    _, _, whole = fleet16
    _, _, result = _fleet16_with(fleet16, hardware={"inventory": {"h100-sxm": 8}})
    assert result.max_requests_per_second == pytest.approx(whole.max_requests_per_second / 2)
    assert sum(d.replicas for d in result.deployments) == 4
    assert result.usable == {"h100-sxm": 8}
    assert result.binding[0] == (
        "GPU count: 8 of 8 usable h100-sxm in use (hardware.inventory caps the fleet's 16)"
    )
    text = render_capacity(result)
    assert "16 x h100-sxm (8 usable: hardware.inventory) serves at most 20.6 requests/s" in (
        " ".join(text.split())
    )


def test_max_gpus_is_named_when_it_leaves_gpus_idle(fleet16):
    """max_gpus 11 on 16 H100s: 5 tp 2 replicas (10 GPUs, 5/8 of 41.2 = 25.7 req/s); a sixth
    would add 5.15 req/s, so the 6 idle GPUs are max_gpus's doing, not 'no replica adds
    capacity'."""
    _, _, whole = fleet16
    _, _, result = _fleet16_with(fleet16, constraints={"max_gpus": 11})
    assert result.max_requests_per_second == pytest.approx(whole.max_requests_per_second * 5 / 8)
    assert result.binding[0] == (
        "GPU count: 6 h100-sxm idle: constraints.max_gpus 11 blocks another replica (10 GPUs "
        "in use, the smallest h100-sxm replica takes 2)"
    )
    assert not any("no replica adds capacity" in b for b in result.binding)


def test_hardware_gpus_outside_the_fleet_exit_2_naming_both_keys(tmp_path):
    """fleet {h100-sxm: 16} with gpus [h200]: capacity used the 16 H100s while solve planned
    H200s the team does not own; both now refuse the contradiction."""
    path = tmp_path / "h200.yaml"
    path.write_text(FLEET.read_text().replace("  fleet:", "  gpus: [h200]\n  fleet:"))
    for command in (["capacity"], ["solve", "--no-export"]):
        res = CliRunner().invoke(cli, [command[0], str(path), *command[1:]], obj={})
        assert res.exit_code == 2, res.output
        assert "hardware.gpus: h200 not in hardware.fleet ({h100-sxm: 16})" in res.output
        assert "Traceback" not in res.output


MIXED = ROOT / "scenarios" / "mixed-traffic.yaml"


def _mixed_on_l40s_and_gaudi3(tmp_path, rate: float, price: float | None = None) -> Path:
    """mixed-traffic's classes at `rate` req/s on a fleet of 4 L40S and 2 Gaudi 3 (no catalog
    price), the Gaudi 3s priced at `price` $/GPU-hour when given."""
    import yaml

    doc = yaml.safe_load(MIXED.read_text())
    doc["hardware"] = {"fleet": {"l40s": 4, "gaudi3": 2}}
    if price is not None:
        doc["hardware"]["pricing"] = {"usd_per_gpu_hour": {"gaudi3": price}}
    doc["workload"]["requests_per_second"] = rate
    doc.pop("finance", None)
    path = tmp_path / "mixed-fleet.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_solve_names_unpriced_fleet_gpus_it_left_out(tmp_path, catalog):
    """capacity uses the unpriced Gaudi 3s (an owned fleet needs no price); solve at that rate
    left them out and only said 11 L40S were needed. It now names them and the key to price
    them by, and with a price it plans the capacity's rate."""
    scenario, cat = load_scenario(_mixed_on_l40s_and_gaudi3(tmp_path, 1.0), catalog)
    top = fleet_capacity(scenario, cat).max_requests_per_second
    assert {d.gpu for d in fleet_capacity(scenario, cat).deployments} >= {"gaudi3"}
    path = _mixed_on_l40s_and_gaudi3(tmp_path, round(top, 2) - 0.01)
    res = CliRunner().invoke(cli, ["solve", str(path), "--no-export"], obj={})
    assert res.exit_code == 1, res.output
    assert "hardware.fleet's gaudi3 left out: no on-demand price in the catalog" in res.output
    assert "hardware.pricing.usd_per_gpu_hour: {gaudi3: <$/GPU-hour>}" in res.output
    priced = _mixed_on_l40s_and_gaudi3(tmp_path, round(top, 2) - 0.01, price=2.0)
    res = CliRunner().invoke(cli, ["solve", str(priced), "--no-export"], obj={})
    assert res.exit_code == 0, res.output


def test_hardware_gpus_within_the_fleet_bound_capacity_as_they_bind_solve(fleet16, unhurried):
    """fleet {h100-sxm: 16, l40s: 8} with gpus [l40s]: capacity used the H100s solve may not;
    it now plans the L40S alone (70B fp8 needs tp 8 on 48 GB cards: one replica), says the
    H100s are not usable by hardware.gpus, and solve at that rate fits the 8 L40S."""
    scenario, cat, result = _fleet16_with(
        fleet16,
        hardware={"fleet": {"h100-sxm": 16, "l40s": 8}, "gpus": ["l40s"]},
        constraints={"min_replicas": 1},
    )
    assert result.gpus_used == {"l40s": 8}
    assert [(d.gpu, d.tp, d.replicas) for d in result.deployments] == [("l40s", 8, 1)]
    assert result.usable == {"h100-sxm": 0, "l40s": 8}
    assert "16 x h100-sxm (0 usable: hardware.gpus), 8 x l40s serves" in " ".join(
        render_capacity(result).split()
    )
    top = result.max_requests_per_second
    at = plan(unhurried(scenario_at_rate(scenario, top)), cat)
    assert at.fleet.total_gpus <= 8 and {d.gpu for d in at.fleet.deployments} == {"l40s"}
