"""PNG charts: how their axes read (the charts themselves are written end to end in test_cli)."""

from __future__ import annotations

import pytest

from planner.render import png

plt = pytest.importorskip("matplotlib.pyplot")


def _labels(lo: float, hi: float, form: str) -> list[str]:
    fig, ax = plt.subplots()
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    png._plain_log_ticks(ax.xaxis, ax.get_xlim(), form)
    fig.canvas.draw()
    ticks = [*ax.get_xticklabels(), *ax.get_xticklabels(minor=True)]
    plt.close(fig)
    shown = [t for t in ticks if lo <= t.get_position()[0] <= hi]  # inside the axis
    return sorted((t.get_text() for t in shown if t.get_text()), key=len)


def test_a_narrow_log_axis_reads_2_5_10_not_powers_of_ten():
    """1.5-50 req/s: matplotlib labelled the minor ticks '2 x 10^0 3 x 10^0 4 x 10^0', which
    ran into each other; the labels are plain numbers at 2, 5, 10, 20."""
    labels = _labels(1.5, 50.0, "{:g}")
    assert {"2", "5", "10", "20"} <= set(labels)
    assert not any("times" in t or "^" in t or t == "3" for t in labels)


def test_a_wide_log_axis_labels_its_powers_of_ten_only():
    labels = _labels(200.0, 600_000.0, "${:,.0f}")
    assert labels == ["$1,000", "$10,000", "$100,000"]
