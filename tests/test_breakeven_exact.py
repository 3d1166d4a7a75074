"""Issue 16: the break-even volume is the first crossing of the API line and the fleet's
cost, exactly. The cost is a nondecreasing step function of demand, so self-hosting can win
on a short window between two grid points; the walk up the steps finds it (the grid scan
reported a later crossing: agent against DeepInfra, 59.9 req/s where 3.24 wins)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from planner.fleet import scaled
from planner.fleet.solver import SolverOptions
from planner.fleet.steady import FleetProblem
from planner.fleet.synthetic import synthetic_problem
from planner.planning import breakeven
from planner.planning.breakeven import SCALES, SelfCost, break_even_over_time, break_even_scale

EXACT = SolverOptions(time_limit_s=600, relative_gap=0.0)


class Steps:
    """A hand-made fleet cost: costs[i] on (edges[i - 1], edges[i]], inf beyond the last
    edge; `reach` is the step's right edge (or the scale itself, when `blind`); the jump's
    bound on the first crossing is none, exact, or halfway to it from lo (`jump`)."""

    def __init__(
        self, edges: list[float], costs: list[float], blind: bool = False, jump: str = "none"
    ) -> None:
        self.edges, self.costs, self.blind = np.array(edges), np.array(costs), blind
        self.jump = jump
        self.calls = 0

    def __call__(self, scale: float) -> float:
        self.calls += 1
        i = int(np.searchsorted(self.edges, scale, side="left"))
        return float(self.costs[i]) if i < len(self.costs) else math.inf

    def reach(self, scale: float) -> float:
        i = int(np.searchsorted(self.edges, scale, side="left"))
        return scale if self.blind or i >= len(self.edges) else float(self.edges[i])

    def lower_slope(self) -> float:
        return 0.0

    def first_crossing(self, slope: float, lo: float, hi: float) -> float | None:
        if self.jump == "none":
            return None
        want = self.expected(slope)
        if want is None:
            return math.inf
        return want if self.jump == "exact" else lo + (want - lo) / 2

    def expected(self, slope: float) -> float | None:
        """By hand: the first step whose cost the line reaches before the step ends (step i-1
        not crossed means c[i-1] / slope > e[i-1], so c[i] / slope is inside step i)."""
        lo, top = float(SCALES[0]), float(SCALES[-1])
        for edge, cost in zip(self.edges, self.costs, strict=True):
            if edge < lo:
                continue
            meet = max(cost / slope, lo)
            if meet <= edge:
                return meet if meet <= top else None
        return None


def test_a_window_between_two_grid_points_is_found():
    """$10/h up to scale 0.105, $20/h above; the API at $96/h per unit of scale meets the
    first step at 10/96 = 0.1042, inside (0.1, 0.1259) of the grid: at both grid points the
    fleet is dearer, and the grid scan went on to 20/96 = 0.2083 on the second step."""
    cost = Steps([0.105, 1e4], [10.0, 20.0])
    grid = SCALES[(SCALES > 0.09) & (SCALES < 0.2)]
    assert all(cost(float(s)) > 96.0 * s for s in grid)  # no grid point sees the window
    assert not ((SCALES >= 10 / 96) & (SCALES <= 0.105)).any()
    assert break_even_scale(cost, 96.0, 1.0) == pytest.approx(10 / 96, rel=1e-12)  # type: ignore[arg-type]
    blind = Steps([0.105, 1e4], [10.0, 20.0], blind=True)  # no reach: one more probe, same
    assert break_even_scale(blind, 96.0, 1.0) == pytest.approx(10 / 96, rel=1e-12)  # type: ignore[arg-type]


def test_no_crossing_in_range_and_the_first_grid_point():
    rising = Steps([1e-2, 1.0, 1e4], [2.0, 200.0, 1e9])  # the line never catches up by 1e3
    assert break_even_scale(rising, 100.0, 1.0) is None  # type: ignore[arg-type]
    cheap = Steps([1e4], [0.01])  # wins at the range's first scale
    assert break_even_scale(cheap, 100.0, 1.0) == float(SCALES[0])  # type: ignore[arg-type]
    none_after = Steps([0.5], [1.0])  # no fleet beyond 0.5 (an inventory) and no crossing
    assert break_even_scale(none_after, 1.0, 1.0) is None  # type: ignore[arg-type]


JUMPS = ("none", "exact", "halfway")


@st.composite
def narrow_windows(draw):
    """A random nondecreasing step cost and a line that wins on a narrow window somewhere:
    step j's edge set just past its cost / slope, other steps' edges before theirs."""
    n = draw(st.integers(2, 30))
    slope = draw(st.floats(1.0, 100.0))
    # step edges spread over the grid's range, increasing
    logs = sorted(draw(st.lists(st.floats(-3.0, 3.2), min_size=n, max_size=n, unique=True)))
    edges = [10.0**x for x in logs]
    j = draw(st.integers(0, n - 1))
    # the window's relative width: narrow, but wider than the probe's margin past each edge
    width = draw(st.floats(2 * breakeven.EDGE_MARGIN, 1e-2))
    costs, previous = [], 0.0
    for i, edge in enumerate(edges):
        if i == j:
            cost = slope * edge / (1 + width)  # wins on [cost / slope, edge]
        else:
            cost = slope * edge * draw(st.floats(1.0 + 1e-9, 3.0))  # dearer to the edge
        cost = max(cost, previous * (1 + 1e-12))  # nondecreasing
        costs.append(cost)
        previous = cost
    # distinct floats can give one edge (10**x rounds), and the nondecreasing clamp can
    # raise step j's cost until its window is narrower than the walk's probe margin: such a
    # case is not the narrow window this draws (hypothesis found edges 1.0, 1.0, 1 + 2.3e-7)
    assume(all(a < b for a, b in zip(edges, edges[1:], strict=False)))
    assume(costs[j] / slope * (1 + 2 * breakeven.EDGE_MARGIN) <= edges[j])
    return edges, costs, slope, draw(st.booleans()), draw(st.sampled_from(JUMPS))


@settings(max_examples=300, deadline=None)
@given(narrow_windows())
def test_the_walk_finds_the_first_crossing_of_any_step_cost(case):
    edges, costs, slope, blind, jump = case
    cost = Steps(edges, costs, blind, jump)
    want = cost.expected(slope)
    got = break_even_scale(cost, slope, 1.0)  # type: ignore[arg-type]
    if want is None:
        assert got is None
    else:
        assert got is not None and want * (1 - 1e-12) <= got <= want * (1 + breakeven.EDGE_MARGIN)
    assert cost.calls <= 2 * len(edges) + 2  # one probe a step, at most, and the last


def brute_first_crossing(
    cost: SelfCost, slope: float, top: float = float(SCALES[-1]), per_decade: int = 30
) -> float | None:
    """A fine geometric scan up to `top`, each interval whose ends cost differently bisected
    down to 1e-9 (relative), each flat piece met by the line at c / slope: the first crossing."""
    lo = float(SCALES[0])
    solve = cost._solve  # a MIP per scale, nothing inferred from neighbours
    memo: dict[float, float] = {}

    def f(s: float) -> float:
        return memo[s] if s in memo else memo.setdefault(s, solve(s))

    def first_in(a: float, b: float) -> float | None:
        if f(a) == f(b):
            meet = max(a, f(a) / slope)
            return meet if meet <= b else None
        if b - a <= 1e-9 * b:
            return b if f(b) <= slope * b else None
        mid = (a + b) / 2
        hit = first_in(a, mid)
        if hit is None and f(mid) <= slope * mid:
            return mid
        return hit if hit is not None else first_in(mid, b)

    if f(lo) <= slope * lo:
        return lo
    points = int(np.ceil(np.log10(top / lo) * per_decade)) + 2
    grid = [float(s) for s in np.geomspace(lo, top, points)]
    for a, b in zip(grid, grid[1:], strict=False):
        hit = first_in(a, b)
        if hit is not None:
            return hit
    return None


@pytest.mark.parametrize("seed", [1, 2])  # seed 0 at 1.02: 1,615 MIPs of brute force, 10 s
@pytest.mark.parametrize("api_factor", [1.02, 1.2])
def test_on_fleet_mips_the_walk_equals_the_brute_force(seed, api_factor):
    """Real fleet MIPs (3 GPUs x 2 classes, redundancy floor 1) with the API line a little
    above the LP slope, where windows are narrow: the walk's volume is the brute force's
    (scanned up to it: any crossing the walk skipped would show below)."""
    problem = replace(synthetic_problem(3, 2, 3, seed=seed), inventory={}, min_replicas=1)
    walk = SelfCost(problem, EXACT)
    slope = walk.lower_slope() * api_factor
    got = break_even_scale(walk, slope, 1.0)
    top = float(SCALES[-1]) if got is None else got * (1 + 1e-9)
    want = brute_first_crossing(SelfCost(problem, EXACT), slope, top)
    assert (got is None) == (want is None)
    if want is not None:
        assert got == pytest.approx(want, rel=1e-7)
    assert walk.solves < len(SCALES)


def test_reach_is_the_largest_scale_the_fleet_carries():
    """One candidate carrying 2 req/s against 1 req/s of demand: 3 replicas carry scale 6.
    Two classes (10, 8) x s; a ($2/h) carries 1 of class 0, b ($3/h) 2 of class 0 or 4 of
    class 1: 14 b alone carry 10 s / 2 + 8 s / 4 <= 14, s = 2; with 3 a taking 3 of class 0,
    (10 s - 3) / 2 + 2 s <= 14, s = 15.5 / 7."""
    one = FleetProblem(("g",), (1,), np.array([10.0]), np.array([[2.0]]), np.array([1.0]))
    assert scaled.ScaledFleet(one, EXACT).reach(np.array([3])) == pytest.approx(6.0, rel=1e-5)
    two = FleetProblem(
        ("a", "b"),
        (1, 1),
        np.array([2.0, 3.0]),
        np.array([[1.0, 0.0], [2.0, 4.0]]),
        np.array([10.0, 8.0]),
    )
    fleet = scaled.ScaledFleet(two, EXACT)
    assert fleet.reach(np.array([0, 14])) == pytest.approx(2.0, rel=1e-5)
    assert fleet.reach(np.array([3, 14])) == pytest.approx(15.5 / 7, rel=1e-5)
    assert fleet.reach(np.array([3, 14])) <= 15.5 / 7  # claims a little less, never more


# req/s, `python benchmarks/breakeven_first_crossing.py agent` on the shipped catalog (like the
# goldens, regenerate when the engine constants move the agent's fleet; with session 22's vLLM
# refit DeepInfra no longer crosses, and before it DeepInfra's 3.23761 was the window the grid
# scan had missed at 59.9)
# (session 32: the device memory of 13 more GPUs and tensor parallel over PCIe make the small
# fleets cheaper: Nebius 2.33025 -> 2.098765, AWS Bedrock 0.921053 -> 0.769981, Groq 0.447031
# -> 0.41751, each still equal to the brute force)
# (session 37: TPOT's first-round share at the benchmark's own refits vLLM, and the agent's
# fleet gets cheaper: Nebius 2.098765 -> 1.940586, the brute force's too,
# benchmarks/breakeven_first_crossing.py agent)
AGENT_BRUTE = {"DeepInfra": None, "Nebius": 1.940586, "AWS Bedrock": 0.769981, "Groq": 0.41751}


def test_agent_breaks_even_where_the_brute_force_does(catalog):
    """`planner compare scenarios/agent.yaml --json`: each break-even volume is the brute
    force's first crossing, and at it self-hosting has just started to win: the fleet costs
    no more than the API there and more a hair below."""
    from click.testing import CliRunner

    from planner import load_scenario, plan
    from planner.cli import cli

    path = str(Path(__file__).resolve().parent.parent / "scenarios" / "agent.yaml")
    out = CliRunner().invoke(cli, ["compare", path, "--json", "--no-plot"], obj={})
    assert out.exit_code == 0, out.output
    rows = {a["provider"]: a for a in json.loads(out.output)["apis"]}
    scenario, cat = load_scenario(path, catalog)
    result = plan(scenario, cat)
    cost = SelfCost(result.problem, EXACT)  # fresh MIPs either side of the crossing
    total = result.total_requests_per_s
    for provider, brute in AGENT_BRUTE.items():
        found = rows[provider]["break_even_peak_requests_per_s"]
        if brute is None:
            assert found is None, provider
            continue
        assert found == pytest.approx(brute, rel=2e-6), provider
        per_hour = rows[provider]["api_cost_per_request_usd"] * 3600  # $/h per req/s
        assert cost._solve(found / total) <= per_hour * found * (1 + 1e-6), provider
        below = found * (1 - 1e-6)
        assert cost._solve(below / total) > per_hour * below, provider


class TimeSteps(Steps):
    """`Steps` as a plan over time's cost: the over-time walk counts a walk cut short."""

    walked_out = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.walk_floors: list[float] = []


