"""Hostile generators: the shapes of issue 15, produced by hypothesis instead of listed.

test_fuzz.py mutates scenarios towards garbage; these generators aim at the edges an attacker
tries: numbers beyond float or int64 range, non-finite and tiny numbers, booleans for numbers
and numbers for booleans, duplicate keys, repeated list entries, deep nesting, alias bombs,
unknown ids in every section, and special files in every input role. Each property states
what a correct planner does (refuse with exit 2 naming the file and key, or plan and keep
its promises), never merely "no crash". Counts per run: 60 to 120 cases per generator at the
default profile (20 for the ones that plan); HYPOTHESIS_PROFILE=thorough runs 2000 each.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import re
import signal
import socket
import time

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_fuzz import check_plan
from test_hostile import hostile

from planner.calibration import read_measurements
from planner.calibration.vllm_results import Identity
from planner.errors import InputError, PlannerError
from planner.inputs.catalog import load_catalog
from planner.inputs.hf_import import model_from_hf_config
from planner.inputs.loading import read_json
from planner.inputs.scenarios import load_scenario
from planner.planning.pipeline import plan

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
MAX_MESSAGE = 1500  # characters: a refusal is a sentence or three, never a value in full
FAST_S = 10.0  # a refusal takes well under this (the parse is bounded by the file size)


@functools.cache
def shipped():
    """The shipped catalog, loaded once (not a fixture: hypothesis would print its repr)."""
    return load_catalog()


def hostile_settings(n: int):
    """n cases at the default profile, 2000 under `thorough`; reproducible."""
    return settings(
        max_examples=2000 if THOROUGH else n,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )


# ---- documents ----------------------------------------------------------------------------

BASE = hostile.scenario_doc()
FULL = hostile.scenario_doc(
    workload={
        "requests_per_second": 5,
        "classes": [
            {"name": "chat", "share": 0.75, "input_tokens": 512, "output_tokens": 128},
            {"name": "docs", "share": 0.25, "input_tokens": 4000, "output_tokens": 300},
        ],
    },
    hardware={
        "gpus": ["l40s", "h100-sxm"],
        "exclude": ["t4"],
        "inventory": {"l40s": 16},
        "pricing": {"provider": "CoreWeave", "usd_per_gpu_hour": {"l40s": 1.2}},
    },
    search={"quants": ["bf16", "fp8"], "tp": [1, 2], "batches": [16, 64]},
    constraints={"min_replicas": 1, "max_gpus": 64, "max_monthly_budget_usd": 1e6},
    solver={"time_limit_s": 5, "relative_gap": 0.001, "threads": 1},
    finance=hostile.finance(
        growth_per_month=0.05,
        slots=4,
        months_per_period=1,
        profile={"hourly": [0.5] * 12 + [1.0] * 12, "by_class": {"docs": [1.0] * 24}},
        reserved={"usd_per_gpu_hour": {"l40s": 0.8}},
        spot={"enabled": True, "max_share": 0.2, "usd_per_gpu_hour": {"l40s": 0.5}},
        owned={"h100-sxm": {"purchase_usd_per_gpu": 25000, "pue": 1.2}},
    ),
)


def leaves(doc, path=()):
    """(path, value) of every scalar in a document."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from leaves(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from leaves(value, (*path, i))
    else:
        yield path, doc


NUMERIC = [
    p
    for p, v in leaves(FULL)
    if isinstance(v, int | float) and not isinstance(v, bool) and "hourly" not in p
] + [("finance", "profile", "hourly", 3)]
BOOLEAN = [p for p, v in leaves(FULL) if isinstance(v, bool)]


