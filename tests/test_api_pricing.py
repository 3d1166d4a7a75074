"""One API price everywhere: prefix-cached prompt tokens at the cached-input price.

`compare`, the break-even search, the chart's lines, the plan over time and the workbook all
bill an API through `money.pricing.api_bill_usd`; before, compare and the plan over time
billed every prompt token at the input price while `solve` applied the discount.
"""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
import yaml

from planner import load_scenario
from planner.money.pricing import api_bill_usd, api_usd_per_hour
from planner.planning import breakeven
from planner.planning.breakeven import BuildVsBuy
from planner.planning.pipeline import plan as make_plan
from planner.render.xlsx import read_back, write_workbook
from planner.schema.plan import ApiQuote
from planner.schema.scenario import Scenario

ROOT = Path(__file__).resolve().parent.parent
# rag.yaml: 8,000 prompt tokens of which 6,000 cached, 400 out, 40 req/s, no profile
FIREWORKS_PER_1M_REQUESTS = 2_000 * 0.15 + 6_000 * 0.015 + 400 * 0.60  # $630
FIREWORKS_MONTHLY = FIREWORKS_PER_1M_REQUESTS / 1e6 * 40 * 3600 * 730  # $66,225.60


def _quote(cached: float | None) -> ApiQuote:
    return ApiQuote("p", "m", 0.15, 0.60, 0, 0, 0, "test", "2026", cached)


def test_cached_prompt_tokens_bill_at_the_cached_price():
    """A million rag requests at Fireworks' prices: 2,000 x 0.15 + 6,000 x 0.015 + 400 x 0.60
    = $630; with no cached price listed all 8,000 bill at 0.15: 1,200 + 240 = $1,440."""
    million = 1e6
    bill = api_bill_usd(_quote(0.015), 8_000 * million, 6_000 * million, 400 * million)
    assert bill == pytest.approx(630.0)
    assert api_bill_usd(_quote(None), 8_000 * million, 6_000 * million, 400 * million) == (
        pytest.approx(1_440.0)
    )
    # an hour at 40 req/s: 144,000 requests at $0.00063
    per_hour = api_usd_per_hour(_quote(0.015), 40 * 8_000, 40 * 6_000, 40 * 400)
    assert per_hour == pytest.approx(144_000 * 0.00063)


@pytest.fixture(scope="module")
def rag(catalog, unhurried):
    scenario, cat = load_scenario(ROOT / "scenarios" / "rag.yaml", catalog)
    return make_plan(unhurried(scenario), cat)


def test_compare_bills_what_solve_and_the_chart_bill(rag):
    """Fireworks at rag's demand is $66,225.60 a month in compare, in solve's quote and on
    the chart's line; compare's rows are sorted by the figure they show; its break-even is
    where the self-hosted fleet first costs no more than that line (2.37 req/s, not the 1.04
    the uncached price gave)."""
    rows = breakeven.compare(rag)
    fireworks = next(r for r in rows if r.quote.provider == "Fireworks AI")
    assert fireworks.api_monthly_usd == pytest.approx(FIREWORKS_MONTHLY)
    assert fireworks.quote.monthly_cost_usd == pytest.approx(FIREWORKS_MONTHLY)
    assert fireworks.api_cost_per_request_usd == pytest.approx(FIREWORKS_PER_1M_REQUESTS / 1e6)
    for r in rows:
        assert r.api_monthly_usd == pytest.approx(r.quote.monthly_cost_usd)
        assert r.api_monthly_usd == pytest.approx(rag.api_monthly_usd(r.quote))
    shown = [r.api_monthly_usd for r in rows]
    assert shown == sorted(shown)
    assert fireworks.break_even_peak_requests_per_s == pytest.approx(2.37, abs=0.005)
    _, _, line = breakeven.cost_curves(rag, fireworks.quote, scales=breakeven.np.array([1.0]))
    assert line[0] == pytest.approx(FIREWORKS_MONTHLY)
    tokens = breakeven.class_tokens(rag)
    assert breakeven.api_cost_per_hour(fireworks.quote, tokens) * 730 == (
        pytest.approx(FIREWORKS_MONTHLY)
    )


@pytest.fixture(scope="module")
def rag_over_time(catalog):
    """rag planned over 3 months of 5% growth, at half the peak half of each day: the
    profile's mean is 0.75, so month m serves 30 x 1.05^(m-1) req/s on average."""
    doc = yaml.safe_load((ROOT / "scenarios" / "rag.yaml").read_text())
    doc["finance"] = {
        "horizon_months": 3,
        "growth_per_month": 0.05,
        "slots": 2,
        "profile": {"hourly": [0.5] * 12 + [1.0] * 12},
        "reserved": {"term": "1y", "discount_vs_on_demand": 0.4},
    }
    return make_plan(Scenario.model_validate(doc), catalog)


def test_plan_over_time_bills_cached_tokens_at_the_cached_price(rag_over_time, tmp_path):
    """Fireworks over the horizon: 30 req/s x 3600 x 730 = 78.84M requests in month 1, times
    (1 + 1.05 + 1.1025) / 3 on average, at $630 per 1M requests = $52,194.05 a month, in the
    plan, in compare and in the workbook's live Build vs API formula (column F) and its
    planner column (H)."""
    ot = rag_over_time.over_time
    assert ot.cached_input_share == pytest.approx(0.75)  # 6,000 of 8,000 prompt tokens
    want = 78.84e6 * (1 + 1.05 + 1.05**2) / 3 * 630 / 1e6
    assert want == pytest.approx(52_194.05, abs=0.01)
    fireworks = next(q for q in rag_over_time.api_quotes if q.provider == "Fireworks AI")
    assert rag_over_time.api_monthly_usd(fireworks) == pytest.approx(want)
    path = write_workbook(rag_over_time, tmp_path / "rag.xlsx", BuildVsBuy([], None))
    got = read_back(path)
    ws = openpyxl.load_workbook(path)["Build vs API"]
    for i, q in enumerate(rag_over_time.api_quotes):
        bill = rag_over_time.api_monthly_usd(q)
        assert got[f"Build vs API!F{i + 3}"] == pytest.approx(bill, rel=1e-9), q.provider
        assert ws[f"H{i + 3}"].value == pytest.approx(bill, rel=1e-9), q.provider
    row = 3 + rag_over_time.api_quotes.index(fireworks)
    assert got[f"Build vs API!F{row}"] == pytest.approx(want)
