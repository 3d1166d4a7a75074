"""The HTML report: one self-contained file whose every chart draws in a real browser."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.inputs.scenarios import load_scenario
from planner.planning import sweep as sw
from planner.planning.breakeven import analyse
from planner.planning.pipeline import plan
from planner.planning.report import Money, demand_chart, plan_report, sweep_report
from planner.schema.sweep import VaryFile

pytest.importorskip("plotly", reason="the HTML report needs plotly (pip install -e '.[html]')")
from planner.render.html import render_html, write_html  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PLAN_CHARTS = ["frontier", "fleet", "demand", "tiers", "breakeven"]
FAST = (("hardware.gpus", (["h100-sxm", "a100-80gb"],)), ("solver.time_limit_s", (120,)))


@pytest.fixture(scope="module")
def plan_page(catalog, tmp_path_factory):
    """build-vs-api: a plan over time and API offerings, so every plan chart has data."""
    scenario, cat = load_scenario(ROOT / "scenarios" / "build-vs-api.yaml", catalog)
    result = plan(scenario, cat)
    report = plan_report(result, analyse(result))
    return report, write_html(report, tmp_path_factory.mktemp("html") / "plan.html")


@pytest.fixture(scope="module")
def sweep_page(catalog, tmp_path_factory):
    """A small Monte Carlo on moe.yaml: results per input, the distribution, the tornado."""
    base, cat = load_scenario(ROOT / "scenarios" / "moe.yaml", catalog)
    vary = VaryFile.model_validate(
        {
            "vary": {
                "workload.requests_per_second": {"dist": "uniform", "low": 4, "high": 40},
                "search.target_utilization": {"dist": "uniform", "low": 0.5, "high": 0.9},
            }
        }
    )
    spec = sw.SweepSpec(grid=FAST, vary=vary, samples=6, seed=1)
    report = sweep_report(sw.sweep(base, cat, spec, jobs=1))
    return report, write_html(report, tmp_path_factory.mktemp("html") / "sweep.html")


def test_the_plan_report_has_every_chart(plan_page):
    report, path = plan_page
    assert [c.id for c in report.charts] == PLAN_CHARTS
    assert all(c.series for c in report.charts)
    page = path.read_text()
    for chart in PLAN_CHARTS:
        assert f'id="chart-{chart}"' in page
    assert page.count("Plotly.newPlot") == len(PLAN_CHARTS)


def test_the_page_is_self_contained_and_printable(plan_page):
    page = plan_page[1].read_text()
    assert not re.search(r"<script[^>]+src=", page), "every script is inline"
    assert "<link" not in page and not re.search(r"<(img|iframe)[^>]+src=", page)
    assert page.count("plotly.js v") >= 1  # the library itself, inlined once
    assert "@media print" in page and "break-inside: avoid" in page
    size = len(page.encode())
    assert 3e6 < size < 12e6, size


def test_the_sweep_report_charts(sweep_page):
    report, _ = sweep_page
    ids = [c.id for c in report.charts]
    assert ids == [
        "sweep-workload-requests-per-second",
        "sweep-search-target-utilization",
        "distribution",
        "tornado",
    ]
    assert [t.caption for t in report.tables][0] == "Summary over the planned points"


def test_solve_writes_an_html_report(tmp_path):
    out = tmp_path / "moe.html"
    res = CliRunner().invoke(
        cli, ["solve", str(ROOT / "scenarios" / "moe.yaml"), "--no-export", "--html", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert f"Report: {out}" in res.output
    assert 'id="chart-frontier"' in out.read_text()
    assert not list(tmp_path.glob(".*.tmp")), "written atomically, no temporary file left"


def test_render_html_formats_facts(plan_page):
    report, _ = plan_page
    page = render_html(report)
    assert "build-vs-api: plan" in page and "fleet per month" in page
    month = next(v for k, v in report.facts if k == "fleet per month")
    assert f"<b>${month.usd:,.0f}</b>" in page  # money as money: $12,592, not 12,592.50


def test_money_facts_read_as_dollars():
    from planner.render.html import _format

    assert _format(Money(12_592.5)) == "$12,592"
    assert _format(Money(17.25)) == "$17.25"
    assert _format(Money(0.00093592)) == "$0.000936"
    assert _format(Money(0.0)) == "$0.00"


def test_the_plan_page_carries_the_break_even_notes(catalog):
    """chatbot: Nebius is cheaper at 20 req/s though self-hosting breaks even at 8.14; the
    page says why, as the terminal does (its notes left the analysis' out when it drew the
    chart)."""
    scenario, cat = load_scenario(ROOT / "scenarios" / "chatbot.yaml", catalog)
    result = plan(scenario, cat)
    analysis = analyse(result)
    report = plan_report(result, analysis)
    assert analysis.notes and set(analysis.notes) <= set(report.notes)
    assert "breakeven" in [c.id for c in report.charts]


# ---- in a real browser ------------------------------------------------------------------


def _chromium() -> str | None:
    """Debian's chromium (or PLANNER_CHROMIUM), which Playwright drives."""
    return os.environ.get("PLANNER_CHROMIUM") or shutil.which("chromium")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
    )
    binary = _chromium()
    if binary is None:
        pytest.skip("no chromium to drive (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=binary, args=["--no-sandbox"])
        yield b
        b.close()


def _drawn(browser, path: Path, shot: Path) -> dict[str, int]:
    """Open the page offline; every console error fails; per chart, the traces drawn."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route(re.compile(r"^(?!file:).*"), lambda route: route.abort())  # no network
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_function(
        "[...document.querySelectorAll('section.chart')].every("
        "s => s.querySelector('svg.main-svg'))",
        timeout=30_000,
    )
    drawn = page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('section.chart')].map(s => "
        "[s.dataset.chart, s.querySelectorAll('svg.main-svg .cartesianlayer .trace').length]))"
    )
    page.screenshot(path=str(shot), full_page=True)
    page.emulate_media(media="print")
    pdf = page.pdf(path=str(shot.with_suffix(".pdf")))
    page.close()
    assert not errors, errors
    assert len(pdf) > 10_000
    return drawn


@pytest.mark.slow
def test_every_plan_chart_draws_in_chromium(browser, plan_page, tmp_path):
    report, path = plan_page
    drawn = _drawn(browser, path, tmp_path / "plan.png")
    assert list(drawn) == PLAN_CHARTS
    assert all(n >= 1 for n in drawn.values()), drawn


@pytest.mark.slow
def test_every_sweep_chart_draws_in_chromium(browser, sweep_page, tmp_path):
    report, path = sweep_page
    drawn = _drawn(browser, path, tmp_path / "sweep.png")
    assert list(drawn) == [c.id for c in report.charts]
    assert all(n >= 1 for n in drawn.values()), drawn


def test_the_break_even_chart_draws_every_api_its_title_speaks_of(plan_page, catalog):
    """#13: the title counted every API's crossing but the chart drew the cheapest API only
    (diurnal-chatbot: "where self-hosting becomes cheaper" over two lines that never met)."""
    report, _ = plan_page
    chart = next(c for c in report.charts if c.id == "breakeven")
    own, apis = chart.series[0], chart.series[1:]
    scenario, cat = load_scenario(ROOT / "scenarios" / "build-vs-api.yaml", catalog)
    labels = {f"{q.provider} {q.provider_model_id}" for q in plan(scenario, cat).api_quotes}
    assert {s.name for s in apis} == {f"API: {label}" for label in labels}
    crosses = [
        s.name
        for s in apis
        if any(a > o for a, o in zip(s.y, own.y, strict=True))
        and any(a < o for a, o in zip(s.y, own.y, strict=True))
    ]
    assert crosses, "build-vs-api: some API line crosses the self-hosted line"
    assert chart.title == "Build vs buy: where self-hosting becomes cheaper"


def test_the_line_a_chart_is_about_is_black_and_the_demand_bar_is_named(plan_page, catalog):
    """Self-hosting on the break-even chart and demand on the daily chart are drawn black and
    thick (the self-hosted line was blue among a dozen APIs); a single-period plan's demand
    bar stands at "peak demand", not at "fleet" beside "capacity"."""
    from planner.render.html import figure

    report, _ = plan_page
    for chart_id in ("breakeven", "demand"):
        chart = next(c for c in report.charts if c.id == chart_id)
        first, *rest = figure(chart).data
        assert (first.line.color, first.line.width) == ("#000000", 3)
        assert all(t.line.color != "#000000" for t in rest)
    scenario, cat = load_scenario(ROOT / "scenarios" / "chatbot.yaml", catalog)
    bars = demand_chart(plan(scenario, cat)).series
    assert bars[0].x == ["peak demand"] and all(b.x == ["fleet capacity"] for b in bars[1:])


def test_chart_colours_never_repeat():
    """#13: colours repeated after 10 series (12 APIs on the break-even chart)."""
    from planner.planning.report import Chart, Series
    from planner.render.html import _plotly, _trace

    go, _ = _plotly()
    series = tuple(Series(f"s{i}", [1, 2], [i, i + 1]) for i in range(25))
    chart = Chart("x", "t", "line", "x", "y", series)
    colours = [_trace(go, chart, s, i).line.color for i, s in enumerate(series)]
    assert len(set(colours)) == len(colours)
