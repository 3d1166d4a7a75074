"""`write_workbook`: build every sheet in order, then write the file atomically."""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from openpyxl import Workbook

from planner.errors import InputError
from planner.export.analysis import Analysis, analyse
from planner.export.assumptions import write_assumptions
from planner.export.build_vs_api import write_build_vs_api
from planner.export.candidates import CandidateSheet
from planner.export.charts import feasible_points, write_charts
from planner.export.fleet import write_fleet
from planner.export.monthly import write_monthly, write_periods
from planner.export.names import (
    ASSUMPTIONS,
    BUILD_VS_API,
    CANDIDATES,
    CHARTS,
    FLEET,
    MONTHLY,
    PERIODS,
    SUMMARY,
)
from planner.export.summary import write_summary
from planner.schema.plan import Plan


def write_workbook(
    plan: Plan,
    path: str | Path,
    *,
    comparisons: Sequence[Any] | None = None,
    curves: Sequence[np.ndarray] | None = None,
) -> Path:
    """Write `plan` to an .xlsx workbook at `path`, atomically; returns the path.

    `comparisons` (`buildvsbuy.compare(plan, plan.problem, plan.average_demand_factor)`)
    and `curves` (`buildvsbuy.cost_curves(plan.problem, plan, plan.cheapest_api,
    plan.average_demand_factor)`) are computed here when not given and the plan carries
    its fleet problem and API quotes; they re-solve the fleet MIP at many volumes and take
    most of the time (0.3-2.5 s), so a caller that has them should pass them. Pass `[]`
    and `()` to leave the break-even columns and chart out.

    Raises InputError when the folder is missing or not writable, or the target cannot be
    replaced; on any failure an existing file at `path` is left untouched.
    """
    target = Path(path)
    folder = target.parent
    _check_target(target, folder)
    mode = _file_mode(target)
    try:
        # closed by the `with handle:` below; kept on disk for os.replace
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115
            dir=folder, prefix=f".{target.stem}.", suffix=".xlsx", delete=False
        )
    except OSError as err:
        raise InputError(
            f"cannot write {target}: folder {folder} is not writable ({_reason(err)})"
        ) from err
    tmp = Path(handle.name)
    try:
        with handle:
            _write_xlsx(plan, handle, analyse(plan, comparisons, curves))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        try:
            os.replace(tmp, target)
        except OSError as err:
            raise InputError(
                f"cannot write {target}: the existing file could not be replaced "
                f"({_reason(err)}); is it open in another program?"
            ) from err
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise InputError(f"cannot write {target}: {_reason(err)}") from err
        raise
    return target


# ---------------------------------------------------------------- file handling


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


def _check_target(target: Path, folder: Path) -> None:
    if not folder.is_dir():
        raise InputError(
            f"cannot write {target}: folder {folder} does not exist; "
            "create it or pass -o with another path"
        )
    if target.is_dir():
        raise InputError(f"cannot write {target}: it is a folder; give a file name ending .xlsx")
    if target.suffix.lower() != ".xlsx":
        raise InputError(f"cannot write {target}: an Excel workbook needs the .xlsx extension")


def _file_mode(target: Path) -> int:
    """Keep an existing file's permissions; a new one gets 0666 less the umask."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _write_xlsx(plan: Plan, handle, analysis: Analysis) -> None:
    """Build the workbook with openpyxl, then stream the candidate rows into its XML."""
    wb, cand = _build(plan, analysis)
    buffer = io.BytesIO()
    wb.save(buffer)
    sheet_xml = cand.sheet.path.lstrip("/")
    with (
        zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as zin,
        zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zout,
    ):
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename == sheet_xml:
                data = cand.patch(data)
            zout.writestr(info.filename, data)


# ---------------------------------------------------------------- the sheets, in order


def _build(plan: Plan, analysis: Analysis) -> tuple[Workbook, CandidateSheet]:
    wb = Workbook()
    summary = wb.active
    summary.title = SUMMARY
    fleet = wb.create_sheet(FLEET)
    over_time = plan.over_time is not None
    monthly = wb.create_sheet(MONTHLY) if over_time else None
    periods = wb.create_sheet(PERIODS) if over_time else None
    cand_ws = wb.create_sheet(CANDIDATES)
    api = wb.create_sheet(BUILD_VS_API)
    points, frontier = feasible_points(plan)
    charted = len(points) > 0 or (analysis.curves is not None and plan.cheapest_api is not None)
    charts = wb.create_sheet(CHARTS) if charted else None
    assumptions = wb.create_sheet(ASSUMPTIONS)
    names = write_assumptions(wb, assumptions, plan)
    totals = write_fleet(fleet, plan, names.gpu)
    if monthly is not None and periods is not None:
        write_monthly(monthly, plan, names, write_periods(periods, plan, names))
    api_rows = write_build_vs_api(api, plan, totals, names, analysis)
    write_summary(summary, plan, totals, names.gpu, api_rows)
    if charts is not None:
        write_charts(charts, plan, analysis, points, frontier)
    cand = CandidateSheet(cand_ws, plan.candidates)
    return wb, cand
