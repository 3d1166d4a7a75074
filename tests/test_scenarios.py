"""Scenario files: strict validation with clear messages, and explained infeasibility."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from planner.cli import cli
from planner.errors import InfeasibleError, InputError
from planner.inputs.scenarios import load_scenario
from planner.perf.table import values
from planner.planning.pipeline import plan

BASE = {
    "model": "llama-3.1-8b",
    "workload": {"requests_per_second": 5, "input_tokens": 512, "output_tokens": 128},
    "sla": {"tpot_ms": 50, "ttft_ms": 2000},
    "hardware": {"gpus": ["h100-sxm", "l40s", "a100-80gb"]},
}


def write(tmp_path: Path, doc, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def solve(path: Path):
    return CliRunner().invoke(cli, ["solve", str(path), "--no-export"], obj={})


def with_(**changes):
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    for dotted, value in changes.items():
        node = doc
        keys = dotted.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        if value is None:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "needles"),
    [
        ("model: x\nsla: {tpot_ms: 5\n", ["malformed YAML at line", "column"]),
        ("- a\n- b\n", ["expected a mapping", "got a list"]),
        ("", ["got an empty file"]),
        (with_(worklaod={"x": 1}), ["worklaod: unknown key", "did you mean 'workload'"]),
        (with_(sla__tpot_msec=5), ["sla.tpot_msec: unknown key", "did you mean 'tpot_ms'"]),
        (
            with_(workload__requests_per_second=None, workload__classes=None),
            ["missing requests_per_second"],
        ),
        (with_(workload__input_tokens="many"), ["workload.input_tokens", "'many'"]),
        (with_(sla__tpot_ms="fifty"), ["sla.tpot_ms", "number of milliseconds"]),
        (with_(sla__tpot_ms=-3), ["sla.tpot_ms", "greater than 0"]),
        (with_(sla__tpot_ms=0), ["sla.tpot_ms", "greater than 0"]),
        (with_(workload__requests_per_second=float("nan")), ["requests_per_second", "finite"]),
        (with_(workload__requests_per_second=float("inf")), ["requests_per_second", "finite"]),
        (
            with_(model="llama-3.1-8"),
            ["model: unknown model 'llama-3.1-8'", "did you mean 'llama-3.1-8b'"],
        ),
        (with_(hardware__gpus=["h100-sxm", "h200x"]), ["hardware.gpus[1]", "did you mean 'h200'"]),
        (with_(search={"quants": ["fp8", "in4-awq"]}), ["search.quants[1]", "int4-awq"]),
        (with_(workload={"requests_per_second": 5, "classes": []}), ["classes is empty"]),
        (
            with_(
                workload={
                    "requests_per_second": 5,
                    "classes": [
                        {"name": "a", "share": 0.5, "input_tokens": 10, "output_tokens": 10},
                        {"name": "b", "share": 0.3, "input_tokens": 10, "output_tokens": 10},
                    ],
                }
            ),
            ["shares must sum to 1", "0.8"],
        ),
        (
            with_(
                workload={
                    "requests_per_second": 5,
                    "classes": [
                        {"name": "a", "share": 1.0, "input_tokens": 0, "output_tokens": 10}
                    ],
                }
            ),
            ["workload.classes[0].input_tokens", "greater than 0"],
        ),
        (with_(model="./missing/config.json"), ["neither a catalog id nor an existing"]),
    ],
)
def test_bad_scenarios_exit_2_with_file_key_and_hint(tmp_path, doc, needles):
    path = write(tmp_path, doc)
    res = solve(path)
    assert res.exit_code == 2, res.output
    assert str(path) in res.output
    for needle in needles:
        assert needle in res.output
    assert "Traceback" not in res.output and res.output.count("\n") == 1


def test_units_as_strings_are_accepted(tmp_path, catalog):
    path = write(tmp_path, with_(sla__tpot_ms="50ms", sla__ttft_ms="2s"))
    scenario, _ = load_scenario(path, catalog)
    assert scenario.sla.tpot_ms == 50 and scenario.sla.ttft_ms == 2000


def test_a_bad_duration_shows_its_value_once(tmp_path):
    res = solve(write(tmp_path, with_(sla__ttft_ms="abc")))
    assert res.exit_code == 2, res.output
    assert "sla.ttft_ms: expected a number of milliseconds" in res.output
    assert res.output.count("'abc'") == 1, res.output


def test_missing_file_exits_2(tmp_path):
    res = solve(tmp_path / "nope.yaml")
    assert res.exit_code == 2 and "file not found" in res.output


def test_model_from_config_json(tmp_path, catalog):
    fixture = Path(__file__).parent / "fixtures" / "hf_configs"
    config = sorted(fixture.glob("llama*.json"))[0]
    path = write(tmp_path, with_(model=str(config)))
    scenario, cat = load_scenario(path, catalog)
    assert cat.model(scenario.model).params_total == 8_030_261_248
    assert plan(scenario, cat).fleet.deployments


def plan_of(tmp_path, catalog, doc):
    scenario, cat = load_scenario(write(tmp_path, doc), catalog)
    return plan(scenario, cat)


def test_a_class_without_a_target_is_said_to_be_left_to_cost(tmp_path, catalog):
    """No sla: the plan is the cheapest whatever the latency, and says so with the slowest
    TTFT its lines reach; with both targets set there is no such note."""
    result = plan_of(tmp_path, catalog, with_(sla=None))
    notes = [n for n in result.notes if n.startswith("class 'all' has no TPOT or TTFT target")]
    assert len(notes) == 1 and "set sla.tpot_ms and sla.ttft_ms" in notes[0]
    worst = max(d.ttft_ms_by_class["all"] for d in result.fleet.deployments)
    assert f"TTFT up to {worst:,.0f} ms" in notes[0]
    only_ttft = plan_of(tmp_path, catalog, with_(sla__ttft_ms=None))
    assert any("has no TTFT target: it is left to cost" in n for n in only_ttft.notes)
    assert not any("target:" in n for n in plan_of(tmp_path, catalog, BASE).notes)


def test_infeasible_memory_names_the_gap(tmp_path, catalog):
    doc = with_(model="llama-3.1-405b", hardware__gpus=["l40s", "rtx-4090"])
    with pytest.raises(InfeasibleError, match=r"memory: llama-3.1-405b does not fit") as err:
        plan_of(tmp_path, catalog, doc)
    # L40S has no NVLink and no catalogued scale-out link: a larger tp cannot help (issue #11)
    assert "GB per GPU" in str(err.value) and "scale-out link" in str(err.value)
    assert "larger tp" not in str(err.value)


def test_infeasible_sla_names_the_best_tpot(tmp_path, catalog):
    with pytest.raises(InfeasibleError, match=r"best TPOT any candidate reaches is [0-9.]+ ms"):
        plan_of(tmp_path, catalog, with_(sla__tpot_ms=0.5))


def test_infeasible_inventory_names_the_gpus_needed(tmp_path, catalog):
    doc = with_(
        hardware__gpus=["h100-sxm"],
        hardware__inventory={"h100-sxm": 1},
        workload__requests_per_second=200,
    )
    with pytest.raises(InfeasibleError, match=r"inventory: the demand needs \d+ GPUs"):
        plan_of(tmp_path, catalog, doc)


def test_a_gpu_cap_that_binds_names_the_fewest_gpus_that_serve(tmp_path, catalog):
    """max_gpus below what any fleet needs: the message gives the fewest GPUs that serve the
    demand (the cheapest plan may take more), and that many plan while one fewer does not."""
    doc = with_(workload__requests_per_second=60, constraints={"max_gpus": 1})
    with pytest.raises(InfeasibleError, match=r"max_gpus: the fewest GPUs that serve") as err:
        plan_of(tmp_path, catalog, doc)
    fewest = int(re.search(r"serve the demand are (\d+)", str(err.value)).group(1))
    assert fewest > 1 and f"raise it to at least {fewest}" in str(err.value)
    result = plan_of(tmp_path, catalog, with_(**{**_at(doc), "constraints": {"max_gpus": fewest}}))
    assert result.fleet.total_gpus == fewest
    below = with_(**{**_at(doc), "constraints": {"max_gpus": fewest - 1}})
    with pytest.raises(InfeasibleError, match=rf"are {fewest} \("):
        plan_of(tmp_path, catalog, below)


def _at(doc) -> dict:
    """`with_` arguments that rebuild `doc`'s demand."""
    return {"workload__requests_per_second": doc["workload"]["requests_per_second"]}