def put(doc, path, value):
    """A deep copy of `doc` with the value at `path` replaced (keys created as needed)."""
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def write(tmp_path, text: str, name: str = "s.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def refused(action, *needles: str) -> InputError:
    """Run `action`; it must raise InputError quickly, with a short message holding every
    needle (the file, the key)."""
    start = time.perf_counter()
    with pytest.raises(InputError) as info:
        action()
    message = info.value.message
    assert time.perf_counter() - start < FAST_S, "a refusal took too long"
    assert len(message) <= MAX_MESSAGE, f"message of {len(message)} characters"
    for needle in needles:
        assert str(needle) in message, f"{needle!r} not in {message!r}"
    return info.value


def key_of(path) -> str:
    """The last named key of a path (what a message must mention)."""
    return next(str(p) for p in reversed(path) if isinstance(p, str))


# ---- value generators -----------------------------------------------------------------------

huge_numbers = st.one_of(
    st.sampled_from([2**63, 2**64, 10**20, 10**400, 1e16, 1e100, 1e308, -1e308, -(2**63)]),
    st.integers(min_value=10**13, max_value=10**40),
    st.integers(min_value=-(10**40), max_value=-(10**13)),
    st.floats(min_value=1e13, max_value=1e308),
    st.floats(min_value=-1e308, max_value=-1e13),
)
non_finite = st.sampled_from([float("inf"), float("-inf"), float("nan")])
bad_text = st.sampled_from(["1e309", "nan", "inf", "-inf", "1e20", "0x10", "ten", "", "[1]"])
not_a_number = st.one_of(  # null is absent, which optional keys allow
    st.booleans(),
    st.lists(st.integers(0, 9), max_size=3),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), min_size=1),
)
out_of_range = st.one_of(huge_numbers, non_finite, bad_text, not_a_number)
tiny_numbers = st.one_of(
    st.sampled_from([5e-324, 1e-320, 1e-300, 2.2e-308, 1e-12, -1e-300, -0.0, 0.0]),
    st.floats(min_value=1e-300, max_value=1e-6),
)


# ---- scenarios: numbers, booleans, tiny values -------------------------------------------------


@hostile_settings(120)
@given(path=st.sampled_from(NUMERIC), value=out_of_range)
def test_a_number_out_of_range_anywhere_is_refused(tmp_path_factory, path, value):
    doc = put(FULL, path, value)
    src = write(tmp_path_factory.mktemp("n"), json.dumps(doc, allow_nan=True))
    refused(lambda: load_scenario(src, shipped()), src, key_of(path))


@hostile_settings(60)
@given(path=st.sampled_from(BOOLEAN), value=st.sampled_from([0, 1, 1.0, "yes", "true", "on", None]))
def test_a_boolean_must_be_true_or_false(tmp_path_factory, path, value):
    src = write(tmp_path_factory.mktemp("b"), yaml.safe_dump(put(FULL, path, value)))
    refused(lambda: load_scenario(src, shipped()), src, key_of(path), "true or false")


@hostile_settings(20)
@given(
    path=st.sampled_from([p for p in NUMERIC if p[0] in ("workload", "sla", "hardware")]),
    value=tiny_numbers,
)
def test_tiny_numbers_plan_or_are_refused(tmp_path_factory, path, value):
    doc = put(FULL, path, value)
    doc.pop("finance")
    src = write(tmp_path_factory.mktemp("t"), yaml.safe_dump(doc))
    try:
        scenario, cat = load_scenario(src, shipped())
        result = plan(scenario, cat)
    except PlannerError as exc:
        assert exc.exit_code in (1, 2, 3) and len(exc.message) <= MAX_MESSAGE
        if exc.exit_code == 1:
            assert "cannot all hold at once" not in exc.message
        return
    check_plan(result, scenario)


# ---- scenarios: duplicate keys, repeated entries, nesting, aliases ------------------------------

KEY_LINE = re.compile(r"^(\s*)([A-Za-z_][\w.-]*):")


