"""The only YAML/JSON reader: parse, validate into strict models, name file and key on error."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from planner.errors import InputError, close_match, did_you_mean, short_name, shorten
from planner.schema import limits

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


def check_input_file(path: str | Path, expected: str, max_bytes: int) -> None:
    """Refuse, before opening, what is not a regular file of at most `max_bytes`: a FIFO or
    a device would block or never end, a folder is a mistake, a huge file a denial of service."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{path}: is a folder, expected {expected}")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            f"{path}: is {_file_kind(info.st_mode)}, not a regular file; expected {expected}"
        )
    if info.st_size > max_bytes:
        raise InputError(
            f"{path}: {info.st_size:,} bytes, more than the {max_bytes:,} allowed for "
            f"{expected} (README, Limits)"
        )


def _file_kind(mode: int) -> str:
    """'a FIFO (named pipe)', 'a character device', ... for a message."""
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((text for test, text in kinds if test(mode)), "a special file")


def read_text(
    path: str | Path, expected: str = "a text file", max_bytes: int = limits.MAX_DOCUMENT_BYTES
) -> str:
    """A regular file's text; a missing file, a folder, a FIFO or device, a file over the size
    limit or unreadable bytes become one InputError naming the file."""
    check_input_file(path, expected, max_bytes)
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


# ---- YAML: duplicate keys, nesting and alias expansion checked before construction ----------


class _Guard:
    """One walk over a composed YAML document: every mapping's keys, the nesting depth and
    the number of values once aliases are expanded (shared nodes counted once per use), done
    iteratively and memoised so that neither a bomb nor a deep document costs more than its
    text."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size: dict[int, int] = {}
        self.depth: dict[int, int] = {}
        self.where: dict[int, str] = {}

    def fail(self, node: yaml.Node, message: str) -> InputError:
        """'<file>: <key path>: <message> at line N', N being where the node starts."""
        where = short_name(self.where.get(id(node)) or "(top level)", 100)
        line = node.start_mark.line + 1
        return InputError(f"{self.path}: {where}: {message.replace('@', f'at line {line}')}")

    def children(self, node: yaml.Node) -> list[tuple[str, yaml.Node]]:
        """(key path, node) of the values inside a node; a mapping's keys are checked here."""
        base = self.where.get(id(node), "")
        if isinstance(node, yaml.SequenceNode):
            return [(f"{base}[{i}]", child) for i, child in enumerate(node.value)]
        if not isinstance(node, yaml.MappingNode):
            return []
        out: list = []
        seen: dict[object, object] = {}
        for key, value in node.value:
            label = key.value if isinstance(key, yaml.ScalarNode) else "?"
            child_path = f"{base}.{label}" if base else str(label)
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if (key.tag, key.value) in seen:
                    first = seen[key.tag, key.value]
                    self.where[id(key)] = child_path
                    raise self.fail(
                        key, f"duplicate key @ (first given at line {first}); give each key once"
                    )
                seen[key.tag, key.value] = key.start_mark.line + 1
            out += [(child_path, key), (child_path, value)]
        return out

    def check(self, root: yaml.Node) -> None:
        """Raise InputError on a duplicate key, a recursive alias, or a document nested deeper
        than MAX_NESTING or expanding to more than MAX_NODES values."""
        stack: list[tuple[yaml.Node, bool]] = [(root, False)]
        open_nodes: set[int] = set()
        while stack:
            node, finished = stack.pop()
            if finished:
                self._finish(node)
                open_nodes.discard(id(node))
                continue
            if id(node) in self.size:
                continue
            open_nodes.add(id(node))
            stack.append((node, True))
            for child_path, child in self.children(node):
                self.where.setdefault(id(child), child_path)
                if id(child) in open_nodes:
                    raise self.fail(child, "the YAML alias @ refers to a value that contains it")
                stack.append((child, False))

    def _finish(self, node: yaml.Node) -> None:
        kids = [child for _, child in self.children(node)]
        self.size[id(node)] = 1 + sum(self.size[id(k)] for k in kids)
        self.depth[id(node)] = 1 + max((self.depth[id(k)] for k in kids), default=0)
        if self.size[id(node)] > limits.MAX_NODES:
            raise self.fail(
                node,
                f"the value @ expands through YAML aliases to more than {limits.MAX_NODES:,} "
                "values",
            )
        if self.depth[id(node)] > limits.MAX_NESTING:
            raise self.fail(
                node,
                f"the value @ nests more than {limits.MAX_NESTING} levels of lists and mappings",
            )


