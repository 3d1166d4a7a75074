"""The evidence for issue #14 (sweeps and the HTML report), as Markdown on stdout.

    python benchmarks/sweep_evidence.py [section ...] > benchmarks/results/sweep_evidence.md

Sections (default: grid, montecarlo, html): the 9-point grid sweep over chatbot.yaml (SLA x
GPU choice) written as CSV and as Parquet (and checked equal); a 12-point Monte Carlo on
diurnal-chatbot (P10/P50/P90; the 1,000-point run is the lead's); the HTML reports of the
grid sweep, the Monte Carlo and `solve diurnal-chatbot --html` opened in headless chromium
through Playwright: console errors, each chart's SVG and traces, what each chart shows,
and a full-page screenshot under benchmarks/results/. The optional section `ray` runs 4
Monte Carlo points locally and on a local Ray cluster and compares the tables. About 2-3
minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
from evidence_common import ROOT, SCENARIOS, planner, run_sections, scratch, table

TMP = scratch("sweep-evidence-")
RESULTS = ROOT / "benchmarks" / "results"
CHATBOT = str(SCENARIOS / "chatbot.yaml")
DIURNAL = str(SCENARIOS / "diurnal-chatbot.yaml")
VARY = str(ROOT / "benchmarks" / "diurnal-chatbot-vary.yaml")
GRID = [
    "--set", "sla.tpot_ms=30,50,80",
    "--set", "hardware.gpus=[h100-sxm],[h200],[h100-sxm,h200,b200]",
]  # fmt: skip
MC_SAMPLES = "6"  # the 1,000-point run is the lead's; 20 at the most here
JOBS = os.environ.get("SWEEP_EVIDENCE_JOBS", "2")
SHOWN = [
    "sla.tpot_ms", "hardware.gpus", "status", "cost_per_month_usd",
    "cost_per_1k_output_tokens_usd", "cost_per_1m_tokens_usd", "total_gpus", "reason",
]  # fmt: skip


def _cell(v: object) -> str:
    if isinstance(v, float):
        if v != v:
            return "-"
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.4g}"
    return "-" if v is None or v is pd.NA or v == "" else str(v).replace("|", "/")


def _frame_rows(frame: pd.DataFrame, columns: list[str]) -> list[list[str]]:
    return [[_cell(frame.at[i, c]) for c in columns] for i in frame.index]


def section_grid() -> list[str]:
    """The grid sweep: its table, CSV and Parquet written and equal, its HTML report."""
    csv, parquet, page = TMP / "grid.csv", TMP / "grid.parquet", TMP / "grid.html"
    r = planner("sweep", CHATBOT, *GRID, "--jobs", JOBS, "-o", str(csv), "--html", str(page))
    r2 = planner("sweep", CHATBOT, *GRID, "--jobs", JOBS, "-o", str(parquet))
    if r.rc != 0 or r2.rc != 0:
        return ["## 1. Grid sweep", "", f"exit {r.rc}/{r2.rc}: {r.stderr}{r2.stderr}", ""]
    a, b = pd.read_csv(csv), pd.read_parquet(parquet)
    same = _same_tables(a, b)
    gpu_cols = [c for c in a.columns if c.startswith("gpus_") and a[c].fillna(0).sum() > 0]
    shown = [c for c in SHOWN if c in a.columns] + gpu_cols
    return [
        "## 1. Grid sweep: chatbot.yaml, TPOT SLA x GPU choice (9 points)",
        "",
        "`planner sweep scenarios/chatbot.yaml "
        + " ".join(f"'{g}'" if "[" in g else g for g in GRID)
        + " -o grid.csv`",
        "",
        table(shown, _frame_rows(a, shown)),
        "",
        f"Written: {csv.name} ({csv.stat().st_size:,} bytes, {len(a)} rows x {len(a.columns)} "
        f"columns) and, in a second run, {parquet.name} ({parquet.stat().st_size:,} bytes); "
        f"the two tables are equal apart from `seconds`: {same}. Runs: "
        f"{r.wall_s:.1f} s and {r2.wall_s:.1f} s wall, {JOBS} local workers.",
        "",
        "Terminal (COLUMNS=100, widest line " + f"{r.widest}):",
        "",
        "```",
        r.stdout.rstrip(),
        "```",
        "",
    ]


def _same_tables(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Equal columns and values (numbers to 1e-9), `seconds` (wall time) left out."""
    a, b = a.drop(columns=["seconds"]), b.drop(columns=["seconds"])
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return False
    for c in a.columns:
        x, y = a[c], b[c]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            x, y = x.astype(float), y.astype(float)
            close = (x - y).abs() <= 1e-9 * y.abs().clip(lower=1)
            if not (close | (x.isna() & y.isna())).all():
                return False
        elif x.astype("string").fillna("").tolist() != y.astype("string").fillna("").tolist():
            return False
    return True