@hostile_settings(80)
@given(data=st.data())
def test_a_duplicate_key_is_refused(tmp_path_factory, data):
    lines = yaml.safe_dump(FULL, default_flow_style=False, sort_keys=False).splitlines()
    keyed = [i for i, line in enumerate(lines) if KEY_LINE.match(line)]
    i = data.draw(st.sampled_from(keyed))
    key = KEY_LINE.match(lines[i]).group(2)
    again = data.draw(st.sampled_from([lines[i], f"{KEY_LINE.match(lines[i]).group(1)}{key}: 7"]))
    text = "\n".join([*lines[:i], again, *lines[i:]]) + "\n"  # before: its block stays
    src = write(tmp_path_factory.mktemp("k"), text)
    refused(lambda: load_scenario(src, shipped()), src, key, "duplicate key")


LISTS = {
    ("hardware", "gpus"): ["l40s", "h100-sxm"],
    ("hardware", "exclude"): ["t4", "l4"],
    ("search", "quants"): ["bf16", "fp8"],
    ("search", "tp"): [1, 2],
    ("search", "batches"): [16, 64],
    ("search", "kv_dtypes"): ["bf16", "fp8"],
}


@hostile_settings(60)
@given(data=st.data())
def test_a_repeated_list_entry_is_refused(tmp_path_factory, data):
    path = data.draw(st.sampled_from(sorted(LISTS)))
    items = list(LISTS[path])
    repeat = data.draw(st.sampled_from(items))
    items.insert(data.draw(st.integers(0, len(items))), repeat)
    src = write(tmp_path_factory.mktemp("r"), yaml.safe_dump(put(FULL, path, items)))
    refused(lambda: load_scenario(src, shipped()), src, path[-1], "twice")


def deep_yaml(levels: int, flow: bool, kind: str) -> str:
    """A value nested `levels` deep: flow [[...]] / {a: {a: ...}} or block indentation."""
    if flow:
        opening, closing = ("[", "]") if kind == "list" else ("{a: ", "}")
        return opening * levels + "1" + closing * levels
    rows = [("  " * i) + ("- " if kind == "list" else "a:") for i in range(levels)]
    return "\n" + "\n".join(rows) + " 1"


@hostile_settings(60)
@given(
    key=st.sampled_from(["name", "description", "workload", "sla", "search", "finance"]),
    levels=st.integers(65, 5000),
    flow=st.booleans(),
    kind=st.sampled_from(["list", "map"]),
)
def test_deep_nesting_is_refused(tmp_path_factory, key, levels, flow, kind):
    if not flow:
        levels = min(levels, 400)  # block nesting costs levels^2 characters
    doc = {k: v for k, v in BASE.items() if k != key}
    text = yaml.safe_dump(doc) + f"{key}: {deep_yaml(levels, flow, kind)}\n"
    src = write(tmp_path_factory.mktemp("d"), text)
    refused(lambda: load_scenario(src, shipped()), src)


@hostile_settings(60)
@given(
    width=st.integers(2, 12),
    depth=st.integers(2, 12),
    key=st.sampled_from(["name", "description", "model", "workload", "engine"]),
    recursive=st.booleans(),
)
def test_alias_expansion_is_bounded(tmp_path_factory, width, depth, key, recursive):
    assume(recursive or width**depth > 1_000_000)
    rows = [f"  l0: &l0 [{', '.join(['lol'] * width)}]"]
    for d in range(1, depth):
        rows.append(f"  l{d}: &l{d} [{', '.join([f'*l{d - 1}'] * width)}]")
    top = f"*l{depth - 1}" if not recursive else "&r [1, *r]"
    text = "x-anchors:\n" + "\n".join(rows) + f"\nmodel: llama-3.1-8b\n{key}: {top}\n"
    src = write(tmp_path_factory.mktemp("a"), text)
    refused(lambda: load_scenario(src, shipped()), src)


# ---- scenarios: unknown ids in every section --------------------------------------------------