def test_infeasible_budget_names_the_budget_needed(tmp_path, catalog):
    doc = with_(constraints={"max_monthly_budget_usd": 10})
    with pytest.raises(InfeasibleError, match=r"budget: the cheapest plan costs \$[0-9,]+ a month"):
        plan_of(tmp_path, catalog, doc)


def test_infeasible_exits_1_on_the_command_line(tmp_path):
    res = solve(write(tmp_path, with_(sla__tpot_ms=0.5)))
    assert res.exit_code == 1 and "error: SLA" in res.output and "Traceback" not in res.output


@pytest.mark.slow  # plans three shipped scenarios
def test_plan_meets_demand_and_sla_by_its_own_numbers(tmp_path, catalog):
    root = Path(__file__).resolve().parent.parent / "scenarios"
    for name in ("chatbot", "mixed-traffic", "agent"):
        scenario, cat = load_scenario(root / f"{name}.yaml", catalog)
        result = plan(scenario, cat)
        by_class = {c.name: c for c in result.classes}
        # a pooled request passes one prefill and one decode line: count each side once
        served = {n: 0.0 for n in by_class}
        prefilled = {n: 0.0 for n in by_class}
        for d in result.fleet.deployments:
            for n, load in d.load_by_class.items():
                served[n] += load if d.role != "prefill" else 0.0
                prefilled[n] += load if d.role != "decode" else 0.0
                if load > 1e-9:
                    # a prefill pool emits no decode tokens: its TPOT is NaN, the decode pool's
                    # line carries the class's TPOT (#11)
                    if d.role != "prefill":
                        assert d.tpot_ms_by_class[n] <= by_class[n].tpot_ms + 1e-9
                    assert d.ttft_ms_by_class[n] <= by_class[n].ttft_ms + 1e-9
            assert d.requests_per_s <= d.capacity_requests_per_s + 1e-6
        for n, c in by_class.items():
            assert served[n] == pytest.approx(c.requests_per_second)
            assert prefilled[n] == pytest.approx(c.requests_per_second)
        inventory = scenario.hardware.inventory
        for gpu, avail in inventory.items():
            assert sum(d.gpus for d in result.fleet.deployments if d.gpu == gpu) <= avail