def test_over_time_the_walk_finds_the_window_the_grid_scan_missed():
    """The hand-made steps of the steady test, as a plan over time's $ a month: 10 / 96."""
    cost = TimeSteps([0.105, 1e4], [10.0, 20.0])
    assert break_even_over_time(cost, 96.0) == pytest.approx(10 / 96, rel=1e-12)  # type: ignore[arg-type]
    assert cost.walked_out == 0


def test_over_time_a_long_walk_hands_over_to_the_grid_scan_and_says_so():
    """Steps of 0.01 in scale, $3 + 0.9 k on the k-th, against $100 per unit of scale: the
    line first reaches a step before its end at k = 20 (3 + 18 <= 21), and the walk climbs
    k = 0, 2, 4.8, 7.3, ... more steps than WALK_PLANS; the grid scan's volume is still a
    crossing, no earlier than the first, and the hand-over is counted."""
    edges = [0.01 * (k + 1) for k in range(200)]
    costs = [3.0 + 0.9 * k for k in range(200)]
    cost = TimeSteps(edges, costs)
    found = break_even_over_time(cost, 100.0)  # type: ignore[arg-type]
    assert found is not None and cost(found) <= 100.0 * found * (1 + 1e-12)
    assert cost.walked_out == 1
    assert found >= cost.expected(100.0)  # type: ignore[operator]
    # what the walk proved before handing over: nothing below its floor crosses
    (floor,) = cost.walk_floors
    assert 0 < floor <= cost.expected(100.0)  # type: ignore[operator]


