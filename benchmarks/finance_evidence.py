"""The evidence for issue #13 (finance-grade numbers), as Markdown on stdout.

    python benchmarks/finance_evidence.py [section ...] > benchmarks/results/finance_evidence.md

Sections (default: all, in this order): volume, solves, compare, workbook, pages, widths,
energy.
Every figure is read from the planner's public functions and JSON (`plan`, `plan_dict`,
`read_back`, `planner ... --json`), so the script runs against whatever the model and the
solver become. One run plans every shipped scenario once in process (timed), writes its
workbook, prints them all to PDF with LibreOffice in one start, and runs each command once
at COLUMNS=100: about 3-5 minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from evidence_common import (
    ROOT,
    SCENARIOS,
    Run,
    pages_per_sheet,
    planner,
    run_sections,
    scratch,
    table,
    to_pdf,
)

from planner import load_catalog, load_scenario, plan
from planner.inputs.platforms import is_platform
from planner.planning.breakeven import analyse
from planner.render.json import plan_dict
from planner.render.xlsx import read_back, write_workbook

TMP = scratch("finance-evidence-")
# A plan over time with owned GPUs: no shipped scenario has `finance.owned`, so the solve
# table adds diurnal-chatbot with B200s bought at the purchase price tests/test_export.py
# uses. A hypothetical figure for timing the MIP, not a quote.
OWNED = {"b200": {"purchase_usd_per_gpu": 30000}}


@dataclass
class Planned:
    """One scenario planned in process: its JSON, solves (with seconds) and workbook."""

    name: str
    data: dict
    solves: list
    plan_cpu_s: float
    plan_wall_s: float
    book: Path | None


def shipped() -> list[Path]:
    """Every shipped single-model scenario (platforms are planned through the CLI)."""
    return [p for p in sorted(SCENARIOS.glob("*.yaml")) if not is_platform(p)]


def owned_variant() -> Path:
    """diurnal-chatbot.yaml with an `owned:` section (see OWNED)."""
    doc = yaml.safe_load((SCENARIOS / "diurnal-chatbot.yaml").read_text(encoding="utf-8"))
    doc["name"] = "diurnal-chatbot-owned"
    doc["finance"]["owned"] = OWNED
    path = TMP / "diurnal-chatbot-owned.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def plan_one(path: Path, catalog, book: bool = True) -> Planned:
    """Plan one scenario under its defaults; write its workbook when asked."""
    scenario, cat = load_scenario(path, catalog)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = plan(scenario, cat)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    target = None
    if book:
        target = write_workbook(result, TMP / f"{path.stem}.xlsx", analyse(result))
    return Planned(path.stem, plan_dict(result), list(result.solves), cpu, wall, target)


def plan_everything(only_finance: bool = False) -> dict[str, Planned]:
    """Every shipped scenario (or only those with `finance:`) and the owned variant,
    planned once."""
    catalog = load_catalog()
    paths = [p for p in shipped() if not only_finance or "\nfinance:" in p.read_text()]
    out = {p.stem: plan_one(p, catalog) for p in paths}
    variant = plan_one(owned_variant(), catalog, book=False)
    out[variant.name] = variant
    return out


def has_finance(p: Planned) -> bool:
    return p.data.get("over_time") is not None


# ---- 1. volume ------------------------------------------------------------------------------


def section_volume(plans: dict[str, Planned]) -> list[str]:
    """Month by month: served avg req/s against the profile mean x the month's peak, and
    the workbook's Monthly!B against the JSON."""
    out = ["## 1. Served volume: profile mean x peak, JSON and workbook", ""]
    for name in ("diurnal-chatbot", "build-vs-api"):
        p = plans.get(name)
        if p is None or not has_finance(p):
            continue
        factor = p.data["average_demand_factor"]
        cells = read_back(p.book) if p.book else {}
        rows, worst = [], 0.0
        for i, m in enumerate(p.data["over_time"]["monthly"]):
            want = factor * m["peak_requests_per_s"]
            book = cells.get(f"Monthly!B{i + 2}")
            worst = max(worst, abs(m["avg_requests_per_s"] - want) / want)
            if book is not None:
                worst = max(worst, abs(book - m["avg_requests_per_s"]) / want)
            rows.append([m["month"], f"{m['peak_requests_per_s']:.3f}",
                         f"{m['avg_requests_per_s']:.4f}", f"{want:.4f}",
                         "-" if book is None else f"{book:.4f}"])  # fmt: skip
        out += [
            f"**{name}**: profile mean (`average_demand_factor`) = {factor:.5f}; month 1 serves "
            f"{p.data['over_time']['monthly'][0]['avg_requests_per_s']:.4f} avg req/s = "
            f"{factor:.5f} x {p.data['over_time']['monthly'][0]['peak_requests_per_s']:g} peak "
            f"(before the fix: the monthly table averaged each slot's peak level, 19.375 for "
            f"diurnal-chatbot and 6.7 for build-vs-api).",
            "",
            table(["month", "peak req/s", "avg req/s (JSON)", "mean x peak", "Monthly!B"], rows),
            "",
            f"Largest relative difference, JSON against mean x peak and workbook: {worst:.1e}.",
            "",
        ]
    return out


