"""The plan over time and build vs buy: hand-computed prices, slots and break-even, and the
mixed reserved + on-demand plan beating both pure strategies on a diurnal scenario."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from time_problems import hand_problem

from planner.fleet.overtime import TierPrices, TimeProblem, solve_time
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem
from planner.inputs.scenarios import load_scenario, read_demand_csv
from planner.planning.breakeven import SelfCost, api_cost_per_request, break_even_scale
from planner.planning.pipeline import plan
from planner.planning.timeplan import group_slots, month_blocks, owned_hourly_cost, term_factor
from planner.render.labels import months_label
from planner.schema.finance import Finance, Owned, Reserved
from planner.schema.plan import ApiQuote

ROOT = Path(__file__).resolve().parent.parent
OPTIONS = SolverOptions(time_limit_s=60)


@pytest.fixture(scope="module")
def diurnal(catalog, unhurried):
    """The diurnal plan, solved to optimality (a generous limit: the default 5 s is not)."""
    scenario, cat = load_scenario(ROOT / "scenarios" / "diurnal-chatbot.yaml", catalog)
    return plan(unhurried(scenario), cat)


@pytest.mark.slow  # the diurnal plan over time
def test_mixed_plan_beats_all_on_demand_and_all_reserved(diurnal):
    tp = diurnal.over_time
    mixed = tp.solution.total_cost
    on_demand = tp.all_on_demand.total_cost
    reserved = tp.all_reserved_cost
    assert tp.solution.status == "optimal"
    assert mixed < on_demand and mixed < reserved
    # the numbers behind it, for the record: reserved GPUs cover the night, rentals the day
    assert sum(tp.solution.reserved.values()) > 0
    assert tp.solution.cost_by_tier["on_demand"] > 0
    assert tp.monthly_total_usd == pytest.approx(mixed, rel=1e-9)
    assert tp.saving_vs_all_on_demand_usd == pytest.approx(on_demand - mixed)
    assert tp.saving_vs_all_on_demand_fraction == pytest.approx((on_demand - mixed) / on_demand)
    assert tp.saving_vs_all_reserved_usd == pytest.approx(reserved - mixed)


def test_periods_and_months_are_typed_records(diurnal):
    """Months are tuples of ints, GPUs are counts per type and tier, not display columns."""
    tp = diurnal.over_time
    sol = tp.solution
    blocks = {p.months for p in tp.periods}
    assert sorted(blocks) == [(1, 2, 3), (4, 5, 6), (7, 8, 9), (10, 11, 12)]
    assert [m.month for m in tp.monthly] == list(range(1, 13))
    for p in tp.periods:
        assert set(p.gpus) == set(sol.gpu_types)
        for g, n in p.gpus.items():
            assert n.reserved == sol.reserved.get(g, 0) and n.held == n.reserved + n.owned
        assert p.demand_requests_per_s == pytest.approx(sum(p.demand.values()))
    assert sum(p.cost_usd for p in tp.periods) == pytest.approx(sol.total_cost, rel=1e-9)
    assert tp.output_tokens == pytest.approx(sum(m.output_tokens for m in tp.monthly))
    assert tp.growth_per_month == 0.05


def test_every_month_serves_the_profile_mean_times_its_peak(diurnal):
    """Served volume is the profile's mean x the month's peak (not the slots' levels, which
    carry each group's busiest hour): 30 req/s x 0.56875 = 17.06 req/s in month 1."""
    tp = diurnal.over_time
    c = diurnal.classes[0]
    mean = float(np.mean(tp.profile))
    assert mean == pytest.approx(0.56875)
    for m in tp.monthly:
        peak = c.requests_per_second * (1 + tp.growth_per_month) ** (m.month - 1)
        assert m.peak_requests_per_s == pytest.approx(peak, rel=1e-12)
        assert m.avg_requests_per_s == pytest.approx(mean * peak, rel=1e-12)
        seconds = 730 * 3600
        assert m.output_tokens == pytest.approx(mean * peak * c.output_tokens * seconds)
        assert m.input_tokens == pytest.approx(mean * peak * c.input_tokens * seconds)
        assert m.cost_per_1k_output_tokens_usd == pytest.approx(m.total_usd / m.output_tokens * 1e3)
    assert tp.monthly[0].avg_requests_per_s == pytest.approx(17.0625)


def test_a_block_of_months_is_labelled_once_for_every_renderer():
    assert months_label((4, 5, 6)) == "4-6"
    assert months_label((7,)) == "7"


@pytest.mark.slow  # the diurnal plan over time
def test_every_period_serves_its_demand(diurnal):
    tp = diurnal.over_time
    prob, sol = tp.problem, tp.solution
    keep = 1 - prob.preemption_overhead
    for p in range(len(prob.hours)):
        stable = sol.replicas[:, p] @ prob.capacity[:, 0]
        spot = keep * sol.spot_replicas[:, p] @ prob.capacity[:, 0]
        assert stable + spot >= prob.demand[0, p] - 1e-6
        # spot may carry at most its share: the rest must fit on stable capacity
        assert stable >= (1 - prob.spot_max_share) * prob.demand[0, p] - 1e-6
        assert sol.replicas[:, p].sum() >= 2  # min_replicas of the scenario
        in_use = sol.on_demand[:, p] + np.array([sol.reserved.get(g, 0) for g in sol.gpu_types])
        used = [
            sum(prob.tp[c] * sol.replicas[c, p] for c in range(len(prob.gpu)) if prob.gpu[c] == g)
            for g in sol.gpu_types
        ]
        assert (np.array(used) <= in_use + 1e-6).all()


def test_slots_cover_every_hour_with_the_peak_of_their_group():
    profile = np.array([[0.2, 1.0, 0.5, 0.9]])
    slots = group_slots(profile, np.array([10.0]), 2)
    assert slots.level.tolist() == [[1.0, 0.5]]
    assert slots.share.tolist() == [0.5, 0.5]
    assert slots.hour_slot.tolist() == [1, 0, 1, 0]
    # every hour's demand is at most its slot's level
    assert (profile[0] <= slots.level[0, slots.hour_slot]).all()


def test_month_blocks_quarterly():
    assert month_blocks(12, 3) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    assert month_blocks(5, 3) == [[0, 1, 2], [3, 4]]


def test_a_reserved_term_is_paid_in_full():
    """A commitment runs its whole term: a 1-year term under a 3-month horizon pays 12 months
    (x 4), 18 months pay two terms (x 24/18), and whole terms pay as they are (x 1)."""

    def factor(horizon: int, term: str) -> float:
        hourly = {"hourly": [1.0] * 24}
        return term_factor(
            Finance(horizon_months=horizon, profile=hourly, reserved=Reserved(term=term))
        )

    assert factor(3, "1y") == 4.0
    assert factor(18, "1y") == pytest.approx(24 / 18)
    assert factor(12, "1y") == factor(24, "1y") == factor(36, "3y") == 1.0
    assert factor(12, "3y") == 3.0


def test_a_short_horizon_prices_reserved_gpus_for_their_term(catalog):
    """diurnal-chatbot over 3 months under a 1-year term (the audit's case: 2 reserved B200s
    billed 3 months, a 33% saving that a 12-month bill of $62,862 turns into a loss): the
    reserved price is the discounted one x 4, and its source says why."""
    scenario, cat = load_scenario(ROOT / "scenarios" / "diurnal-chatbot.yaml", catalog)
    finance = scenario.finance.model_copy(update={"horizon_months": 3, "growth_per_month": 0.0})
    result = plan(scenario.model_copy(update={"finance": finance}), cat)
    tp = result.over_time
    reserved = [f for f in tp.prices if f.plan_tier == "reserved"]
    on_demand = {f.gpu: f.usd_per_gpu_hour for f in tp.prices if f.tier == "on_demand"}
    assert reserved
    for fact in reserved:
        discount = scenario.finance.reserved.discount_vs_on_demand
        assert fact.usd_per_gpu_hour == pytest.approx(on_demand[fact.gpu] * (1 - discount) * 4)
        assert fact.term_factor == 4.0
        assert "paid for 12 months over the 3-month horizon" in fact.source
    assert sum(tp.solution.reserved.values()) == 0  # x 4 never pays at this profile


def test_owned_hourly_cost_hand_computed(catalog):
    """H100 SXM bought at $30,000 over 36 months: 30000 / (36 * 730) = $1.1416/h; power
    700 W x 0.8 x PUE 1.3 x $0.10/kWh = $0.0728/h; hosting $146/month = $0.20/h."""
    owned = Owned(
        purchase_usd_per_gpu=30000,
        amortisation_months=36,
        pue=1.3,
        electricity_usd_per_kwh=0.10,
        hosting_usd_per_gpu_month=146,
        utilisation_of_tdp=0.8,
    )
    expected = 30000 / (36 * 730) + 0.7 * 0.8 * 1.3 * 0.10 + 146 / 730
    assert owned_hourly_cost(catalog.gpu("h100-sxm"), owned) == pytest.approx(expected)


def test_time_mip_hand_example():
    """One GPU type, one candidate of 1 GPU carrying 1 req/s. Two periods of 100 h each with
    demand 3 and 1. On-demand $2/h, reserved $1.5/h for all 200 h. Best: reserve 1 (= $300),
    rent 2 in the busy period ($400): $700. All on-demand: (3 + 1) x 100 x 2 = $800; all
    reserved for the peak: 3 x 200 x 1.5 = $900."""
    problem = hand_problem()
    sol = solve_time(problem, OPTIONS)
    assert sol.total_cost == pytest.approx(700.0)
    assert sol.reserved == {"g": 1}
    assert solve_time(problem.without("reserved"), OPTIONS).total_cost == pytest.approx(800.0)


def test_spot_share_is_capped():
    """Spot at $0.5 may serve 30% of requests and loses 10% of capacity to pre-emption."""
    problem = TimeProblem(
        gpu=("g",),
        tp=(1,),
        capacity=np.array([[1.0]]),
        demand=np.array([[10.0]]),
        hours=np.array([1.0]),
        prices=TierPrices(on_demand={"g": 2.0}, spot={"g": 0.5}),
        spot_max_share=0.3,
        preemption_overhead=0.1,
    )
    sol = solve_time(problem, OPTIONS)
    # 3 req/s on spot need ceil(3 / 0.9) = 4 spot GPUs; 7 on demand: 4 x 0.5 + 7 x 2 = 16
    assert sol.total_cost == pytest.approx(16.0)
    assert int(sol.spot_gpus.sum()) == 4


def test_break_even_hand_computed():
    """Fleet: one candidate at $10/h carrying 2 req/s, at least 1 replica. API: 1000 input
    tokens at $1/M and 100 output at $10/M = $0.002 a request = $7.2/h per req/s.
    Self-hosting costs 10 ceil(r/2); it first costs no more than 7.2 r at r = 10/7.2 = 1.389."""
    problem = FleetProblem(
        gpu=("g",),
        tp=(1,),
        cost_per_hour=np.array([10.0]),
        capacity=np.array([[2.0]]),
        demand=np.array([1.0]),
        min_replicas=1,
    )
    quote = ApiQuote("p", "m", 1.0, 10.0, 0, 0, 0, "test", "2026")
    per_request = api_cost_per_request(quote, 1000, 100)
    assert per_request == pytest.approx(0.002)
    scale = break_even_scale(SelfCost(problem, OPTIONS), per_request * 3600, 1.0)
    assert scale == pytest.approx(10 / 7.2, rel=1e-5)
    # with a profile averaging 80% of the peak the API bill is 5.76 $/h per peak req/s: the
    # one-replica fleet breaks even at 10 / 5.76 = 1.736 req/s
    scale = break_even_scale(SelfCost(problem, OPTIONS), per_request * 3600, 0.8)
    assert scale == pytest.approx(10 / 5.76, rel=1e-5)
    # averaging half the peak, the API (3.6 $/h per req/s) always beats $5 per req/s of fleet
    assert break_even_scale(SelfCost(problem, OPTIONS), per_request * 3600, 0.5) is None


def test_demand_csv_becomes_hour_of_week_fractions(tmp_path):
    hours = np.arange(24 * 14)
    stamps = np.datetime64("2026-11-02T00:00") + hours.astype("timedelta64[h]")
    rate = 5 + 5 * ((hours % 24) >= 9) * ((hours % 24) < 18)
    path = tmp_path / "demand.csv"
    path.write_text(
        "timestamp,requests_per_second\n"
        + "\n".join(f"{s},{r}" for s, r in zip(stamps, rate, strict=True))
    )
    values = read_demand_csv(path, tmp_path / "s.yaml")
    assert len(values) == 168 and max(values) == 1.0 and min(values) == 0.5
    assert values[10] == 1.0 and values[3] == 0.5


def test_classes_may_have_their_own_profiles(catalog, tmp_path):
    """Chat peaks by day, batch documents run at night: each class keeps its own shape, and
    every slot's demand is the peak of its hours for that class."""
    import yaml

    day = [0.1] * 8 + [1.0] * 10 + [0.1] * 6
    night = [1.0] * 8 + [0.2] * 10 + [1.0] * 6
    doc = {
        "model": "llama-3.1-8b",
        "workload": {
            "requests_per_second": 20,
            "classes": [
                {"name": "chat", "share": 0.5, "input_tokens": 500, "output_tokens": 200},
                {"name": "docs", "share": 0.5, "input_tokens": 4000, "output_tokens": 300},
            ],
        },
        "sla": {"tpot_ms": 100, "ttft_ms": 10000},
        "hardware": {"gpus": ["h100-sxm", "l40s"]},
        "finance": {
            "horizon_months": 3,
            "slots": 2,
            "profile": {"hourly": day, "by_class": {"docs": night}},
            "reserved": {"discount_vs_on_demand": 0.3},
        },
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    scenario, cat = load_scenario(path, catalog)
    result = plan(scenario, cat)
    demand = result.over_time.problem.demand[:, :2]  # classes x the two slots of block 1
    # the total is nearly flat (11-12 req/s), yet the day slot and the night slot keep each
    # class's own level: chat 10 by day and 1 by night, documents 2 by day and 10 by night
    by_slot = sorted(zip(demand[0].round(6), demand[1].round(6), strict=True))
    assert by_slot == [(1.0, 10.0), (10.0, 2.0)]


def test_the_break_even_chart_draws_the_plan_over_time(diurnal):
    """#13: with a plan over time the chart's self-hosted line is the plan over time's
    average month (at scale 1 the plan itself, no solve), not the peak fleet 24/7."""
    from planner.planning.breakeven import TimeSelfCost, time_cost_curve

    tp = diurnal.over_time
    assert tp is not None and tp.solution.status == "optimal"
    cost = TimeSelfCost(tp.problem, tp.horizon_months, diurnal.solver)
    cost.know(tp)
    volume, own, api = time_cost_curve(diurnal, cost, scales=np.array([1.0]))
    assert volume.tolist() == [pytest.approx(diurnal.total_requests_per_s)]
    assert own.tolist() == [pytest.approx(diurnal.self_hosted_monthly_usd)]
    assert own[0] < diurnal.fleet.monthly_cost_usd  # the peak fleet 24/7 costs more
    assert api.tolist() == [pytest.approx(tp.api_monthly_usd(diurnal.api_quotes[0]))]
    assert len(cost.cache) == 1  # nothing re-solved


def test_held_gpus_lists_owned_alone_without_a_leading_comma():
    """owned-fleet holds 10 H100s owned and nothing reserved: the headline read
    'Plan over 12 months [optimal]: , 10 x h100-sxm owned' (and the workbook's B2 alike)."""
    from types import SimpleNamespace

    from planner.planning.plan import TimePlan
    from planner.render.text import _time_headline

    def held(reserved: dict, owned: dict, times: str = " x ") -> str:
        tp = SimpleNamespace(solution=SimpleNamespace(reserved=reserved, owned=owned))
        return TimePlan.held_gpus(tp, times)  # type: ignore[arg-type]

    assert held({"h200": 0}, {"h100-sxm": 10}) == "10 x h100-sxm owned"
    assert held({"h200": 2}, {"h100-sxm": 10}, "x ") == "2x h200 reserved, 10x h100-sxm owned"
    assert held({"h200": 0}, {}) == ""
    sol = SimpleNamespace(status="optimal", reserved={}, owned={"h100-sxm": 10})
    tp = SimpleNamespace(solution=sol, horizon_months=12)
    tp.held_gpus = lambda: TimePlan.held_gpus(tp)  # type: ignore[arg-type]
    assert _time_headline(tp) == (  # type: ignore[arg-type]
        "Plan over 12 months [optimal]: 10 x h100-sxm owned; the rest rented per period."
    )