def test_a_walk_out_note_names_the_api_the_proven_floor_and_how_close_the_lines_run():
    """Issue 16: after a walk-out the note says what is proven (no crossing below the walk's
    floor, in req/s), what the grid scan found, and, where the API's $ per unit of demand is
    within twice the plans' gap of the LP's, that the two costs run that close."""
    from types import SimpleNamespace

    from planner.planning.breakeven import _walk_out_note
    from planner.schema.plan import ApiQuote

    quote = ApiQuote("OpenRouter", "m", 1.0, 10.0, 0, 0, 0, "test", "2026")
    cost = SimpleNamespace(
        walk_floors=[0.5],
        lower_slope=lambda: 1000.0,
        options=SimpleNamespace(relative_gap=5e-3),
    )
    note = _walk_out_note(quote, cost, 1006.0, 40.0, 9.0)  # type: ignore[arg-type]
    assert "vs OpenRouter" in note and "below 20 req/s" in note and "found 360 req/s" in note
    assert "0.6% above" in note and "0.5% gap" in note
    far = _walk_out_note(quote, cost, 1200.0, 40.0, None)  # type: ignore[arg-type]
    assert "none in range" in far and "gap" not in far


def _compared(api_monthly: float, self_monthly: float, below: float | None):
    from planner.schema.plan import ApiQuote

    quote = ApiQuote("Nebius", "m", 1.0, 1.0, 0, 0, 0, "test", "2026")
    return breakeven.Comparison(quote, 0.0, api_monthly, self_monthly, below, None)