def section_montecarlo() -> list[str]:
    """A small Monte Carlo on diurnal-chatbot: the summary and its HTML report."""
    out_file, page = TMP / "mc.csv", TMP / "mc.html"
    r = planner("sweep", DIURNAL, "--vary", VARY, "--samples", MC_SAMPLES, "--seed", "7",
                "--jobs", JOBS, "-o", str(out_file), "--html", str(page))  # fmt: skip
    if r.rc != 0:
        return ["## 2. Monte Carlo", "", f"exit {r.rc}: {r.stderr}", ""]
    frame = pd.read_csv(out_file)
    cost = frame["over_time_per_month_usd"].dropna()
    pct = {q: cost.quantile(q / 100) for q in (10, 50, 90)}
    return [
        f"## 2. Monte Carlo: diurnal-chatbot, {MC_SAMPLES} points (seed 7)",
        "",
        f"`planner sweep scenarios/diurnal-chatbot.yaml --vary benchmarks/diurnal-chatbot-vary"
        f".yaml --samples {MC_SAMPLES} --seed 7` ({r.wall_s:.1f} s wall, {JOBS} workers): "
        f"{len(cost)} of {len(frame)} points planned; plan over time $/month P10 "
        f"${pct[10]:,.0f}, P50 ${pct[50]:,.0f}, P90 ${pct[90]:,.0f} (pandas quantiles of the "
        "CSV; the command's own summary below). Seconds a point (the CSV's `seconds`): "
        f"median {frame['seconds'].median():.1f}, max {frame['seconds'].max():.1f}.",
        "",
        "```",
        r.stdout.rstrip(),
        "```",
        "",
    ]


# ---- the HTML reports in chromium ------------------------------------------------------------

DESCRIBE = """() => [...document.querySelectorAll('section.chart')].map(s => {
  const plot = s.querySelector('.js-plotly-plot');
  const lay = (plot && plot.layout) || {};
  const text = t => (t && typeof t === 'object' ? t.text : t) || '';
  return {
    id: s.dataset.chart,
    svg: s.querySelectorAll('svg.main-svg').length,
    traces: s.querySelectorAll('svg.main-svg .trace').length,
    title: text(lay.title),
    x: text((lay.xaxis || {}).title), y: text((lay.yaxis || {}).title),
    series: ((plot && plot.data) || []).map(d => `${d.name || d.type}` +
      ` (${(d.x || d.y || []).length} points)`),
  };
})"""


def _chromium() -> str | None:
    return os.environ.get("PLANNER_CHROMIUM") or shutil.which("chromium")