# ---- 2. solves ------------------------------------------------------------------------------


def section_solves(plans: dict[str, Planned]) -> list[str]:
    """Status, gap and time of every solve behind every plan over time, under defaults."""
    rows = []
    for p in plans.values():
        if not has_finance(p):
            continue
        for s in p.solves:
            rows.append([p.name, s.name, s.backend, s.status, f"{s.gap:.4%}",
                         f"{s.seconds:.2f}", f"{s.time_limit_s:g}"])  # fmt: skip
        ot = p.data["over_time"]
        held = "; ".join(
            f"{kind} " + (", ".join(f"{n} x {g}" for g, n in gpus.items() if n) or "none")
            for kind, gpus in (("reserved", ot["reserved_gpus"]), ("owned", ot["owned_gpus"]))
        )
        rows.append([p.name, f"**whole plan()** ({held})", "", f"over time: {ot['status']}",
                     f"{ot['gap']:.4%}", f"{p.plan_wall_s:.2f} wall, {p.plan_cpu_s:.2f} CPU",
                     ""])  # fmt: skip
    return [
        "## 2. Plans over time under the defaults (every scenario with `finance:`)",
        "",
        "Each solve as `Plan.solves` records it (backend, status, gap to the bound, solver "
        "seconds, the limit); the last row of a scenario times the whole `plan()` call "
        "(grid, every solve) in this process. `diurnal-chatbot-owned` adds "
        f"`finance.owned: {json.dumps(OWNED)}` (hypothetical purchase price, for the MIP "
        "with owned GPUs).",
        "",
        table(["scenario", "solve", "backend", "status", "gap", "seconds", "limit s"], rows),
        "",
    ]


# ---- 3. compare -----------------------------------------------------------------------------


def _fmt_be(v: float | None) -> str:
    return "never" if v is None else f"{v:,.2f}"


def section_compare(plans: dict[str, Planned]) -> list[str]:
    """`planner compare scenarios/build-vs-api.yaml --json`: self-host monthly from the
    plan over time, every API, break-even volumes; checked against solve's JSON."""
    r = planner("compare", str(SCENARIOS / "build-vs-api.yaml"), "--json")
    if r.rc != 0:
        return ["## 3. compare build-vs-api", "", f"exit {r.rc}: {r.stderr.strip()}", ""]
    d = json.loads(r.stdout)
    p = plans.get("build-vs-api")
    rows = [[a["provider"], a["provider_model_id"], f"${a['api_monthly_usd']:,.0f}",
             "self" if a["api_monthly_usd"] > d["self_hosted_monthly_usd"] else "API",
             _fmt_be(a["break_even_peak_requests_per_s"]),
             "never" if a["break_even_tokens_per_month"] is None
             else f"{a['break_even_tokens_per_month'] / 1e9:,.2f} billion"]
            for a in d["apis"]]  # fmt: skip
    out = [
        "## 3. `planner compare scenarios/build-vs-api.yaml`",
        "",
        f"Self-hosted: ${d['self_hosted_monthly_usd']:,.2f}/month ({d['self_hosted_basis']}); "
        f"the peak fleet 24/7 would be ${d['peak_fleet_monthly_usd']:,.2f}/month (before the "
        "fix `compare` used the peak fleet: $19,637 against solve's $11,817 then).",
    ]
    if p is not None and has_finance(p):
        ot = p.data["over_time"]
        months = len(ot["monthly"])
        out.append(
            f"Check: solve's horizon total ${ot['total_cost_usd']:,.2f} / {months} months = "
            f"${ot['total_cost_usd'] / months:,.2f}/month; the workbook's Build vs API!F2 = "
            f"${read_back(p.book)['Build vs API!F2']:,.2f}."
            if p.book
            else ""
        )
    if p is not None and p.book is not None:
        out.append(_sheet_check(p.book, d))
    out += [
        f"`compare --json`: {r.wall_s:.2f} s wall, {r.cpu_s:.2f} CPU s (one process, the "
        "plan and the break-even search).",
        "",
        table(
            [
                "provider",
                "endpoint",
                "API $/month",
                "cheaper",
                "break-even peak req/s",
                "break-even tokens/month",
            ],
            rows,
        ),  # fmt: skip
        "",
    ]
    return out


