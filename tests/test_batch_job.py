"""Batch jobs (`planner job`): the replica-hours MIP against hand-computed costs, the shipped
job priced and re-derived from its own candidate rows, schema errors and the command line."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from planner import load_scenario
from planner.cli import cli
from planner.errors import InfeasibleError, InputError
from planner.fleet.capacity import JobProblem, cheapest_job
from planner.fleet.solver import SolverOptions
from planner.perf.table import values
from planner.planning.batch_job import job_prices, price_job
from planner.planning.disagg import aggregated_only
from planner.planning.pipeline import evaluate_classes, request_classes
from planner.render.capacity import render_job
from planner.schema.scenario import Workload

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "scenarios" / "batch-job.yaml"
OPTIONS = SolverOptions(time_limit_s=60.0)


def test_one_candidate_by_hand():
    """36,000 requests at 1 req/s per replica = 10 replica-hours at $2/h = $20; a 4 h deadline
    needs ceil(10 / 4) = 3 replicas, each running 10/3 h."""
    problem = JobProblem(("g",), (1,), np.array([2.0]), np.array([1.0]), 36_000, 4.0)
    sol = cheapest_job(problem, OPTIONS)
    assert sol.cost_usd == pytest.approx(20.0)
    assert sol.replicas.tolist() == [3]
    assert sol.replica_hours[0] / sol.replicas[0] == pytest.approx(10 / 3)


def test_the_cheapest_per_request_wins_not_the_cheapest_per_hour():
    """$1/h at 1 req/s ($2.78e-4 a request) against $3/h at 4 req/s ($2.08e-4): the second."""
    problem = JobProblem(
        ("a", "b"), (1, 1), np.array([1.0, 3.0]), np.array([1.0, 4.0]), 72_000, 10.0
    )
    sol = cheapest_job(problem, OPTIONS)
    assert sol.cost_usd == pytest.approx(72_000 / (4 * 3600) * 3.0)
    assert sol.replica_hours[0] == pytest.approx(0.0, abs=1e-9)


def test_an_inventory_that_is_too_small_for_the_deadline_is_infeasible():
    problem = JobProblem(
        ("g",), (2,), np.array([2.0]), np.array([1.0]), 36_000, 4.0, inventory={"g": 4}
    )
    assert cheapest_job(problem, OPTIONS).status == "infeasible"  # 2 replicas: 8 h < 10 h


@pytest.fixture(scope="module")
def shipped(catalog):
    scenario, cat = load_scenario(JOB, catalog)
    return scenario, price_job(scenario, cat)


def test_shipped_job_cost_is_requests_over_rate_times_price(shipped):
    scenario, result = shipped
    job = scenario.workload.job
    assert result.requests == job.requests == 2_000_000
    assert result.finish_hours <= job.deadline_hours
    total = 0.0
    for line in result.lines:
        hours = line.requests / (3600 * line.requests_per_s_per_replica)
        assert line.cost_usd == pytest.approx(hours * line.price_usd_per_gpu_hour * line.tp)
        assert line.hours_each == pytest.approx(hours / line.replicas)
        assert math.ceil(hours / job.deadline_hours - 1e-9) <= line.replicas
        total += line.cost_usd
    assert sum(x.requests for x in result.lines) == pytest.approx(job.requests)
    assert result.cost_usd == pytest.approx(total)
    assert result.gpu_hours == pytest.approx(sum(x.hours_each * x.gpus for x in result.lines))
    tokens = job.requests * (job.input_tokens + job.output_tokens)
    assert result.cost_per_1m_tokens_usd == pytest.approx(total / tokens * 1e6)


def test_shipped_job_prices_apis_at_list_and_says_no_batch_price(shipped):
    _, result = shipped
    assert result.api and all(q.batch_cost_usd is None for q in result.api)
    assert any("batch price" in n for n in result.notes)
    first = result.api[0]
    assert first.list_cost_usd > 0


def test_the_api_table_tells_one_providers_offerings_apart(shipped):
    """DeepInfra lists Llama-3.1-8B twice (Instruct and Instruct-Turbo): each row names its
    endpoint, the list price of the job's tokens at that endpoint's prices."""
    from planner.render.capacity import render_job

    _, result = shipped
    text = render_job(result)
    for q in result.api:
        assert q.provider_model_id in text
    deepinfra = [q for q in result.api if q.provider == "DeepInfra"]
    assert len({q.provider_model_id for q in deepinfra}) == len(deepinfra) == 2


def test_spot_is_used_only_when_allowed(shipped, catalog):
    scenario, result = shipped
    no_spot = scenario.model_copy(
        update={
            "workload": scenario.workload.model_copy(
                update={"job": scenario.workload.job.model_copy(update={"allow_spot": False})}
            )
        }
    )
    plain = price_job(no_spot, catalog)
    assert all("(spot)" not in x.price_tier for x in plain.lines)
    assert result.cost_usd <= plain.cost_usd + 1e-9


def test_a_short_deadline_on_a_small_inventory_names_the_fastest_finish(shipped, catalog):
    scenario, _ = shipped
    hw = scenario.hardware.model_copy(update={"gpus": ["h100-sxm"], "inventory": {"h100-sxm": 1}})
    with pytest.raises(InfeasibleError, match="at best"):
        price_job(scenario.model_copy(update={"hardware": hw}), catalog)


def test_job_schema_refuses_ambiguity():
    shape = {"input_tokens": 100, "output_tokens": 10, "deadline_hours": 1}
    with pytest.raises(ValidationError, match="exactly one of 'requests' or 'tokens'"):
        Workload.model_validate({"job": {**shape, "requests": 5, "tokens": 1e6}})
    with pytest.raises(ValidationError, match="not both"):
        Workload.model_validate({"job": {**shape, "requests": 5}, "requests_per_second": 1})
    by_tokens = Workload.model_validate({"job": {**shape, "tokens": 1.1e6}})
    assert by_tokens.job is not None and by_tokens.job.total_requests() == pytest.approx(1e4)
    assert by_tokens.peak_requests_per_second() == pytest.approx(1e4 / 3600)


def test_a_scenario_without_a_job_is_a_user_error(catalog):
    scenario, cat = load_scenario(ROOT / "scenarios" / "chatbot.yaml", catalog)
    with pytest.raises(InputError, match="workload.job"):
        price_job(scenario, cat)


def test_cli_job_json_has_cost_hours_and_finish():
    res = CliRunner().invoke(cli, ["job", str(JOB), "--json"], obj={}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    for key in ("job_cost_usd", "gpu_hours", "finish_hours", "deployments", "api"):
        assert key in data
    assert data["finish_hours"] <= data["deadline_hours"] == 72


def test_cli_job_without_job_exits_2():
    res = CliRunner().invoke(cli, ["job", str(ROOT / "scenarios" / "chatbot.yaml")], obj={})
    assert res.exit_code == 2 and "workload.job" in res.output


@settings(max_examples=15, deadline=None)
@given(
    costs=st.lists(st.floats(0.5, 50.0), min_size=1, max_size=4),
    rates=st.lists(st.floats(0.05, 20.0), min_size=4, max_size=4),
    requests=st.integers(1_000, 10_000_000),
    deadline=st.floats(0.5, 200.0),
)
def test_without_limits_the_job_costs_its_requests_at_the_best_cost_per_request(
    costs, rates, requests, deadline
):
    """No inventory: the job runs on the candidate of least $ per request, so its cost is
    requests * min(kappa / (3600 mu)), whatever the deadline; and it finishes in time."""
    n = len(costs)
    kappa, mu = np.array(costs), np.array(rates[:n])
    problem = JobProblem(("g",) * n, (1,) * n, kappa, mu, float(requests), deadline)
    sol = cheapest_job(problem, OPTIONS)
    assert sol.cost_usd == pytest.approx(requests * (kappa / (3600 * mu)).min(), rel=2e-4)
    used = sol.replicas > 0
    assert (sol.replica_hours[used] / sol.replicas[used] <= deadline * (1 + 1e-9)).all()
    assert (3600 * mu * sol.replica_hours).sum() >= requests * (1 - 1e-9)


def test_a_job_on_tensorrt_llm_names_the_gpus_it_leaves_out(catalog):
    """The job plans only GPUs its engine runs on and says which it left out."""
    scenario, cat = load_scenario(JOB, catalog)
    result = price_job(scenario.model_copy(update={"engine": "trtllm"}), cat)
    assert not {line.gpu for line in result.lines} & {"mi300x", "gaudi3", "t4"}
    assert any(n.startswith("trtllm does not run on") and "mi300x" in n for n in result.notes)


@pytest.mark.parametrize(
    ("update", "key"),
    [
        ({"max_monthly_budget_usd": 1000}, "max_monthly_budget_usd"),
        ({"min_replicas": 2}, "min_replicas"),
        ({"redundancy": "n_plus_1"}, "redundancy"),
        ({"same_vendor": True}, "same_vendor"),
    ],
)
def test_constraints_a_job_cannot_honour_exit_2_naming_the_key(tmp_path, update, key):
    """They were read by nothing and the plan came back unchanged; now each is refused."""
    text = JOB.read_text().replace("  min_replicas: 1\n", "")
    extra = "\n".join(f"  {k}: {str(v).lower()}" for k, v in update.items())
    path = tmp_path / "job.yaml"
    path.write_text(text.replace("constraints:\n", f"constraints:\n{extra}\n"))
    res = CliRunner().invoke(cli, ["job", str(path)], obj={})
    assert res.exit_code == 2, res.output
    assert f"constraints.{key}: does not apply to planner job" in res.output


def test_a_replica_runs_at_least_one_whole_request():
    """1 request at 1 req/s per replica, $2/h: the fluid hours are 1/3600 h ($0.00056), but the
    request alone takes 0.01 h (36 s), so the replica runs 0.01 h for $0.02; a 0.005 h
    deadline is shorter than that request and infeasible."""
    one = np.array([0.01])
    problem = JobProblem(("g",), (1,), np.array([2.0]), np.array([1.0]), 1, 1.0)
    sol = cheapest_job(replace(problem, one_request_hours=one), OPTIONS)
    assert sol.replicas.tolist() == [1]
    assert sol.replica_hours[0] == pytest.approx(0.01)
    assert sol.cost_usd == pytest.approx(0.02)
    late = replace(problem, one_request_hours=one, deadline_hours=0.005)
    assert cheapest_job(late, OPTIONS).status == "infeasible"


def _one_request_job(deadline: float, catalog):
    scenario, cat = load_scenario(JOB, catalog)
    job = scenario.workload.job.model_copy(update={"requests": 1, "deadline_hours": deadline})
    workload = scenario.workload.model_copy(update={"job": job})
    return scenario.model_copy(update={"workload": workload}), cat


def test_a_deadline_shorter_than_one_request_exits_1_saying_so(catalog):
    """0.0005 h (1.8 s) for a 12,000-in / 600-out request: it finished in 0.000151 h for
    $0.00 before, a share of one request on each of several replicas."""
    scenario, cat = _one_request_job(0.0005, catalog)
    with pytest.raises(InfeasibleError, match="shorter than one request takes") as err:
        price_job(scenario, cat)
    assert err.value.details["binding"] == "deadline"


def test_one_request_finishes_no_sooner_than_its_ttft_and_decode(catalog):
    """The finish is at least the chosen line's TTFT + 599 x TPOT, and the head is singular."""
    scenario, cat = _one_request_job(0.05, catalog)
    result = price_job(scenario, cat)
    (line,) = result.lines
    assert line.replicas == 1
    rows = evaluate_classes(
        aggregated_only(scenario), cat, cat.model(scenario.model), request_classes(scenario),
        job_prices(scenario, cat, scenario.workload.job),
    )  # fmt: skip
    mine = rows[
        (values(rows, "gpu") == line.gpu)
        & (values(rows, "tp") == line.tp)
        & (values(rows, "quant") == line.quant)
        & (values(rows, "kv_dtype") == line.kv_dtype)
        & (values(rows, "batch") == line.batch)
    ]
    took_s = (
        float(values(mine, "ttft_unloaded_ms", float).min())
        + 599 * float(values(mine, "tpot_ms", float).min())
    ) / 1000
    assert result.finish_hours * 3600 >= took_s * (1 - 1e-6)
    assert render_job(result).startswith("batch-job: 1 request of llama-3.1-8b")