def open_page(browser, path: Path, shot: Path) -> tuple[list[str], list[dict]]:
    """Load a report offline; the console errors, what each chart drew; a full-page PNG."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route(re.compile(r"^(?!file:).*"), lambda route: route.abort())  # no network
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    try:
        page.wait_for_function(
            "[...document.querySelectorAll('section.chart')]"
            ".every(s => s.querySelector('svg.main-svg'))",
            timeout=30_000,
        )
    except Exception as exc:  # a chart that never draws is the finding, not a crash
        errors.append(f"not every chart drew within 30 s: {exc}")
    charts = page.evaluate(DESCRIBE)
    page.screenshot(path=str(shot), full_page=True, type="png")
    page.close()
    return errors, charts


def _report_lines(label: str, path: Path, errors: list[str], charts: list[dict], shot: Path):
    rows = [[c["id"], c["svg"], c["traces"], c["title"], c["x"], c["y"],
             "; ".join(c["series"][:6]) + (" ..." if len(c["series"]) > 6 else "")]
            for c in charts]  # fmt: skip
    size = path.stat().st_size
    drawn = sum(1 for c in charts if c["svg"] and c["traces"])
    return [
        f"### {label}",
        "",
        f"{path.name}: {size / 1e6:.1f} MB, self-contained; console errors: "
        f"{len(errors)}{' ' + json.dumps(errors[:3]) if errors else ''}; charts drawn "
        f"(an SVG with at least one trace): {drawn} of {len(charts)}; full-page screenshot "
        f"`{shot.relative_to(ROOT)}` ({shot.stat().st_size / 1e3:,.0f} kB).",
        "",
        table(["chart", "SVGs", "traces", "title", "x axis", "y axis", "series"], rows),
        "",
    ]


def section_html() -> list[str]:
    """Every report in headless chromium: the grid sweep, the Monte Carlo, solve --html."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return ["## 3. HTML reports", "", "Playwright is not installed.", ""]
    solve_page = TMP / "diurnal.html"
    r = planner("solve", DIURNAL, "--no-export", "--html", str(solve_page))
    pages = [
        ("planner solve scenarios/diurnal-chatbot.yaml --html", solve_page, "diurnal"),
        ("planner sweep (the grid of section 1) --html", TMP / "grid.html", "grid"),
        ("planner sweep (the Monte Carlo of section 2) --html", TMP / "mc.html", "mc"),
    ]
    pages = [p for p in pages if p[1].exists()]
    binary = _chromium()
    if binary is None:
        return ["## 3. HTML reports", "", "No chromium on PATH (PLANNER_CHROMIUM).", ""]
    out = ["## 3. HTML reports in headless chromium (Playwright, network blocked)", ""]
    if r.rc != 0:
        out += [f"`solve --html` exit {r.rc}: {r.stderr.strip()}", ""]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=binary, args=["--no-sandbox"])
        for label, path, stem in pages:
            shot = RESULTS / f"html-{stem}.png"
            errors, charts = open_page(browser, path, shot)
            out += _report_lines(label, path, errors, charts, shot)
        browser.close()
    return out


def section_ray() -> list[str]:
    """4 Monte Carlo points locally and on a local Ray cluster: the same table."""
    local, ray = TMP / "local.csv", TMP / "ray.csv"
    args = ["sweep", DIURNAL, "--vary", VARY, "--samples", "4", "--seed", "7"]
    a = planner(*args, "--jobs", JOBS, "-o", str(local))
    b = planner(*args, "--ray", "local", "-o", str(ray))
    if a.rc != 0 or b.rc != 0:
        return ["## 4. Local against Ray", "", f"exit {a.rc}/{b.rc}: {b.stderr[-500:]}", ""]
    same = _same_tables(pd.read_csv(local), pd.read_csv(ray))
    return [
        "## 4. Local pool against a local Ray cluster (4 points)",
        "",
        f"Local {a.wall_s:.1f} s, Ray (started for the run) {b.wall_s:.1f} s; the tables are "
        f"equal apart from `seconds`: {same}.",
        "",
    ]


SECTIONS = ("grid", "montecarlo", "html", "ray")


def main(argv: list[str]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    sections = {n: globals()[f"section_{n}"] for n in SECTIONS}
    run_sections(
        "Issue #14 evidence: sweeps and the HTML report", "sweep_evidence.py", sections,
        SECTIONS[:3], argv,
    )  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
