"""The architecture, tested: one door per third-party tool, dependencies flowing one way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "planner"
README = (PACKAGE.parent / "README.md").read_text()

# the only module allowed to import each tool
DOORS = {
    "pulp": {"fleet"},
    "openpyxl": {"render.xlsx"},
    "click": {"cli"},
    "matplotlib": {"render.png"},
    "plotly": {"render.html"},
    "ray": {"planning.sweep_ray"},
    "pyarrow": {"render.sweep"},
    "rich": {"render.tables"},
    "scipy": {"calibration"},
}
# layers: a module may import only from its own layer or lower ones
LAYERS = [
    {"units", "errors", "writing", "arrays"},
    {"schema"},
    {"inputs"},
    {"perf"},
    {"fleet"},
    {"money"},
    {"planning", "calibration"},
    {"render"},
    {"cli", "__main__", "__init__"},
]


def modules() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        out.append((".".join(rel.parts), ast.parse(path.read_text())))
    return out


def imported(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def layer_of(module: str) -> int:
    top = module.split(".")[0]
    for i, layer in enumerate(LAYERS):
        if top in layer:
            return i
    raise AssertionError(f"planner.{module} is in no layer of test_architecture.LAYERS")


@pytest.mark.parametrize(("name", "tree"), modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_imports_respect_doors_and_layers(name, tree):
    mine = layer_of(name)
    for target in imported(tree):
        root = target.split(".")[0]
        if root in DOORS:
            doors = DOORS[root]
            assert any(name == d or name.startswith(d + ".") for d in doors), (
                f"planner.{name} imports {root}, which only {sorted(doors)} may"
            )
        if root == "planner" and target != "planner":
            other = target.split(".", 1)[1]
            assert layer_of(other) <= mine, f"planner.{name} (layer {mine}) imports {target}"


@pytest.mark.parametrize("package", ["perf", "fleet"])
def test_the_computational_core_opens_no_files(package):
    for path in (PACKAGE / package).glob("*.py"):
        text = path.read_text().replace("open(os.devnull", "")  # the solver door mutes stdout
        assert "open(" not in text and "read_text" not in text and "yaml" not in text, path


def test_every_command_is_in_the_readme():
    from planner.cli import cli

    for name, command in cli.commands.items():
        assert f"planner {name}" in README, name
        subcommands = getattr(command, "commands", {})
        for sub in subcommands:
            assert f"planner {name} {sub}" in README, f"{name} {sub}"


def test_readme_first_block_has_the_two_setup_commands():
    block = README.split("```")[1].strip().splitlines()[1:]
    assert len(block) == 2
    assert "planner solve scenarios/chatbot.yaml" in block[0] and "pip install" in block[0]
    assert "pytest" in block[1]


def test_every_solve_goes_through_the_one_solver_door():
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "fleet" / "solver.py":
            continue
        text = path.read_text().replace("linalg.solve(", "")
        assert ".solve(" not in text and "PULP_CBC_CMD" not in text and "HiGHS(" not in text, path


def test_the_public_api_resolves():
    import planner

    for name in planner.__all__:
        assert getattr(planner, name) is not None, name