def test_the_job_says_it_leaves_pools_out(shipped):
    """12,000-token prompts: solve would offer prefill/decode pools (auto), the job does not."""
    _, result = shipped
    assert any(
        n.startswith("prefill/decode pools are not sized by planner job") for n in result.notes
    )


def test_a_short_deadline_on_a_small_fleet_names_hardware_fleet(shipped, catalog):
    scenario, _ = shipped
    hw = scenario.hardware.model_copy(update={"gpus": None, "fleet": {"h100-sxm": 1}})
    with pytest.raises(InfeasibleError, match="raise hardware.fleet / constraints.max_gpus"):
        price_job(scenario.model_copy(update={"hardware": hw}), catalog)


def test_a_job_on_llama_cpp_leaves_fp8_out_and_says_so(catalog):
    """llama.cpp loads GGUF only: the job's [bf16, fp8] plans bf16 with a note; fp8 alone
    exits 2."""
    scenario, cat = load_scenario(JOB, catalog)
    cpp = scenario.model_copy(update={"engine": "llamacpp"})
    result = price_job(cpp, cat)
    assert {line.quant for line in result.lines} == {"bf16"}
    assert any(n.startswith("llamacpp does not run fp8, so left out") for n in result.notes)
    fp8 = cpp.search.model_copy(update={"quants": ["fp8"]})
    with pytest.raises(InputError, match="llamacpp runs none of the quants asked for"):
        price_job(cpp.model_copy(update={"search": fp8}), cat)
