"""The only matplotlib user: PNG charts of a plan for people who would rather look than read."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from planner.errors import InputError
from planner.planning.plan import Plan
from planner.writing import temp_beside


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plots need matplotlib: pip install -e '.[plot]'") from None
    return plt


def _save(fig, path: Path) -> Path:
    """Write the figure atomically: a temporary file in the same folder, renamed into place."""
    fd, tmp = temp_beside(path, ".png")  # stale ones cleaned; OutputError naming the path
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=120, bbox_inches="tight")
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        fig.clf()
    return path


def frontier(plan: Plan, path: Path) -> Path:
    """Cost per 1K output tokens against TPOT for every candidate that fits, SLA line drawn."""
    plt = _pyplot()
    rows = plan.candidates
    rows = rows[rows["fits"] & rows["cost_per_1k_output_tokens_usd"].notna()]
    fig, ax = plt.subplots(figsize=(8, 5))
    for gpu, grp in rows.groupby("gpu"):
        ax.scatter(grp["tpot_ms"], grp["cost_per_1k_output_tokens_usd"], s=8, label=gpu, alpha=0.6)
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
    for d in plan.fleet.deployments:
        ax.scatter(
            [d.tpot_ms],
            [
                d.cost_per_hour_usd
                / max(d.replicas, 1)
                / (
                    3600
                    * max(d.capacity_requests_per_s / d.replicas, 1e-9)
                    * plan.classes[0].output_tokens
                )
                * 1e3
            ],
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
    peak = plan.total_requests_per_s
    hours = np.arange(len(tp.profile))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.step(hours, tp.profile * peak, where="post", label="demand (req/s)", color="black")
    slot_of_hour = tp.slots.hour_slot
    per_slot = tp.periods[tp.periods["months"] == tp.periods["months"].iloc[0]]
    capacity = _slot_capacity(plan, per_slot)
    ax.step(
        hours,
        capacity[slot_of_hour],
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


def _slot_capacity(plan: Plan, per_slot) -> np.ndarray:
    """Requests/s the first block's fleet carries in each slot at planned utilisation
    (capacity weighted by the class mix; spot replicas net of pre-emption)."""
    tp = plan.over_time
    problem, sol = tp.problem, tp.solution
    weights = problem.demand[:, 0] / problem.demand[:, 0].sum()
    per_replica = problem.capacity @ weights
    keep = 1.0 - problem.preemption_overhead
    return np.array(
        [
            float((sol.replicas[:, p] + keep * sol.spot_replicas[:, p]) @ per_replica)
            for p in range(len(per_slot))
        ]
    )


def break_even(
    volume: np.ndarray,
    self_cost: np.ndarray,
    api_cost: np.ndarray,
    label: str,
    current: float,
    path: Path,
) -> Path:
    """Monthly cost of self-hosting and of the API against peak demand."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.step(volume, self_cost, where="post", label="self-hosted (optimal fleet, 24/7)")
    ax.plot(volume, api_cost, label=f"API: {label}")
    ax.axvline(current, color="gray", ls="--", lw=1)
    ax.text(current, ax.get_ylim()[1], " this scenario", va="top", fontsize=8, color="gray")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="peak requests/s",
        ylabel="$ per month",
        title="Build vs buy: where self-hosting becomes cheaper",
    )
    ax.legend()
    return _save(fig, path)
