"""The figures of the HTML report, computed from a finished plan or sweep.

Planning computes, render formats: every number a chart shows is worked out here, as plain
series; `render.html` only turns them into plotly figures and a page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from planner.planning.breakeven import BuildVsBuy
from planner.planning.plan import Plan
from planner.planning.sweep import SweepResult
from planner.planning.sweep_table import GPU_PREFIX, planned
from planner.schema.plan import Deployment
from planner.units import HOURS_PER_MONTH, SECONDS_PER_HOUR

ChartKind = Literal["scatter", "line", "bar", "stacked_bar", "histogram", "tornado"]


@dataclass(frozen=True)
class Series:
    """One trace: x and y values, hover text per point, a marker or line style name."""

    name: str
    x: list[Any]
    y: list[Any]
    text: list[str] = field(default_factory=list)
    style: str = ""  # "", "star", "step", "dash"
    main: bool = False  # the line the chart is about (self-hosting, demand): drawn black


@dataclass(frozen=True)
class Chart:
    """One chart: its kind, titles, series, log axes and labelled reference lines at x."""

    id: str
    title: str
    kind: ChartKind
    x_title: str
    y_title: str
    series: tuple[Series, ...]
    x_log: bool = False
    y_log: bool = False
    x_lines: tuple[tuple[float, str], ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Money:
    """A fact in US dollars, so the page writes it as money ($12,592, not 12,592.50)."""

    usd: float


@dataclass(frozen=True)
class Table:
    """A table for the page: a caption, headers and rows of raw values."""

    caption: str
    headers: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class Report:
    """A page: title, key facts, charts, tables and notes."""

    title: str
    subtitle: str
    facts: tuple[tuple[str, Any], ...]
    charts: tuple[Chart, ...]
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()


# ---- a plan ------------------------------------------------------------------------------


def plan_report(result: Plan, analysis: BuildVsBuy | None = None) -> Report:
    """Frontier, fleet, demand vs capacity, cost by tier and break-even for one plan."""
    fleet = result.fleet
    facts: list[tuple[str, Any]] = [
        ("model", result.model_id),
        ("engine", result.engine),
        ("peak demand (req/s)", result.total_requests_per_s),
        ("fleet status", fleet.status),
        ("fleet per hour", Money(fleet.total_cost_per_hour_usd)),
        ("fleet per month", Money(fleet.total_cost_per_hour_usd * HOURS_PER_MONTH)),
        ("GPUs", fleet.total_gpus),
        ("per 1K output tokens", Money(fleet.cost_per_1k_output_tokens_usd)),
        ("per 1M tokens (input + output)", Money(fleet.cost_per_1m_tokens_usd)),
    ]
    if result.over_time is not None:
        tp = result.over_time
        facts.append(("plan over time, total", Money(tp.solution.total_cost)))
        month = tp.solution.total_cost / tp.horizon_months
        facts.append(("plan over time, per month", Money(month)))
    charts = [frontier_chart(result), fleet_chart(result), demand_chart(result), tier_chart(result)]
    notes = list(result.notes)
    be = break_even_chart(result, analysis)
    if be is not None:
        charts.append(be)
    if analysis is not None:  # what the break-even could not prove, or why a line recrosses
        notes += list(analysis.notes)
        if be is None and not analysis.notes:
            notes.append("no API offering of this model to break even with")
    return Report(
        title=f"{result.scenario_name}: plan",
        subtitle=f"{result.model_id} on {result.engine}"
        + (", at the p90 prediction margin" if result.prediction_margins else ""),  # #10
        facts=tuple(facts),
        charts=tuple(charts),
        tables=(fleet_table(result),),
        notes=tuple(notes),
    )


def frontier_chart(result: Plan) -> Chart:
    """Cost per 1K output tokens against TPOT for every candidate that fits, per GPU type,
    the fleet's deployments as stars and each class's TPOT bound as a line."""
    rows = result.candidates
    rows = rows[(rows["fits"] & rows["cost_per_1k_output_tokens_usd"].notna()).to_numpy()]
    rows = rows[(rows["role"] == "aggregated").to_numpy()]  # a pool alone serves no request
    series = []
    for gpu, grp in rows.groupby("gpu", observed=True, sort=True):
        text = [
            f"{gpu} tp{t} {q} batch {b}{'' if ok else ' (misses the SLA)'}"
            for t, q, b, ok in zip(
                grp["tp"], grp["quant"], grp["batch"], grp["sla_ok"], strict=True
            )
        ]
        series.append(
            Series(
                str(gpu),
                grp["tpot_ms"].tolist(),
                grp["cost_per_1k_output_tokens_usd"].tolist(),
                text,
            )
        )
    chosen = [d for d in result.fleet.deployments if d.replicas > 0 and d.role == "aggregated"]
    out_tokens = result.classes[0].output_tokens if result.classes else 1
    series.append(
        Series(
            "chosen",
            [d.tpot_ms for d in chosen],
            [
                d.cost_per_hour_usd
                / (SECONDS_PER_HOUR * max(d.capacity_requests_per_s, 1e-9) * out_tokens)
                * 1e3
                for d in chosen
            ],
            [f"{d.replicas} x {d.gpu} {_par(d)} {d.quant} batch {d.batch}" for d in chosen],
            style="star",
        )
    )
    lines = tuple((c.tpot_ms, f"TPOT SLA {c.name}") for c in result.classes if c.tpot_ms)
    pooled = any(d.role != "aggregated" for d in result.fleet.deployments)
    return Chart(
        "frontier",
        "Cost vs TPOT of every candidate that fits (stars: chosen)",
        "scatter",
        "TPOT (ms)",
        "$ per 1K output tokens",
        tuple(series),
        x_log=True,
        y_log=True,
        x_lines=lines,
        note="the fleet's prefill and decode pools are not drawn: a pool alone serves no request"
        if pooled
        else "",
    )


def _par(d: Deployment) -> str:
    """'tp8', or 'tp8 pp2' / 'tp1 ep16 dp16' for multi-node and MoE layouts."""
    extra = "".join(
        f" {k}{v}" for k, v in (("pp", d.pp), ("ep", d.ep), ("dp", d.dp_attention)) if v > 1
    )
    return f"tp{d.tp}{extra}"


def fleet_chart(result: Plan) -> Chart:
    """The steady fleet: GPUs of each deployment, $/h in the hover text."""
    lines = result.fleet.deployments
    labels = [f"{d.gpu} {_par(d)} {d.quant} b{d.batch}" for d in lines]
    series = tuple(
        Series(
            gpu,
            [lab for lab, d in zip(labels, lines, strict=True) if d.gpu == gpu],
            [d.gpus for d in lines if d.gpu == gpu],
            [
                f"{d.replicas} replica{'' if d.replicas == 1 else 's'}, "
                f"${d.cost_per_hour_usd:,.2f}/h"
                for d in lines
                if d.gpu == gpu
            ],
        )
        for gpu in sorted({d.gpu for d in lines})
    )
    return Chart(
        "fleet",
        "Fleet composition: GPUs per deployment",
        "stacked_bar",
        "deployment",
        "GPUs",
        series,
        note="" if lines else "no fleet: the plan is empty",
    )


def demand_chart(result: Plan) -> Chart:
    """Demand against capacity: hour by hour for the first block of a plan over time, else
    peak demand against the fleet's capacity per deployment."""
    if result.over_time is None:
        demand = result.total_requests_per_s
        lines = result.fleet.deployments
        series = (
            # one bar of demand beside the capacities stacked (the demand's bar was "fleet")
            Series("demand at peak", ["peak demand"], [demand]),
            *(
                Series(f"{d.gpu} {_par(d)} {d.quant}{_role(d)}", *_capacity_bars(d, lines))
                for d in lines
            ),
        )
        return Chart(
            "demand",
            "Peak demand vs the fleet's capacity at planned utilisation",
            "stacked_bar",
            "",
            "requests/s",
            series,
        )
    tp = result.over_time
    hours = list(range(len(tp.profile)))
    demand = (tp.profile * result.total_requests_per_s).tolist()
    capacity = slot_capacity(result)[tp.slots.hour_slot].tolist()
    series = (
        Series("demand", hours, demand, style="step", main=True),
        Series("fleet capacity (first block)", hours, capacity, style="step"),
    )
    return Chart(
        "demand",
        "Demand vs capacity over the day (first block of months)",
        "line",
        "hour",
        "requests/s",
        series,
    )