ID_PLACES = {
    ("model",): "models",
    ("engine",): "engines",
    ("hardware", "gpus", 0): "gpus",
    ("hardware", "exclude", 0): "gpus",
    ("search", "quants", 1): "quants",
    ("hardware", "inventory", "*"): "gpus",
    ("hardware", "pricing", "usd_per_gpu_hour", "*"): "gpus",
    ("hardware", "pricing", "provider"): "providers",
    ("finance", "owned", "*"): "gpus",
    ("finance", "reserved", "usd_per_gpu_hour", "*"): "gpus",
    ("finance", "spot", "usd_per_gpu_hour", "*"): "gpus",
    ("finance", "profile", "by_class", "*"): "classes",
}


NAME_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cs"), exclude_characters="/\\"),
    min_size=1,
    max_size=30,
)


def known_ids(catalog, table: str) -> set[str]:
    if table == "providers":
        return {p.provider.lower() for g in catalog.gpus.values() for p in g.prices}
    if table == "classes":
        return {"chat", "docs"}
    return set(getattr(catalog, table))


def typo(draw, word: str) -> str:
    """A misspelling: one character dropped, doubled, swapped or replaced."""
    i = draw(st.integers(0, len(word) - 1))
    kind = draw(st.sampled_from(["drop", "double", "replace", "suffix"]))
    if kind == "drop":
        return word[:i] + word[i + 1 :]
    if kind == "double":
        return word[:i] + word[i] * 2 + word[i + 1 :]
    if kind == "replace":
        return word[:i] + draw(st.sampled_from("xz9_")) + word[i + 1 :]
    return word + draw(st.sampled_from(["x", "-2", "s"]))


def with_id(doc, path, new):
    """`doc` with the id at `path` replaced; '*' is a mapping key (its value kept)."""
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    if path[-1] == "*":
        old = next(iter(node))
        node[new] = node.pop(old)
    else:
        node[path[-1]] = new
    return out


@hostile_settings(120)
@given(data=st.data())
def test_an_unknown_id_in_any_section_is_refused(tmp_path_factory, data):
    path = data.draw(st.sampled_from(sorted(ID_PLACES, key=str)))
    known = known_ids(shipped(), ID_PLACES[path])
    seed = data.draw(st.sampled_from(sorted(known)))
    new = data.draw(
        st.one_of(st.builds(lambda: typo(data.draw, seed)), NAME_TEXT, st.just("x" * 150))
    )
    assume(
        new.strip() and new.lower() not in {k.lower() for k in known} and not new.endswith(".json")
    )
    src = write(
        tmp_path_factory.mktemp("i"), json.dumps(with_id(FULL, path, new), ensure_ascii=False)
    )
    section = ".".join(str(p) for p in path if isinstance(p, str) and p != "*")
    refused(lambda: load_scenario(src, shipped()), src, section.split(".")[0], "unknown")


# ---- config.json and measurements ----------------------------------------------------------------

HF_CONFIG = json.loads(hostile.HF_LLAMA.read_text())
HF_NUMERIC = sorted(
    k for k, v in HF_CONFIG.items() if isinstance(v, int) and not isinstance(v, bool)
)
HF_USED = ["hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
           "num_key_value_heads", "vocab_size", "max_position_embeddings"]  # fmt: skip


def imported(tmp, text: str):
    """The action that reads and imports `text` as a config.json, as `model import` does."""
    path = write(tmp, text, "config.json")
    return lambda: model_from_hf_config(read_json(path), "m", str(path))


@hostile_settings(100)
@given(key=st.sampled_from(HF_USED), value=st.one_of(huge_numbers, non_finite, st.booleans()))
def test_a_hostile_config_json_value_is_refused(tmp_path_factory, key, value):
    text = json.dumps({**HF_CONFIG, key: value})
    refused(imported(tmp_path_factory.mktemp("c"), text), key)


@hostile_settings(60)
@given(key=st.sampled_from(HF_NUMERIC), levels=st.integers(65, 100_000))
def test_a_duplicate_or_deep_config_json_is_refused(tmp_path_factory, key, levels):
    duplicated = json.dumps(HF_CONFIG)[:-1] + f', "{key}": 1}}'
    refused(imported(tmp_path_factory.mktemp("c"), duplicated), "duplicate key", key)
    deep = json.dumps(HF_CONFIG)[:-1] + ', "x": ' + "[" * levels + "]" * levels + "}"
    refused(imported(tmp_path_factory.mktemp("c"), deep), "nested")


