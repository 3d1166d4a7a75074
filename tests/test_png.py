"""Charts: how their axes read, and the format each file is written in (the charts
themselves are written end to end in test_cli)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.cli import cli
from planner.render import png

CHATBOT = Path(__file__).resolve().parent.parent / "scenarios" / "chatbot.yaml"

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


@pytest.mark.parametrize(
    ("name", "magic"), [("x.pdf", b"%PDF"), ("x.svg", b"<?xml"), ("x.PNG", b"\x89PNG")]
)
def test_compare_writes_the_format_its_plot_name_ends_in(tmp_path, name, magic):
    """compare --plot out/x.pdf wrote PNG bytes under that name; each file now starts with
    its own format's signature."""
    target = tmp_path / name
    res = CliRunner().invoke(cli, ["compare", str(CHATBOT), "--plot", str(target)], obj={})
    assert res.exit_code == 0, res.output
    assert target.read_bytes().startswith(magic)


@pytest.mark.parametrize("name", ["x.jpg", "x"])
def test_compare_refuses_a_plot_name_it_cannot_write(tmp_path, name):
    """Any other extension (or none) exits 2 before planning, naming the allowed ones."""
    target = tmp_path / name
    res = CliRunner().invoke(cli, ["compare", str(CHATBOT), "--plot", str(target)], obj={})
    assert res.exit_code == 2, res.output
    assert f"--plot: {target} " in res.output and "one of .png, .pdf, .svg" in res.output
    assert not target.exists()