def _sheet_check(book: Path, d: dict) -> str:
    """The Build vs API sheet's $/month per API (live formulas, re-evaluated) against
    compare's JSON, matched by provider and endpoint."""
    import openpyxl

    cells = read_back(book)
    ws = openpyxl.load_workbook(book, read_only=True)["Build vs API"]
    names = {
        r: (a, b)
        for r, (a, b) in enumerate(ws.iter_rows(min_col=1, max_col=2, values_only=True), start=1)
    }
    sheet = {names[r]: cells.get(f"Build vs API!F{r}") for r in names if r >= 3}
    worst, matched = 0.0, 0
    for a in d["apis"]:
        got = sheet.get((a["provider"], a["provider_model_id"]))
        if isinstance(got, (int, float)):
            matched += 1
            worst = max(worst, abs(got - a["api_monthly_usd"]) / a["api_monthly_usd"])
    return (
        f"The Build vs API sheet's API $/month (column F, formulas re-evaluated by "
        f"`read_back`) against `compare --json`: {matched} of {len(d['apis'])} offerings "
        f"matched by provider and endpoint, largest relative difference {worst:.1e}."
    )


# ---- 3b. workbook against JSON ---------------------------------------------------------------

# Summary key -> the plan JSON's figure (a key or a function of the JSON)
SUMMARY_VS_JSON = {
    "total_cost_per_hour_usd": "total_cost_per_hour_usd",
    "monthly_cost_usd": "monthly_cost_usd",
    "cost_per_1k_output_tokens_usd": "cost_per_1k_output_tokens_usd",
    "cost_per_1m_tokens_usd": "cost_per_1m_tokens_usd",
    "total_gpus": "total_gpus",
    "cheapest_api_monthly_cost_usd": "cheapest_api_monthly_usd",
    "energy_wh_per_1k_output_tokens": "energy_wh_per_1k_output_tokens",
    "co2_g_per_1k_output_tokens": lambda d: (d.get("energy") or {}).get(
        "co2_g_per_1k_output_tokens"
    ),
    "api_saving_monthly_usd": lambda d: (
        None
        if d.get("cheapest_api_monthly_usd") is None
        else d["cheapest_api_monthly_usd"] - d["self_hosted_monthly_usd"]
    ),
}


def _compare_summary(p: Planned) -> list[object]:
    cells = read_back(p.book)
    worst, checked, off = 0.0, 0, []
    for key, source in SUMMARY_VS_JSON.items():
        want = source(p.data) if callable(source) else p.data.get(source)
        got = cells.get(key)
        if not isinstance(want, (int, float)) or not isinstance(got, (int, float)):
            continue
        checked += 1
        rel = abs(got - want) / max(abs(want), 1e-12)
        worst = max(worst, rel)
        if rel > 1e-6:
            off.append(f"{key} {got:.6g} vs {want:.6g}")
    return [p.name, checked, f"{worst:.1e}", "; ".join(off) or "-"]


def section_workbook(plans: dict[str, Planned]) -> list[str]:
    """Every shipped workbook's Summary figures (formulas re-evaluated from the workbook's
    own inputs) against the plan's JSON."""
    rows = [_compare_summary(p) for p in plans.values() if p.book is not None]
    return [
        "## 3b. Workbook Summary against the JSON (every shipped scenario)",
        "",
        "Summary cells re-evaluated by `read_back` (the workbook's formulas over its own "
        "input cells) against `plan_dict`: $/h, $/month, $ per 1K and per 1M tokens, GPUs, "
        "the cheapest API's bill and the saving against it, energy and CO2.",
        "",
        table(["scenario", "figures compared", "largest relative difference", "off"], rows),
        "",
    ]


# ---- 4. pages -------------------------------------------------------------------------------


def platform_books() -> list[Path]:
    """Workbooks of the shipped platform scenarios, written through the CLI."""
    books = []
    for path in sorted(SCENARIOS.glob("**/*.yaml")):
        if is_platform(path):
            book = TMP / f"{path.stem}.xlsx"
            if planner("solve", str(path), "-o", str(book)).rc == 0:
                books.append(book)
    return books


