"""The only matplotlib user: charts of a plan (PNG, or PDF/SVG by the file name) for people
who would rather look than read."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from planner.errors import InputError
from planner.planning.breakeven import BuildVsBuy
from planner.planning.plan import Plan
from planner.render.colours import colour
from planner.writing import write_atomic

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plots need matplotlib: pip install -e '.[plot]'") from None
    return plt


FORMATS = ("png", "pdf", "svg")  # what a chart's file name may end in: matplotlib writes each


def chart_format(path: Path, option: str = "--plot") -> str:
    """The format a chart's file name asks for (its extension), checked before any planning:
    a name ending otherwise is an input error (a .pdf was written as PNG bytes)."""
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        allowed = ", ".join(f".{f}" for f in FORMATS)
        got = f"ends in '{path.suffix}'" if path.suffix else "has no extension"
        raise InputError(
            f"{option}: {path} {got}; a chart is written in the format its name ends in, "
            f"one of {allowed}"
        )
    return fmt


def _save(fig, path: Path) -> Path:
    """Write the figure atomically in the format its name ends in, with the mode a plain
    open() would give (planner.writing)."""
    fmt = chart_format(path)
    save = partial(fig.savefig, dpi=120, bbox_inches="tight", format=fmt)
    try:
        return write_atomic(path, save, f".{fmt}")
    finally:
        fig.clf()


def frontier(plan: Plan, path: Path) -> Path:
    """Cost per 1K output tokens against TPOT for every candidate that fits, SLA line drawn."""
    plt = _pyplot()
    rows = plan.candidates
    rows = rows[rows["fits"] & rows["cost_per_1k_output_tokens_usd"].notna()]
    fig, ax = plt.subplots(figsize=(8, 5))
    for k, (gpu, grp) in enumerate(rows.groupby("gpu", observed=True)):
        ax.scatter(
            grp["tpot_ms"],
            grp["cost_per_1k_output_tokens_usd"],
            s=8,
            label=gpu,
            alpha=0.6,
            color=f"#{colour(k)}",
            marker=MARKERS[(k // 10) % len(MARKERS)],
        )
    for c in plan.classes:
        if c.tpot_ms:
            ax.axvline(c.tpot_ms, color="red", lw=1, ls="--")
            ax.text(
                c.tpot_ms,
                ax.get_ylim()[1] if rows.empty else rows["cost_per_1k_output_tokens_usd"].max(),
                f" SLA {c.name}",
                color="red",
                va="top",
                fontsize=8,
            )
    chosen = zip(plan.fleet.deployments, plan.deployment_cost_per_1k_output_tokens_usd, strict=True)
    for d, cost in chosen:
        ax.scatter(
            [d.tpot_ms],
            [cost],
            marker="*",
            s=200,
            color="black",
            zorder=5,
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="TPOT (ms)",
        ylabel="$ per 1K output tokens",
        title=f"{plan.scenario_name}: cost vs TPOT of every candidate (star: chosen)",
    )
    ax.legend(fontsize=7, ncol=2, markerscale=2)
    return _save(fig, path)


def demand_and_fleet(plan: Plan, path: Path) -> Path:
    """The hourly demand profile (first month) with the fleet's capacity by tier over it."""
    plt = _pyplot()
    tp = plan.over_time
    assert tp is not None
    hours = np.arange(len(tp.profile))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.step(hours, tp.hourly_demand, where="post", label="demand (req/s)", color="black")
    ax.step(
        hours,
        tp.slot_capacity_requests_per_s[tp.slots.hour_slot],
        where="post",
        label="fleet capacity (req/s)",
        color="tab:blue",
    )
    ax.set(
        xlabel="hour",
        ylabel="requests/s",
        title=f"{plan.scenario_name}: demand and planned capacity, first months",
    )
    ax.legend()
    return _save(fig, path)


def break_even_all(analysis: BuildVsBuy, current: float, path: Path) -> Path:
    """Monthly cost of self-hosting and of every API against peak demand, titled by whether
    the lines cross in the range shown."""
    plt = _pyplot()
    assert analysis.curves is not None
    volume, own, _ = analysis.curves
    fig, ax = plt.subplots(figsize=(9, 6))
    draw = partial(ax.step, where="post") if analysis.stepwise else ax.plot
    draw(volume, own, color="black", lw=2, label=analysis.self_label)
    for k, (label, api) in enumerate(analysis.api_curves.items()):
        ax.plot(volume, api, color=f"#{colour(k)}", lw=1.2, label=f"API: {label}")
    ax.axvline(current, color="gray", ls="--", lw=1)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="peak requests/s",
        ylabel="$ per month",
        title=analysis.chart_title,
    )
    # the label sits at the top in axes coordinates (it was placed at the data's top before
    # the log scale and hid under the legend); the legend goes below the axes, where a dozen
    # APIs' lines cannot run under it
    ax.text(
        current,
        0.98,
        " this scenario",
        va="top",
        fontsize=8,
        color="gray",
        transform=ax.get_xaxis_transform(),
    )
    _plain_log_ticks(ax.xaxis, ax.get_xlim(), "{:g}")
    _plain_log_ticks(ax.yaxis, ax.get_ylim(), "${:,.0f}")
    ax.legend(fontsize=6, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    return _save(fig, path)


def _plain_log_ticks(axis, limits: tuple[float, float], form: str) -> None:
    """Tick labels of a log axis as plain numbers (2, 10, $5,000), not 2 x 10^0; over less than
    2.5 decades also at the 2s and 5s between the powers of ten, which matplotlib otherwise
    labels as overlapping '3 x 10^0 4 x 10^0'."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: form.format(v)))
    lo, hi = limits
    if lo > 0 and np.log10(hi / lo) < 2.5:
        axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        axis.set_minor_formatter(FuncFormatter(lambda v, _: form.format(v)))
    else:
        axis.set_minor_formatter(NullFormatter())