class GuardedLoader(_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader, refusing duplicate keys, recursive aliases, alias bombs and deep
    nesting before any Python object is built (the last key no longer silently wins)."""

    source: Path = Path("<yaml>")

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        _Guard(self.source).check(node)
        return self.construct_document(node)


def parse_yaml(text: str, path: Path) -> Any:
    """Parse one YAML document with the guarded loader; errors name the file and line."""
    loader = GuardedLoader(text)
    loader.source = path
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        if isinstance(exc, yaml.reader.ReaderError):  # a control character: no line, a place
            where = f" at character {exc.position + 1}"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{path}: malformed YAML{where}: {problem}") from None
    except RecursionError:
        raise InputError(
            f"{path}: nested more than {limits.MAX_NESTING} levels of lists and mappings"
        ) from None
    finally:
        loader.dispose()


def read_yaml(path: Path) -> Any:
    """Parse one YAML file; a syntax error names the line and column."""
    return parse_yaml(read_text(path, "a YAML file"), path)


# ---- JSON: duplicate keys and nesting ----------------------------------------------------


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _DuplicateKey(ValueError):
    """A JSON object names one key twice (json.loads would keep the last silently)."""


def nesting_depth(value: Any) -> int:
    """Levels of nested lists and dicts in a parsed value, counted without recursion."""
    if not isinstance(value, dict | list):
        return 0
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > limits.MAX_NESTING:
            return level
        inner = item.values() if isinstance(item, dict) else item
        stack += [(v, level + 1) for v in inner if isinstance(v, dict | list)]
    return deepest


def parse_json(text: str, path: str | Path, line: int | None = None) -> Any:
    """Parse JSON text: a syntax error names the line and column; a repeated key or nesting
    deeper than MAX_NESTING is refused."""
    where = f"{path}: line {line}: " if line else f"{path}: "
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as exc:
        raise InputError(
            f"{where}duplicate key '{short_name(str(exc))}'; give each key once"
        ) from None
    except RecursionError:
        data = None
        depth = limits.MAX_NESTING + 1
    else:
        depth = nesting_depth(data)
    if depth > limits.MAX_NESTING:
        raise InputError(
            f"{where}nested more than {limits.MAX_NESTING} levels of lists and objects"
        )
    return data


def read_json(path: Path) -> Any:
    """Parse one JSON file; a syntax error names the line and column."""
    text = read_text(path, "a JSON file")
    try:
        return parse_json(text, path)
    except json.JSONDecodeError as exc:
        raise InputError(json_error(path, exc)) from None


def key_path(loc: tuple[Any, ...]) -> str:
    """Render a pydantic location as `workload.classes[1].input_tokens`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "literal[")) or part in ("tagged-union", "literal"):
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


def describe_error(err: Mapping[str, Any], model: type[BaseModel]) -> str:
    """One line for one pydantic error: key path, what is wrong, the value, a hint."""
    loc = tuple(err.get("loc", ()))
    path = key_path(loc)
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        allowed = _allowed_fields(model, loc)
        hint = close_match(str(loc[-1]), allowed) if allowed else None
        msg = f"{path}: unknown key"
        elsewhere = getattr(model, "keys_elsewhere", {}).get(str(loc[-1]))
        if elsewhere:  # a setting users put in the file that the command line takes
            msg += f" ({elsewhere})"
        elif hint:
            msg += f" (did you mean '{hint}'?)"
        if allowed:
            msg += f"; allowed here: {', '.join(allowed)}"
        return msg
    if kind == "missing":
        return f"{path}: required key is missing"
    if kind in ("union_tag_not_found", "union_tag_invalid"):
        return f"{path}: {_tag_message(err, model)}"
    if kind in ("literal_error", "enum"):
        return f"{path}: {_choice_message(err)}"
    text = err.get("msg", "invalid").removeprefix("Value error, ")
    value = err.get("input")
    shown = f" (got {shorten(value)})" if "input" in err and not isinstance(value, dict) else ""
    return f"{text}{shown}" if not loc else f"{path}: {text}{shown}"


# one allowed value in pydantic's "'a', 'b' or True": a quoted string, or a bare constant
_EXPECTED = re.compile(r"'((?:[^'\\]|\\.)*)'|\b(True|False|None|-?\d+(?:\.\d+)?)\b")
_YAML_CONSTANTS = {"True": "true", "False": "false", "None": "null"}


def _choice_message(err: Mapping[str, Any]) -> str:
    """A value outside a fixed set (a Literal or an Enum): the value, a close match and every
    allowed value as YAML spells it, in place of pydantic's "Input should be 'a' or 'b'"."""
    expected = str((err.get("ctx") or {}).get("expected", ""))
    allowed = [q or _YAML_CONSTANTS.get(bare, bare) for q, bare in _EXPECTED.findall(expected)]
    value = err.get("input")
    shown = f"'{short_name(value)}'" if isinstance(value, str) else shorten(value)
    hint = did_you_mean(value, allowed) if isinstance(value, str) else ""
    return f"unknown value {shown}{hint}; allowed: {', '.join(allowed)}"


def _tag_message(err: Mapping[str, Any], model: type[BaseModel]) -> str:
    """A mapping whose kind key (pydantic's discriminator, `dist:` of a distribution) is
    missing or unknown: the key, the kinds it takes, a close match, and the model's example
    (its `tag_examples`), in place of "Unable to extract tag using discriminator"."""
    ctx = err.get("ctx") or {}
    key = str(ctx.get("discriminator", "")).strip("'")
    kinds = list(getattr(model, "tag_kinds", {}).get(key, ()))
    kinds = kinds or [t.strip(" '") for t in str(ctx.get("expected_tags", "")).split(",")]
    allowed = ", ".join(k for k in kinds if k)
    value = err.get("input")
    if err.get("type") == "union_tag_invalid":
        tag = str(ctx.get("tag", ""))
        hint = close_match(tag, kinds)
        msg = f"'{key}: {short_name(tag)}' is not a kind here; allowed: {allowed}"
        msg += f" (did you mean '{hint}'?)" if hint else ""
    else:
        msg = f"no '{key}:' key naming its kind ({allowed})"
        named = [k for k in value if k in kinds] if isinstance(value, dict) else []
        if named:
            msg += f"; write {{{key}: {named[0]}, ...}}, not {{{named[0]}: {{...}}}}"
    example = getattr(model, "tag_examples", {}).get(key)
    return f"{msg}; e.g. {example}" if example else msg


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
