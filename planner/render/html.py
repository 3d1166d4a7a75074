"""The only plotly user: a report (planning.report) as one self-contained HTML page.

plotly.js is inlined once (`include_plotlyjs=True` on the first chart), so the file opens
with no network; charts are SVG, responsive on a laptop, and a print stylesheet lays them
one per block on paper. Formats the report's series; computes nothing.
"""

from __future__ import annotations

import html
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from planner.errors import InputError
from planner.planning.report import Chart, Money, Report, Series, Table
from planner.render.colours import colour
from planner.render.tables import per_token_money
from planner.writing import write_text_atomic

CONFIG = {"responsive": True, "displaylogo": False}
CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
       max-width: 1200px; padding: 1rem 1.5rem; color: #222; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.subtitle { color: #666; margin-top: 0; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(210px, 1fr));
         gap: 0.5rem; margin: 1rem 0; }
.fact { background: #f5f7fa; border-radius: 6px; padding: 0.5rem 0.7rem; }
.fact b { display: block; font-size: 1.05rem; } .fact span { color: #555; font-size: 0.8rem; }
.chart { border: 1px solid #e3e6ea; border-radius: 6px; margin: 1rem 0; padding: 0.5rem; }
.chart .plot { width: 100%; height: 440px; }
.note { color: #666; font-size: 0.85rem; margin: 0.2rem 0.5rem; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0; }
th, td { border-bottom: 1px solid #e3e6ea; padding: 0.25rem 0.6rem; text-align: right; }
th { background: #f5f7fa; } td.text, th.text { text-align: left; }
.scroll { max-height: 480px; overflow: auto; }
footer { color: #888; font-size: 0.8rem; margin-top: 2rem; }
@media print {
  body { max-width: none; padding: 0; }
  .chart { break-inside: avoid; page-break-inside: avoid; border: none; }
  .chart .plot { height: 380px; }
  .scroll { max-height: none; overflow: visible; }
  .modebar-container { display: none !important; }
  h2 { break-after: avoid; }
}
"""


def _plotly():
    try:
        import plotly.graph_objects as go
        import plotly.io as pio
    except ImportError:
        raise InputError("--html needs plotly: pip install -e '.[html]'") from None
    return go, pio


def _trace(go: Any, chart: Chart, s: Series, i: int) -> Any:
    """One series as a plotly trace of the chart's kind."""
    color = "#000000" if s.style == "star" else f"#{colour(i)}"  # never repeats (#13)
    hover = s.text or None
    if chart.kind == "scatter":
        marker = (
            {"size": 14, "symbol": "star", "color": color}
            if s.style == "star"
            else {"size": 6, "color": color, "opacity": 0.6}
        )
        return go.Scatter(x=s.x, y=s.y, mode="markers", name=s.name, text=hover, marker=marker)
    if chart.kind == "line":
        shape = "hv" if s.style == "step" else "linear"
        line = {"shape": shape, "color": "#000000", "width": 3} if s.main else {}
        return go.Scatter(
            x=s.x,
            y=s.y,
            mode="lines",
            name=s.name,
            text=hover,
            line={"shape": shape, "color": color, **line},
        )
    if chart.kind == "histogram":
        return go.Histogram(x=s.x, name=s.name, marker={"color": color}, nbinsx=40)
    if chart.kind == "tornado":
        base = chart.x_lines[0][0] if chart.x_lines else 0.0
        return go.Bar(
            x=s.x,
            y=s.y,
            base=base,
            orientation="h",
            name=s.name,
            text=hover,
            marker={"color": color},
            hovertemplate="%{text}<extra>%{y}</extra>",
        )
    return go.Bar(
        x=s.x,
        y=s.y,
        name=s.name,
        text=hover,
        marker={"color": color},
        hovertemplate="%{x}: %{y}<br>%{text}<extra>%{fullData.name}</extra>" if hover else None,
    )


def figure(chart: Chart) -> Any:
    """A chart as a plotly figure: its traces, axes, reference lines."""
    go, _ = _plotly()
    fig = go.Figure([_trace(go, chart, s, i) for i, s in enumerate(chart.series)])
    fig.update_layout(
        title={"text": chart.title, "x": 0.01},
        xaxis_title=chart.x_title,
        yaxis_title=chart.y_title,
        template="plotly_white",
        margin={"l": 70, "r": 20, "t": 60, "b": 60},
        legend={"orientation": "v"},
        barmode="relative" if chart.kind == "tornado" else "stack",
    )
    if chart.kind == "tornado":
        fig.update_layout(barmode="overlay")
    if chart.x_log:
        fig.update_xaxes(type="log")
    if chart.y_log:
        fig.update_yaxes(type="log")
    for x, label in chart.x_lines:
        if isinstance(x, int | float) and math.isfinite(x):
            fig.add_shape(
                type="line",
                x0=x,
                x1=x,
                y0=0,
                y1=1,
                xref="x",
                yref="paper",
                line={"color": "red", "dash": "dash", "width": 1},
            )
            fig.add_annotation(
                x=_axis_x(x, chart.x_log),
                y=1,
                xref="x",
                yref="paper",
                text=label,
                showarrow=False,
                yanchor="bottom",
                font={"color": "red", "size": 11},
            )
    return fig


def _axis_x(x: float, log: bool) -> float:
    """Annotations on a log axis are placed by log10 of the value."""
    return math.log10(x) if log and x > 0 else x


def _money(usd: float) -> str:
    """Dollars as finance reads them: whole dollars from $100, cents below, and three
    significant digits under a cent ($0.000936 per 1K tokens)."""
    if not math.isfinite(usd):
        return ""
    if abs(usd) >= 100:
        return f"${usd:,.0f}"
    if abs(usd) >= 0.01 or usd == 0:
        return f"${usd:,.2f}"
    return per_token_money(usd)


def _format(value: Any) -> str:
    """A cell or fact: numbers with sensible precision, anything else as text."""
    if value is None:
        return ""
    if isinstance(value, Money):
        return _money(value.usd)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.2f}" if abs(value) >= 10 else f"{value:.4g}"
    return str(value)


def _table_html(t: Table) -> str:
    head = "".join(
        f'<th class="{_align(t, i)}">{html.escape(h)}</th>' for i, h in enumerate(t.headers)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="{_align(t, i)}">{html.escape(_format(v))}</td>' for i, v in enumerate(r)
        )
        + "</tr>"
        for r in t.rows
    )
    return (
        f'<h2>{html.escape(t.caption)}</h2><div class="scroll"><table><thead><tr>{head}'
        f"</tr></thead><tbody>{body}</tbody></table></div>"
    )


def _align(t: Table, i: int) -> str:
    numeric = all(isinstance(r[i], int | float) or r[i] is None for r in t.rows)
    return "" if numeric and t.rows else "text"


def render_html(report: Report) -> str:
    """The whole page: facts, every chart (plotly.js inlined once), tables, notes."""
    _, pio = _plotly()
    charts = []
    for i, chart in enumerate(report.charts):
        div = pio.to_html(
            figure(chart),
            full_html=False,
            include_plotlyjs=i == 0,
            config=CONFIG,
            div_id=f"chart-{chart.id}",
            default_width="100%",
            default_height="440px",
        )
        note = f'<p class="note">{html.escape(chart.note)}</p>' if chart.note else ""
        charts.append(f'<section class="chart" data-chart="{chart.id}">{div}{note}</section>')
    facts = "".join(
        f'<div class="fact"><b>{html.escape(_format(v))}</b><span>{html.escape(k)}</span></div>'
        for k, v in report.facts
    )
    tables = "".join(_table_html(t) for t in report.tables)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in report.notes)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(report.title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{html.escape(report.title)}</h1>"
        f'<p class="subtitle">{html.escape(report.subtitle)}</p>'
        f'<div class="facts">{facts}</div>{"".join(charts)}{tables}'
        + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
        + f"<footer>planner report, written {stamp}; self-contained, no network needed."
        "</footer></body></html>\n"
    )


def write_html(report: Report, path: str | Path) -> Path:
    """Write the report page atomically."""
    return write_text_atomic(path, render_html(report))