def _role(d: Deployment) -> str:
    """' prefill' / ' decode' for a pool's line, '' for an aggregated one."""
    return "" if d.role == "aggregated" else f" {d.role}"


def _capacity_bars(d: Deployment, lines: tuple[Deployment, ...]) -> tuple[list, list]:
    """Where a line's capacity stacks: one 'fleet capacity' bar, or with prefill/decode
    pools one bar per role (a request needs both, so stacking the pools together doubled
    the fleet), an aggregated line counting in both."""
    if all(x.role == "aggregated" for x in lines):
        return ["fleet capacity"], [d.capacity_requests_per_s]
    roles = ("prefill", "decode") if d.role == "aggregated" else (d.role,)
    return [f"{r} capacity" for r in roles], [d.capacity_requests_per_s] * len(roles)


def slot_capacity(result: Plan) -> np.ndarray:
    """Requests/s the first block's fleet carries in each slot at planned utilisation
    (capacity weighted by the class mix; spot replicas net of pre-emption)."""
    tp = result.over_time
    assert tp is not None
    problem, sol = tp.problem, tp.solution
    weights = problem.demand[:, 0] / problem.demand[:, 0].sum()
    per_replica = problem.capacity @ weights
    keep = 1.0 - problem.preemption_overhead
    n_slots = len(tp.slots.share)
    return np.array(
        [
            float((sol.replicas[:, p] + keep * sol.spot_replicas[:, p]) @ per_replica)
            for p in range(n_slots)
        ]
    )