CSV_NUMBERS = ["batch_size", "tp", "num_gpus", "input_len", "output_len", "tpot_itl_ms",
               "ttft_ms", "total_output_tok_s"]  # fmt: skip
bad_cells = st.one_of(
    st.sampled_from(["-4", "0", "-0.5", "1e309", "inf", "-inf", "nan", "1e20", "-1e-300"]),
    st.floats(max_value=-1e-6).map(repr),
    st.integers(min_value=10**13).map(str),
)


@hostile_settings(80)
@given(column=st.sampled_from(CSV_NUMBERS), cell=bad_cells)
def test_a_hostile_measurement_cell_is_refused(tmp_path_factory, column, cell):
    src = write(tmp_path_factory.mktemp("m"), hostile.csv_text(**{column: cell}), "m.csv")
    refused(lambda: read_measurements([src], shipped()), src, column)


VLLM_KEYS = ["max_concurrency", "num_prompts", "completed", "total_output_tokens",
             "mean_tpot_ms", "mean_ttft_ms", "output_throughput"]  # fmt: skip
VLLM_ID = Identity("llama-3.1-8b", "h100-sxm", 1, "bf16")


@hostile_settings(80)
@given(
    key=st.sampled_from(VLLM_KEYS),
    value=st.one_of(huge_numbers, st.booleans(), st.floats(max_value=-1e-6), st.just(0.5)),
)
def test_a_hostile_vllm_result_value_is_refused(tmp_path_factory, key, value):
    assume(not (value == 0.5 and key.startswith(("mean", "output"))))  # 0.5 ms is a metric
    doc = hostile.vllm_doc(**{key: value})
    src = write(tmp_path_factory.mktemp("v"), json.dumps(doc), "r.json")
    refused(lambda: read_measurements([src], shipped(), VLLM_ID), src, key)


# ---- special files in every input role ---------------------------------------------------------


@contextlib.contextmanager
def alarm(seconds: int):
    """Fail instead of blocking forever: SIGALRM interrupts a read of a FIFO."""

    def ring(signum, frame):
        raise TimeoutError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def special(path, kind: str) -> None:
    """Make `path` a FIFO, a folder, a socket or a link to a device."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    else:
        os.symlink(kind, path)


def read_role(role: str, tmp, catalog):
    """The action that reads the special file of `role` from folder `tmp`."""
    if role == "scenario":
        return lambda: load_scenario(tmp / "x.yaml", catalog)
    if role == "demand-csv":
        doc = hostile.scenario_text(finance=hostile.finance(profile={"csv": "x.csv"}))
        src = write(tmp, doc)
        return lambda: load_scenario(src, shipped())
    if role == "catalog-entry":
        return lambda: load_catalog(tmp / "cat")
    if role == "config-json":
        src = write(tmp, hostile.scenario_text(model="m/config.json"))
        return lambda: load_scenario(src, shipped())
    return lambda: read_measurements([tmp / f"x.{role[-4:].strip('-')}"], catalog, VLLM_ID)


ROLE_FILES = {
    "scenario": "x.yaml",
    "demand-csv": "x.csv",
    "catalog-entry": "cat/gpus/x.yaml",
    "config-json": "m/config.json",
    "measurements-csv": "x.csv",
    "measurements-json": "x.json",
}


@pytest.mark.parametrize("kind", ["fifo", "folder", "socket", "/dev/zero", "/dev/null"])
@pytest.mark.parametrize("role", sorted(ROLE_FILES))
def test_a_special_file_in_any_role_is_refused(tmp_path, catalog, role, kind):
    special(tmp_path / ROLE_FILES[role], kind)
    with alarm(20):
        refused(read_role(role, tmp_path, catalog))
