"""Atomic writes: the whole new file or the old one, with the mode a plain open() gives."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from planner.errors import InputError
from planner.writing import file_mode, write_atomic, write_text_atomic


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_gets_0666_less_the_umask_not_mkstemps_0600(tmp_path, umask_022):
    target = write_text_atomic(tmp_path / "new.yaml", "a: 1\n")
    assert target.read_text(encoding="utf-8") == "a: 1\n"
    assert mode(target) == umask_022 == 0o644
    os.umask(0o027)
    assert mode(write_text_atomic(tmp_path / "group.yaml", "b: 2\n")) == 0o640


@pytest.mark.parametrize("kept", [0o600, 0o664, 0o640])
def test_replacing_a_file_keeps_its_mode(tmp_path, umask_022, kept):
    target = tmp_path / "old.yaml"
    target.write_text("old\n")
    target.chmod(kept)
    assert file_mode(target) == kept
    write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n" and mode(target) == kept


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "old.yaml"
    target.write_text("old\n")

    def boom(tmp: Path) -> None:
        tmp.write_text("half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        write_atomic(target, boom)
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["old.yaml"]


def test_a_missing_folder_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        write_text_atomic(tmp_path / "nowhere" / "x.yaml", "x")


@pytest.mark.slow  # imports matplotlib and draws a chart twice
def test_png_charts_get_normal_permissions_and_replace_keeping_the_mode(tmp_path, umask_022):
    """render.png saves through write_atomic: a new chart is 0644 here, a replaced one keeps
    its mode."""
    pytest.importorskip("matplotlib")
    import numpy as np

    from planner.planning.breakeven import BuildVsBuy
    from planner.render import png

    volume = np.array([1.0, 10.0, 100.0])
    analysis = BuildVsBuy([], (volume, volume * 50, volume * 80), api_curves={"an API": volume})
    chart = png.break_even_all(analysis, 10.0, tmp_path / "break-even.png")
    assert chart.read_bytes()[:4] == b"\x89PNG" and mode(chart) == umask_022
    chart.chmod(0o600)
    png.break_even_all(analysis, 10.0, chart)
    assert mode(chart) == 0o600 and sorted(os.listdir(tmp_path)) == ["break-even.png"]