def section_pages(plans: dict[str, Planned]) -> list[str]:
    """Each shipped workbook printed to PDF by LibreOffice: pages in all and per sheet."""
    books = [p.book for p in plans.values() if p.book is not None] + platform_books()
    pdfs = to_pdf(books, TMP)
    if not pdfs:
        return ["## 4. Workbook pages", "", "LibreOffice (soffice) is not installed.", ""]
    rows, sheets_seen = [], []
    per = {}
    for book, pdf in pdfs.items():
        total, sheets = pages_per_sheet(pdf)
        per[book.stem] = (total, sheets)
        sheets_seen += [s for s in sheets if s not in sheets_seen]
    for name, (total, sheets) in per.items():
        rows.append([name, total, *(sheets.get(s, "") for s in sheets_seen)])
    missing = sorted({b.stem for b in books} - set(per))
    return [
        "## 4. Workbook pages printed to PDF (`soffice --headless --convert-to pdf`)",
        "",
        "Pages per sheet from the PDF's outline (one bookmark per sheet). Before the print "
        "setup the diurnal workbook printed as 115 pages and its Summary over 4.",
        "",
        table(["workbook", "pages", *sheets_seen], rows),
        "",
        *([f"Not converted: {', '.join(missing)}", ""] if missing else []),
    ]


# ---- 5. widths ------------------------------------------------------------------------------


def _commands() -> list[tuple[str, list[str]]]:
    s = str(SCENARIOS)
    measured = str(ROOT / "data" / "calibration" / "measured_public.csv")
    return [
        ("solve chatbot", ["solve", f"{s}/chatbot.yaml", "--no-export"]),
        ("solve diurnal-chatbot", ["solve", f"{s}/diurnal-chatbot.yaml", "--no-export"]),
        ("solve platform", ["solve", f"{s}/platforms/platform.yaml", "--no-export"]),
        ("compare build-vs-api", ["compare", f"{s}/build-vs-api.yaml"]),
        ("estimate", ["estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4",
                      "--quant", "fp8", "--batch", "32"]),
        ("estimate --disaggregated", ["estimate", "--model", "llama-3.1-70b", "--gpu",
                                      "h100-sxm", "--quant", "fp8", "--disaggregated",
                                      "--prefill-tp", "4", "--prefill-workers", "3",
                                      "--decode-tp", "4", "--batch", "48", "--input-len",
                                      "16384", "--output-len", "256", "--rate", "3"]),
        ("capacity fleet-16xh100 --rate 30", ["capacity", f"{s}/fleet-16xh100.yaml",
                                             "--rate", "30"]),
        ("job batch-job", ["job", f"{s}/batch-job.yaml"]),
        ("sweep chatbot (2 points)", ["sweep", f"{s}/chatbot.yaml", "--set",
                                      "sla.tpot_ms=40,60", "--jobs", "1"]),
        ("validate measured_public.csv", ["validate", measured]),
        ("calibrate measured_public.csv (vllm rows, 2 constants)",
         ["calibrate", measured, "--only-engine", "vllm", "--params", "eta_mem,step_overhead_ms",
          "--starts", "1", "-o", str(TMP / "cal.yaml")]),
        ("catalog gpus", ["catalog", "gpus"]),
        ("catalog models", ["catalog", "models"]),
        ("catalog quants", ["catalog", "quants"]),
        ("catalog apis", ["catalog", "apis"]),
        ("catalog engines", ["catalog", "engines"]),
    ]  # fmt: skip


def section_widths() -> list[str]:
    """The widest line of each command's terminal output at COLUMNS=100."""
    rows = []
    for label, args in _commands():
        r: Run = planner(*args)
        lines = len((r.stdout + r.stderr).splitlines())
        verdict = "fits" if r.widest <= 100 else "**over 100**"
        rows.append([label, r.rc, lines, r.widest, verdict, f"{r.wall_s:.1f}"])
    return [
        "## 5. Terminal widths at COLUMNS=100 (stdout + stderr, not a TTY)",
        "",
        "Before: `compare` 131-170 columns, `catalog apis` 186, `catalog engines` 977, "
        "`validate` 165+.",
        "",
        table(["command", "exit", "lines", "widest line", "", "wall s"], rows),
        "",
    ]


# ---- 6. energy ------------------------------------------------------------------------------


