"""The platform's workbooks (issue 12): one full workbook per model (`write_workbook` of its
section) and one total workbook: a Platform sheet (a row per model, a SUM total row) and a
Lines sheet (every fleet line of every model)."""

from __future__ import annotations

from pathlib import Path

from openpyxl import Workbook

from planner.planning.platform import PlatformPlan
from planner.render.xlsx.workbook import write_workbook
from planner.units import HOURS_PER_MONTH
from planner.writing import write_atomic

PLATFORM_HEADER = (
    "model",
    "model id",
    "GPUs",
    "replicas",
    "$/h",
    "$/month",
    "alone $/month",
    "least peak share left after losing one replica",
)
LINES_HEADER = ("model", "GPU", "tp", "quant", "kv", "batch", "replicas", "GPUs", "$/h", "req/s")


def _platform_sheet(ws, pp: PlatformPlan) -> None:
    """A row per model, then a total row of SUM formulas over the rows above."""
    ws.append(PLATFORM_HEADER)
    for label, s, alone in zip(pp.labels, pp.sections, pp.alone_cost_per_hour_usd, strict=True):
        f = s.fleet
        left = min((x.peak_share_after_loss for x in s.failover), default=None)
        ws.append(
            (
                label,
                s.model_id,
                f.total_gpus,
                sum(d.replicas for d in f.deployments),
                f.total_cost_per_hour_usd,
                f.monthly_cost_usd,
                alone * HOURS_PER_MONTH,
                left,
            )
        )
    last = len(pp.sections) + 1
    ws.append(("total", "", *[f"=SUM({c}2:{c}{last})" for c in "CDEFG"], None))
    ws.append(())
    ws.append(("solver status", pp.status))
    for note in pp.notes:
        ws.append(("note", note))


def _lines_sheet(ws, pp: PlatformPlan) -> None:
    ws.append(LINES_HEADER)
    for label, s in zip(pp.labels, pp.sections, strict=True):
        for d in s.fleet.deployments:
            row = (d.gpu, d.tp, d.quant, d.kv_dtype, d.batch, d.replicas, d.gpus)
            ws.append((label, *row, d.cost_per_hour_usd, d.requests_per_s))


def write_platform_workbooks(pp: PlatformPlan, path: str | Path) -> list[Path]:
    """The total workbook at `path` and one per model beside it (`<stem>-<model>.xlsx`),
    each written atomically; returns the paths written, the total first."""
    target = Path(path)

    def build(tmp: Path) -> None:
        wb = Workbook()
        _platform_sheet(wb.active, pp)
        wb.active.title = "Platform"
        _lines_sheet(wb.create_sheet("Lines"), pp)
        wb.save(tmp)

    written = [write_atomic(target, build, suffix=".xlsx")]
    for label, section in zip(pp.labels, pp.sections, strict=True):
        own = target.with_name(f"{target.stem}-{label}{target.suffix}")
        written.append(write_workbook(section, own))
    return written
