"""The only YAML/JSON reader: parse, validate into strict models, name file and key on error."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from planner.errors import InputError, close_match

M = TypeVar("M", bound=BaseModel)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# data package -> its folder in the repository (pyproject's package-dir)
_SOURCE_FOLDERS = {"planner.catalogs": "catalogs", "planner.data": "data"}


def package_folder(package: str) -> Path:
    """The folder of a data package shipped with planner (planner.catalogs, planner.data),
    found through importlib.resources so a wheel works wherever it is installed."""
    try:
        root = resources.files(package)
    except ModuleNotFoundError:  # a checkout imported without installing (PYTHONPATH=.)
        source = Path(__file__).resolve().parents[2] / _SOURCE_FOLDERS[package]
        if not source.is_dir():
            raise
        return source
    if not isinstance(root, Path):  # a zip import: the loaders read folders on disk
        raise InputError(f"{package}: package data is not a folder on disk ({root})")
    return root


def read_text(path: str | Path, expected: str = "a text file") -> str:
    """A file's text; a missing file, a folder or unreadable bytes become one InputError."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, expected {expected}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None


def json_error(path: str | Path, exc: json.JSONDecodeError, line: int | None = None) -> str:
    """One line for a JSON syntax error: the file, the line and column, what is wrong."""
    return f"{path}: malformed JSON at line {line or exc.lineno}, column {exc.colno}: {exc.msg}"


def read_yaml(path: Path) -> Any:
    """Parse one YAML file; a syntax error names the line and column."""
    text = read_text(path, "a YAML file")
    try:
        return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{path}: malformed YAML{where}: {problem}") from None


def read_json(path: Path) -> Any:
    """Parse one JSON file; a syntax error names the line and column."""
    text = read_text(path, "a JSON file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(json_error(path, exc)) from None


def key_path(loc: tuple[Any, ...]) -> str:
    """Render a pydantic location as `workload.classes[1].input_tokens`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith("function-") or part in ("tagged-union", "literal"):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _allowed_fields(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names allowed at a location, found by walking the schema."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        current = _inner_model(field.annotation)
        if current is None:
            return []
    return list(getattr(current, "model_fields", {}))


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    """The BaseModel inside Optional[...] / tuple[...] / list[...], if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_error(err: Mapping[str, Any], model: type[BaseModel]) -> str:
    """One line for one pydantic error: key path, what is wrong, the value, a hint."""
    loc = tuple(err.get("loc", ()))
    path = key_path(loc)
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        allowed = _allowed_fields(model, loc)
        hint = close_match(str(loc[-1]), allowed) if allowed else None
        msg = f"{path}: unknown key"
        if hint:
            msg += f" (did you mean '{hint}'?)"
        if allowed:
            msg += f"; allowed here: {', '.join(allowed)}"
        return msg
    if kind == "missing":
        return f"{path}: required key is missing"
    text = err.get("msg", "invalid").removeprefix("Value error, ")
    value = err.get("input")
    shown = f" (got {_short(value)})" if "input" in err and not isinstance(value, dict) else ""
    return f"{path}: {text}{shown}"


def validate(data: Any, model: type[M], source: str | Path) -> M:
    """Validate a parsed document into `model`; on failure, one InputError naming the file."""
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise InputError(f"{source}: expected a mapping of keys to values, got {got}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        lines = [describe_error(e, model) for e in errors[:5]]
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise InputError(f"{source}: " + "; ".join(lines) + more) from None


def load_yaml_model(path: Path, model: type[M]) -> M:
    """Read and validate one YAML file into a strict model."""
    return validate(read_yaml(path), model, path)