TIERS = (
    ("reserved_usd", "reserved"),
    ("owned_usd", "owned"),
    ("on_demand_usd", "on-demand"),
    ("spot_usd", "spot"),
)


def tier_chart(result: Plan) -> Chart:
    """Cost by tier month by month for a plan over time; else the steady fleet's monthly
    cost by GPU type at the scenario's one tier."""
    if result.over_time is None:
        by_gpu: dict[str, float] = {}
        for d in result.fleet.deployments:
            by_gpu[d.gpu] = by_gpu.get(d.gpu, 0.0) + d.cost_per_hour_usd * HOURS_PER_MONTH
        series = tuple(Series(g, ["steady fleet"], [c]) for g, c in sorted(by_gpu.items()))
        return Chart(
            "tiers",
            "Monthly cost by GPU type (one pricing tier)",
            "stacked_bar",
            "",
            "$ per month",
            series,
        )
    monthly = result.over_time.monthly
    months = [m.month for m in monthly]
    series = tuple(
        Series(name, months, [float(getattr(m, col)) for m in monthly])
        for col, name in TIERS
        if sum(float(getattr(m, col)) for m in monthly) > 0
    )
    return Chart(
        "tiers",
        "Plan over time: cost by tier, month by month",
        "stacked_bar",
        "month",
        "$ per month",
        series,
    )


def break_even_chart(result: Plan, analysis: BuildVsBuy | None) -> Chart | None:
    """Monthly cost of self-hosting and of every API against peak demand, as the workbook
    and the PNG draw it (#13: the title spoke of every API's crossing while the chart drew
    only the cheapest API's line)."""
    if analysis is None or analysis.curves is None or not result.api_quotes:
        return None
    volume, own, api = analysis.curves
    best = result.api_quotes[0]
    apis = analysis.api_curves or {f"{best.provider} {best.provider_model_id}": api}
    series = (
        Series(
            analysis.self_label,
            volume.tolist(),
            own.tolist(),
            style="step" if analysis.stepwise else "",
            main=True,
        ),
        *(Series(f"API: {label}", volume.tolist(), line.tolist()) for label, line in apis.items()),
    )
    return Chart(
        "breakeven",
        analysis.chart_title,
        "line",
        "peak requests/s",
        "$ per month",
        series,
        x_log=True,
        y_log=True,
        x_lines=((result.total_requests_per_s, "this scenario"),),
    )


def fleet_table(result: Plan) -> Table:
    """The fleet's lines."""
    rows = tuple(
        (
            d.gpu,
            d.tp,
            d.quant,
            d.kv_dtype,
            d.batch,
            d.replicas,
            d.gpus,
            d.cost_per_hour_usd,
            d.tpot_ms,
            d.ttft_ms,
            d.role,
        )
        for d in result.fleet.deployments
    )
    return Table(
        "The fleet",
        (
            *("GPU", "TP", "quant", "KV", "batch", "replicas", "GPUs", "$/h", "TPOT ms"),
            *("TTFT ms", "role"),  # role: aggregated, prefill or decode pool (issue #11)
        ),
        rows,
    )


# ---- a sweep -----------------------------------------------------------------------------


def sweep_report(result: SweepResult) -> Report:
    """The sweep's results per input, the distribution (Monte Carlo) and the tornado."""
    table = result.table
    ok = planned(table)
    facts: tuple[tuple[str, Any], ...] = (
        ("points", f"{len(table)} of {result.points_total}"),
        ("planned", len(ok)),
        ("infeasible or failed", len(table) - len(ok)),
        ("ran on", result.runner),
        ("seconds", result.seconds),
        ("points per second", result.points_per_second),
        ("cost shown", result.metric),
    ) + ((("seed", str(result.seed)),) if result.seed is not None else ())
    varied = [k for k in result.keys if table[k].astype(str).nunique() > 1]
    charts = [results_chart(result, key) for key in varied]
    if result.mode == "monte_carlo" and len(ok):
        charts.append(distribution_chart(result))
    tornado = tornado_chart(result)
    if tornado is not None:
        charts.append(tornado)
    stopped = ("interrupted: the table holds the finished points only",)
    notes: tuple[str, ...] = (*(stopped if result.interrupted else ()), *result.notes)
    return Report(
        title=f"{result.scenario_name}: {'Monte Carlo' if result.mode == 'monte_carlo' else 'grid'}"
        " sweep",
        subtitle=", ".join(result.keys),
        facts=facts,
        charts=tuple(charts),
        tables=(summary_table(result), points_table(result)),
        notes=notes,
    )