def _energy_row(p: Planned) -> list[object]:
    e = p.data.get("energy") or {}
    co2 = e.get("co2_g_per_1k_output_tokens")
    ot_wh = e.get("over_time_energy_wh_per_1k_output_tokens")
    ot_co2 = e.get("over_time_co2_g_per_1k_output_tokens")
    return [
        p.name, p.data["total_gpus"], f"{e.get('power_kw', math.nan):.3f}",
        f"{e.get('utilisation', math.nan):.2f}", e.get("pue", ""),
        f"{p.data['energy_wh_per_1k_output_tokens']:.4f}",
        "-" if ot_wh is None else f"{ot_wh:.4f}",
        e.get("grid_g_co2_per_kwh") or "-", "-" if co2 is None else f"{co2:.4f}",
        "-" if ot_co2 is None else f"{ot_co2:.4f}", ", ".join(e.get("missing_tdp", [])) or "-",
    ]  # fmt: skip


def arithmetic(p: Planned) -> list[str]:
    """Energy per 1K output tokens recomputed from the plan's own fields."""
    d, e = p.data, p.data["energy"]
    terms = [f"{x['gpus']} x {e['tdp_w'][x['gpu']]:g} W ({x['gpu']})" for x in d["fleet"]]
    watts = sum(x["gpus"] * e["tdp_w"].get(x["gpu"], 0.0) for x in d["fleet"])
    drawn = watts * e["utilisation"] * e["pue"]
    tok_s = sum(c["requests_per_second"] * c["output_tokens"] for c in d["classes"])
    per_k = drawn / (tok_s * 3600 / 1e3)
    out = [
        f"**Arithmetic for {p.name}** (from `fleet`, `energy.tdp_w`, `classes` of its JSON):",
        "",
        f"- GPU power at TDP: {' + '.join(terms)} = {watts:,.0f} W",
        f"- at utilisation {e['utilisation']:g} x PUE {e['pue']:g}: {drawn:,.1f} W "
        f"(JSON `power_kw` {e['power_kw']:g})",
        "- output tokens at the peak: "
        + " + ".join(
            f"{c['requests_per_second']:g} req/s x {c['output_tokens']}" for c in d["classes"]
        )
        + f" = {tok_s:,.1f} tok/s = {tok_s * 3.6:,.1f} thousand tokens an hour",
        f"- energy: {drawn:,.1f} Wh / {tok_s * 3.6:,.1f} = **{per_k:.4f} Wh per 1K output "
        f"tokens** (JSON {d['energy_wh_per_1k_output_tokens']:.4f})",
    ]
    if e.get("grid_g_co2_per_kwh"):
        g = per_k * e["grid_g_co2_per_kwh"] / 1e3
        out.append(
            f"- CO2: {per_k:.4f} Wh x {e['grid_g_co2_per_kwh']:g} g/kWh / 1000 = **{g:.4f} g "
            f"per 1K output tokens** (JSON {e['co2_g_per_1k_output_tokens']:.4f})"
        )
    return [*out, ""]


def section_energy(plans: dict[str, Planned]) -> list[str]:
    """Energy and CO2 per 1K output tokens of every shipped scenario's plan."""
    rows = [_energy_row(p) for p in plans.values() if p.data.get("energy")]
    out = [
        "## 6. Energy and carbon per 1K output tokens",
        "",
        "GPUs draw TDP (catalog, sourced) x the planned utilisation; the facility PUE x that; "
        "per 1K output tokens at the peak demand, and over the plan over time where there is "
        "one. CO2 only where the scenario gives `energy.grid_g_co2_per_kwh`.",
        "",
        table(
            [
                "scenario",
                "GPUs",
                "kW",
                "util",
                "PUE",
                "Wh/1K out",
                "Wh/1K over time",
                "g CO2/kWh",
                "g CO2/1K",
                "g CO2/1K over time",
                "no TDP",
            ],
            rows,
        ),  # fmt: skip
        "",
    ]
    if "diurnal-chatbot" in plans and plans["diurnal-chatbot"].data.get("energy"):
        out += arithmetic(plans["diurnal-chatbot"])
    return out


SECTIONS = ("volume", "solves", "compare", "workbook", "pages", "widths", "energy")


def main(argv: list[str]) -> None:
    needs = set(argv or SECTIONS) - {"widths"}
    cache: dict[str, dict[str, Planned]] = {}

    def plans() -> dict[str, Planned]:  # planned once, on first use
        if "all" not in cache:
            cache["all"] = plan_everything(needs <= {"volume", "solves", "compare"})
        return cache["all"]

    sections = {n: (lambda n=n: globals()[f"section_{n}"](plans())) for n in SECTIONS}
    sections["widths"] = section_widths
    run_sections(
        "Issue #13 evidence: finance-grade numbers", "finance_evidence.py", sections,
        SECTIONS, argv,
    )  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
