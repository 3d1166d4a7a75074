"""`write_workbook`: build every sheet in order, then write the file atomically."""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from openpyxl import Workbook
from openpyxl.worksheet.worksheet import Worksheet
from openpyxl.writer.excel import ExcelWriter

from planner.errors import InputError
from planner.planning.breakeven import BuildVsBuy
from planner.planning.plan import Plan
from planner.render.xlsx.analysis import Analysis, indexed
from planner.render.xlsx.assumptions import write_assumptions
from planner.render.xlsx.build_vs_api import write_build_vs_api
from planner.render.xlsx.candidates import CandidateSheet
from planner.render.xlsx.charts import feasible_points, write_charts
from planner.render.xlsx.fleet import write_fleet
from planner.render.xlsx.monthly import write_monthly, write_periods
from planner.render.xlsx.names import (
    ASSUMPTIONS,
    BUILD_VS_API,
    CANDIDATES,
    CHARTS,
    FLEET,
    MONTHLY,
    PERIODS,
    SUMMARY,
)
from planner.render.xlsx.printing import print_setup
from planner.render.xlsx.summary import write_summary
from planner.writing import clean_stale_temps, file_mode

Patch = Callable[[bytes], bytes]  # a saved sheet's XML -> the XML with streamed cells in


def write_workbook(
    plan: Plan,
    path: str | Path,
    analysis: BuildVsBuy | None = None,
) -> Path:
    """Write `plan` to an .xlsx workbook at `path`, atomically; returns the path.

    `analysis` is the break-even analysis of `planning.breakeven.analyse(plan)`; without it
    the Build vs API sheet lists the offerings without break-even volumes or a chart.

    Raises InputError when the folder is missing or not writable, or the target cannot be
    replaced; on any failure an existing file at `path` is left untouched.
    """
    target = Path(path)
    folder = target.parent
    _check_target(target, folder)
    clean_stale_temps(folder)  # left by a run killed mid-write
    mode = file_mode(target)  # keeps an existing file's mode; new: 0666 less the umask
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
            _write_xlsx(plan, handle, indexed(analysis))
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


def _write_xlsx(plan: Plan, handle, analysis: Analysis) -> None:
    """Build the workbook with openpyxl, then stream the candidate rows and the chart tables
    into its XML."""
    wb, patches = _build(plan, analysis)
    buffer = io.BytesIO()
    # stored, not deflated: every part is read back and compressed once below (issue 16:
    # openpyxl's own deflate was undone and redone)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        ExcelWriter(wb, archive).save()
    by_part = {ws.path.lstrip("/"): patch for ws, patch in patches.items()}  # paths set by save
    with (
        zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as zin,
        zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zout,
    ):
        for info in zin.infolist():
            data = zin.read(info.filename)
            patch = by_part.get(info.filename)
            zout.writestr(info.filename, patch(data) if patch else data)


# ---------------------------------------------------------------- the sheets, in order


def _build(plan: Plan, analysis: Analysis) -> tuple[Workbook, dict[Worksheet, Patch]]:
    """Every sheet, and for the sheets with streamed cells what splices those cells into the
    saved XML."""
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
    names, assumed = write_assumptions(wb, assumptions, plan)
    totals = write_fleet(fleet, plan, names.gpu)
    if monthly is not None and periods is not None:
        write_monthly(monthly, plan, names, write_periods(periods, plan, names))
    api_rows = write_build_vs_api(api, plan, totals, names, analysis)
    write_summary(summary, plan, totals, names, api_rows)
    patches: dict[Worksheet, Patch] = {}
    if charts is not None:
        patches[charts] = write_charts(charts, plan, analysis, points, frontier).patch
    cand = CandidateSheet(cand_ws, plan.sheet_candidates)
    patches[cand_ws] = cand.patch
    patches[assumptions] = assumed.patch
    print_setup(wb, cand.ref, {ASSUMPTIONS: (assumed.last_row, assumed.last_column)})
    return wb, patches
