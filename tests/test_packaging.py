"""The package as users get it: a wheel built from this checkout, installed (not editable) in
a fresh virtual environment, plans a scenario from a folder outside the repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml
from test_golden import differences

ROOT = Path(__file__).resolve().parent.parent
# everything the build reads; building a copy keeps build/ and *.egg-info out of the checkout
# and shows that nothing else is needed
BUILD_INPUTS = ("pyproject.toml", "README.md", "planner", "catalogs", "data")
SHIPPED_GPUS = 24


def run(*args: str | Path, cwd: Path | None = None, env: dict | None = None) -> str:
    """Run a command; on failure, fail the test with its output."""
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_the_declared_packages_are_every_package_of_planner() -> None:
    """pyproject lists packages by hand (package-dir cannot be combined with find): a new
    sub-package missing from the list would be missing from the wheel."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "planner").rglob("__init__.py")
    }
    mapped = {"planner.catalogs": "catalogs", "planner.data": "data"}
    assert set(config["setuptools"]["packages"]) == on_disk | set(mapped)
    assert config["setuptools"]["package-dir"] == mapped


def build_wheel(tmp_path: Path) -> Path:
    """A wheel of a copy of the checkout, built offline with this environment's setuptools."""
    src = tmp_path / "src"
    src.mkdir()
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, src / name)
    wheels = tmp_path / "wheels"
    pip = (sys.executable, "-m", "pip")
    run(*pip, "wheel", "--no-deps", "--no-build-isolation", "--check-build-dependencies",
        "-q", "-w", wheels, src)  # fmt: skip
    (wheel,) = wheels.glob("planner-*.whl")
    return wheel


def fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    """A new venv with the wheel installed; its dependencies come from this environment by a
    .pth line added after the install. A .pth path line runs no .pth file of the folder it
    adds, so this checkout's editable-install finder stays out."""
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
        "-q", wheel)  # fmt: skip
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").strip())
    deps = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "zz-planner-test-deps.pth").write_text("\n".join(deps) + "\n", encoding="utf-8")
    return venv


@pytest.mark.slow
def test_a_built_wheel_installed_elsewhere_plans_a_scenario(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in (ROOT / "catalogs").glob("*/*.yaml"):
        assert f"planner/catalogs/{path.parent.name}/{path.name}" in names
    assert "planner/data/calibration/measured_public.csv" in names
    assert "planner/data/calibration/SOURCES.md" in names

    venv = fresh_venv(tmp_path, wheel)
    work = tmp_path / "work"  # outside the repository, no catalogs/ in it
    work.mkdir()
    shutil.copy(ROOT / "scenarios" / "chatbot.yaml", work / "chatbot.yaml")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PLANNER_CATALOG_DIR")}
    where = run(
        venv / "bin" / "python",
        "-c",
        "import planner, planner.catalogs, planner.calibration as c; print(planner.__file__, "
        "planner.catalogs.__file__, c.DEFAULT_CSV, c.DEFAULT_CSV.is_file(), sep='\\n')",
        cwd=work,
        env=env,
    ).splitlines()
    assert all(Path(p).is_relative_to(venv) for p in where[:3]) and where[3] == "True", where
    # a checkout put first on the path without installing it reads its own folders
    source = {**env, "PYTHONPATH": str(ROOT)}
    code = "import planner.calibration as c, planner.inputs.catalog as k; "
    code += "print(c.DEFAULT_CSV, k.DEFAULT_CATALOG_DIR, sep='\\n')"
    found = run(venv / "bin" / "python", "-c", code, cwd=work, env=source).splitlines()
    assert [Path(p) for p in found] == [
        ROOT / "data" / "calibration" / "measured_public.csv",
        ROOT / "catalogs",
    ]

    planner = venv / "bin" / "planner"
    plan = json.loads(
        run(planner, "solve", "chatbot.yaml", "--no-export", "--json", cwd=work, env=env)
    )
    golden = json.loads((ROOT / "tests" / "golden" / "chatbot.json").read_text(encoding="utf-8"))
    assert not differences(golden, plan)  # the same plan as the checkout's golden file
    gpus = json.loads(run(planner, "catalog", "gpus", "--json", cwd=work, env=env))["gpus"]
    assert len(gpus) == SHIPPED_GPUS

    # a user folder adds to the installed catalog
    doc = yaml.safe_load((ROOT / "catalogs" / "gpus" / "h100-sxm.yaml").read_text("utf-8"))
    (work / "mine" / "gpus").mkdir(parents=True)
    (work / "mine" / "gpus" / "my-gpu.yaml").write_text(yaml.safe_dump({**doc, "id": "my-gpu"}))
    env["PLANNER_CATALOG_DIR"] = "mine"
    gpus = json.loads(run(planner, "catalog", "gpus", "--json", cwd=work, env=env))["gpus"]
    assert len(gpus) == SHIPPED_GPUS + 1
