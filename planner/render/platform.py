"""Terminal and JSON output for a multi-model platform plan (issue 12): each model's section
as a single-model plan prints, then the totals. Formats; computes nothing new."""

from __future__ import annotations

from planner.planning.platform import PlatformPlan
from planner.render.json import plan_dict
from planner.render.tables import Col, Layout, money, table, wrap
from planner.render.text import render_plan
from planner.units import HOURS_PER_MONTH

TOTAL_COLUMNS = (
    Col("model"),
    Col("serves"),
    Col("GPUs", "r"),
    Col("replicas", "r"),
    Col("$/month", "r"),
    Col("alone $/month", "r"),
    Col("left after 1 loss", "r"),
)


def _left_after_loss(section) -> str:
    """The weakest share of the model's peak left after losing one replica (n+k plans)."""
    if not section.failover:
        return "-"
    return f"{min(f.peak_share_after_loss for f in section.failover):.0%}"


def _total_rows(pp: PlatformPlan) -> list[tuple]:
    rows = []
    for label, section, alone in zip(
        pp.labels, pp.sections, pp.alone_cost_per_hour_usd, strict=True
    ):
        f = section.fleet
        rows.append(
            (
                label,
                section.model_id,
                f.total_gpus,
                sum(d.replicas for d in f.deployments),
                money(f.monthly_cost_usd, 0),
                money(alone * HOURS_PER_MONTH, 0),
                _left_after_loss(section),
            )
        )
    replicas = sum(d.replicas for s in pp.sections for d in s.fleet.deployments)
    rows.append(
        (
            "total",
            "",
            pp.total_gpus,
            replicas,
            money(pp.monthly_cost_usd, 0),
            money(pp.alone_monthly_total_usd, 0),
            "",
        )
    )
    return rows


def render_platform(pp: PlatformPlan, layout: Layout = Layout()) -> str:
    """Each model's plan, then one table of the models and the platform's total."""
    status = pp.status if pp.status == "optimal" else f"{pp.status} (gap {pp.gap:.1%})"
    out = [
        wrap(
            f"Platform {pp.name}: {len(pp.sections)} models on one fleet  [solver: {status}]",
            layout,
        ),
        "",
    ]
    for label, section in zip(pp.labels, pp.sections, strict=True):
        out += [f"== {label} ==", render_plan(section, layout), ""]
    gpus = ", ".join(f"{n} x {g}" for g, n in pp.gpus_by_type.items())
    out += [
        f"== platform {pp.name}: total ==",
        table(TOTAL_COLUMNS, _total_rows(pp), layout),
        "",
        wrap(
            f"Total: {pp.total_gpus} GPUs ({gpus}), {money(pp.total_cost_per_hour_usd)}/h, "
            f"{money(pp.monthly_cost_usd, 0)}/month",
            layout,
        ),
    ]
    out += [wrap(f"Note: {n}", layout, "  ") for n in pp.notes]
    return "\n".join(out)


def platform_dict(pp: PlatformPlan) -> dict:
    """The platform plan as one JSON object: each model's plan and the totals."""
    models = []
    for label, section, alone in zip(
        pp.labels, pp.sections, pp.alone_cost_per_hour_usd, strict=True
    ):
        models.append(
            {"name": label, "alone_monthly_cost_usd": alone * HOURS_PER_MONTH, **plan_dict(section)}
        )
    return {
        "scenario": pp.name,
        "status": pp.status,
        "gap": pp.gap,
        "models": models,
        "total": {
            "total_cost_per_hour_usd": pp.total_cost_per_hour_usd,
            "monthly_cost_usd": pp.monthly_cost_usd,
            "total_gpus": pp.total_gpus,
            "gpus_by_type": pp.gpus_by_type,
            "alone_monthly_cost_usd": pp.alone_monthly_total_usd,
        },
        "notes": list(pp.notes),
    }