def test_an_api_cheaper_above_its_break_even_is_explained():
    """The break-even is the least volume where self-hosting costs no more; a step of the
    fleet's cost can put a close API below it again at the scenario's demand. The note says
    which: the steps (the re-planned fleet costs more than the API here too) or the plan's
    limits (the re-planned fleet, without them, would not)."""
    from types import SimpleNamespace

    plan = SimpleNamespace(total_requests_per_s=20.0)
    steps = Steps([0.5, 1.5], [9_000.0, 12_592.0])  # $/month at scale 1: 12,592
    rows = [_compared(12_379.0, 12_592.0, 8.14)]
    (note,) = breakeven._recrossing_notes(plan, rows, steps)
    assert "Nebius m: self-hosting first costs no more than this API at 8.14 req/s" in note
    assert "the API is cheaper by $213/month" in note and "steps across" in note
    cheap = Steps([0.5, 1.5], [9_000.0, 12_000.0])  # re-planned: under the API's 12,379
    (note,) = breakeven._recrossing_notes(plan, rows, cheap)
    assert "limits" in note and "$12,000/month here" in note
    assert breakeven._recrossing_notes(plan, [_compared(12_379.0, 12_592.0, 25.0)], steps) == ()
    assert breakeven._recrossing_notes(plan, [_compared(13_000.0, 12_592.0, 8.14)], steps) == ()
    assert breakeven._recrossing_notes(plan, [_compared(12_379.0, 12_592.0, None)], steps) == ()


def test_compare_json_carries_the_notes_the_text_prints(tmp_path):
    """chatbot against Nebius: break-even 8.14 req/s, yet the API is cheaper at 20 req/s;
    `compare --json` says why, as the text does (it had no notes at all)."""
    from click.testing import CliRunner

    from planner.cli import cli

    path = str(Path(__file__).resolve().parent.parent / "scenarios" / "chatbot.yaml")
    out = CliRunner().invoke(cli, ["compare", path, "--json", "--no-plot"], obj={})
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    nebius = next(a for a in got["apis"] if a["provider"] == "Nebius")
    assert nebius["break_even_peak_requests_per_s"] < got["demand_requests_per_s"]
    assert nebius["api_monthly_usd"] < got["self_hosted_monthly_usd"]
    assert any(n.startswith("Nebius ") and "steps across" in n for n in got["notes"])