def test_mixed_traffic_fleet_is_no_dearer_than_any_single_gpu_type(catalog):
    root = Path(__file__).resolve().parent.parent / "scenarios"
    scenario, cat = load_scenario(root / "mixed-traffic.yaml", catalog)
    result = plan(scenario, cat)
    single = result.single_gpu_best
    assert single is not None
    # Since TPOT no longer charges a request its own prefill (issue #10), RTX 4090s at batch 2
    # meet the short class's TPOT SLA, and one GPU type is the cheapest fleet: the mix can
    # only tie the best single type now, never lose to it.
    assert result.fleet.total_cost_per_hour_usd <= single.total_cost_per_hour_usd + 0.01


def test_input_error_is_a_planner_error():
    assert InputError("x").exit_code == 2 and InfeasibleError("x").exit_code == 1


def test_an_engine_plans_only_the_gpus_it_runs_on(tmp_path, catalog):
    """TensorRT-LLM runs on NVIDIA GPUs only: an MI300X in the list is left out with a note
    naming the source, and a list of AMD GPUs alone exits 2 (it planned 5 MI300Xs)."""
    doc = with_(engine="trtllm", hardware__gpus=["h100-sxm", "mi300x"])
    result = plan_of(tmp_path, catalog, doc)
    assert {d.gpu for d in result.fleet.deployments} == {"h100-sxm"}
    note = next(n for n in result.notes if n.startswith("trtllm does not run on mi300x"))
    assert "supported-hardware" in note
    assert set(values(result.candidate_table, "gpu")) == {"h100-sxm"}
    with pytest.raises(InputError, match=r"engine: trtllm runs on none of the GPUs allowed"):
        plan_of(tmp_path, catalog, with_(engine="trtllm", hardware__gpus=["mi300x"]))
    vllm = plan_of(tmp_path, catalog, with_(hardware__gpus=["h100-sxm", "mi300x"]))
    assert not any("does not run on" in n for n in vllm.notes)


def test_an_engine_plans_only_the_quants_it_loads(tmp_path, catalog):
    """llama.cpp loads GGUF files only: with the default quants [bf16, fp8] it plans bf16 and
    notes fp8 left out (it planned an L40S at fp8, $577 a month; now an A100 at bf16,
    $1,015); quants it runs none of exit 2; vLLM plans both without a note."""
    result = plan_of(tmp_path, catalog, with_(engine="llamacpp"))
    assert {d.quant for d in result.fleet.deployments} == {"bf16"}
    assert set(values(result.candidate_table, "quant")) == {"bf16"}
    note = next(n for n in result.notes if n.startswith("llamacpp does not run fp8, so left"))
    assert "gguf-q4_k_m, bf16, fp16" in note and "github.com/ggml-org/llama.cpp" in note
    with pytest.raises(InputError, match=r"search.quants: llamacpp runs none of the quants"):
        plan_of(tmp_path, catalog, with_(engine="llamacpp", search__quants=["fp8", "int4-awq"]))
    vllm = plan_of(tmp_path, catalog, with_())
    assert set(values(vllm.candidate_table, "quant")) == {"bf16", "fp8"}
    assert not any("does not run fp8" in n for n in vllm.notes)


def test_solve_exits_2_when_the_engine_runs_none_of_the_quants(tmp_path):
    """`solve` with TensorRT-LLM and GGUF only: exit 2 naming the quants it runs."""
    doc = with_(engine="trtllm", search__quants=["gguf-q4_k_m"])
    res = solve(write(tmp_path, doc))
    assert res.exit_code == 2, res.output
    assert "trtllm runs none of the quants asked for (gguf-q4_k_m)" in res.output
    assert "Traceback" not in res.output