def _point_text(row: pd.Series, keys: tuple[str, ...]) -> str:
    return f"point {int(row['point'])}: " + ", ".join(f"{k}={row[k]}" for k in keys)


def results_chart(result: SweepResult, key: str) -> Chart:
    """The cost of every planned point against one varied input (hover: all inputs)."""
    ok = planned(result.table)
    ok = ok[ok[result.metric].notna().to_numpy()]
    x = [v if isinstance(v, int | float) else str(v) for v in ok[key].astype(object)]
    text = [_point_text(r, result.keys) for _, r in ok.iterrows()]
    failed = len(result.table) - len(ok)
    note = f"{failed} point(s) infeasible or failed: not drawn" if failed else ""
    return Chart(
        f"sweep-{_slug(key)}",
        f"{result.metric} against {key}",
        "scatter",
        key,
        result.metric,
        (Series("planned points", x, ok[result.metric].tolist(), text),),
        note=note,
    )


def _slug(key: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in key)


def distribution_chart(result: SweepResult) -> Chart:
    """A histogram of the cost over the samples with P10/P50/P90 lines."""
    ok = planned(result.table)
    values = ok[result.metric].dropna().astype(float)
    stats = result.summary.set_index("metric")
    lines: tuple[tuple[float, str], ...] = ()
    if result.metric in stats.index:
        s = stats.loc[result.metric]
        lines = ((s["p10"], "P10"), (s["p50"], "P50"), (s["p90"], "P90"))
    return Chart(
        "distribution",
        f"Distribution of {result.metric} over the samples",
        "histogram",
        result.metric,
        "samples",
        (Series("samples", values.tolist(), []),),
        x_lines=lines,
    )


def tornado_chart(result: SweepResult) -> Chart | None:
    """Which input moves the cost most: for each, the cost at its low and high setting."""
    t = result.tornado
    if t is None or not t.bars:
        return None
    bars = list(reversed(t.bars))  # widest on top
    keys = [b.key for b in bars]
    finite = np.isfinite(t.baseline)
    base = t.baseline if finite else float(np.mean([(b.low_cost + b.high_cost) / 2 for b in bars]))
    series = (  # bar lengths from the baseline (the chart's one reference line)
        Series(
            "low setting",
            [b.low_cost - base for b in bars],
            keys,
            [f"{b.low_label}: {b.low_cost:,.0f}" for b in bars],
        ),
        Series(
            "high setting",
            [b.high_cost - base for b in bars],
            keys,
            [f"{b.high_label}: {b.high_cost:,.0f}" for b in bars],
        ),
    )
    label = "baseline" if finite else "mid-point (the baseline point did not plan)"
    return Chart(
        "tornado",
        f"What moves {t.metric} most",
        "tornado",
        t.metric,
        "",
        series,
        x_lines=((base, label),),
        note=t.method,
    )


def summary_table(result: SweepResult) -> Table:
    """P10/P50/P90 (and mean, min, max) of every cost column."""
    s = result.summary
    rows = tuple(tuple(r) for r in s.itertuples(index=False))
    return Table("Summary over the planned points", tuple(s.columns), rows)


POINTS_SHOWN = 500


def points_table(result: SweepResult) -> Table:
    """The first points of the result table: inputs, status, costs, GPUs."""
    frame = result.table
    gpu_cols = [c for c in frame.columns if c.startswith(GPU_PREFIX)]
    cols = [
        "point",
        *result.keys,
        "status",
        "cost_per_month_usd",
        "over_time_per_month_usd",
        "cost_per_1k_output_tokens_usd",
        *gpu_cols,
        "reason",
    ]
    head = frame[cols].head(POINTS_SHOWN).astype(object)
    rows = tuple(tuple(None if pd.isna(v) else v for v in r) for r in head.itertuples(index=False))
    caption = "Points" + (f" (first {POINTS_SHOWN})" if len(frame) > POINTS_SHOWN else "")
    return Table(caption, tuple(cols), rows)
