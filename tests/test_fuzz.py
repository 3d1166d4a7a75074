"""Fuzzing the whole pipeline with generated scenario documents: valid, near-valid, garbage.

Every document must give either a plan that keeps its own promises (demand served, SLA met,
inventory, GPU cap, budget and redundancy respected by the model's own numbers) or one clean
PlannerError: never another exception. Counts: 150 valid + 800 near-valid + 1500 garbage
documents per run at the default profile; HYPOTHESIS_PROFILE=thorough raises each to 2000.
"""

from __future__ import annotations

import math
import os

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.errors import PlannerError
from planner.inputs.scenarios import load_scenario
from planner.planning.pipeline import plan
from planner.units import HOURS_PER_MONTH

# 2,450 generated documents, each planned: a minute or more (-m "not slow" leaves them out)
pytestmark = pytest.mark.slow

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
MODELS = ["llama-3.1-8b", "qwen2.5-7b", "mixtral-8x7b", "llama-3.1-70b"]
GPUS = ["h100-sxm", "l40s", "a100-80gb", "rtx-4090", "h200", "l4", "mi300x", "b200", "t4"]
KEYS = [
    "model",
    "workload",
    "sla",
    "hardware",
    "search",
    "constraints",
    "solver",
    "name",
    "requests_per_second",
    "input_tokens",
    "output_tokens",
    "tpot_ms",
    "ttft_ms",
    "gpus",
    "quants",
    "tp",
    "inventory",
    "classes",
    "share",
    "statistic",
    "batches",
]


def fuzz_settings(n: int):
    return settings(
        max_examples=2000 if THOROUGH else n,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )


sla = st.fixed_dictionaries(
    {},
    optional={
        "tpot_ms": st.one_of(st.floats(2, 400), st.sampled_from(["40ms", "0.05s"])),
        "ttft_ms": st.floats(50, 60_000),
        "statistic": st.sampled_from(["mean", "p50", "p90", "p99"]),
    },
)

single_workload = st.fixed_dictionaries(
    {
        "requests_per_second": st.floats(0.05, 300),
        "input_tokens": st.integers(1, 20_000),
        "output_tokens": st.integers(1, 2_000),
    }
)


@st.composite
def class_workload(draw):
    n = draw(st.integers(1, 3))
    weights = [draw(st.integers(1, 9)) for _ in range(n)]
    classes = [
        {
            "name": f"c{i}",
            "share": w / sum(weights),
            "input_tokens": draw(st.integers(1, 20_000)),
            "output_tokens": draw(st.integers(1, 1_000)),
            **({"sla": draw(sla)} if draw(st.booleans()) else {}),
        }
        for i, w in enumerate(weights)
    ]
    return {"requests_per_second": draw(st.floats(0.05, 100)), "classes": classes}


@st.composite
def valid_docs(draw):
    gpus = draw(st.lists(st.sampled_from(GPUS), min_size=1, max_size=3, unique=True))
    doc = {
        "model": draw(st.sampled_from(MODELS)),
        "workload": draw(st.one_of(single_workload, class_workload())),
        "sla": draw(sla),
        "hardware": {"gpus": gpus},
        "search": {
            "quants": draw(
                st.lists(
                    st.sampled_from(["bf16", "fp8", "int4-awq"]),
                    min_size=1,
                    max_size=2,
                    unique=True,
                )
            ),
            "batches": draw(
                st.lists(st.sampled_from([1, 4, 16, 64, 256]), min_size=1, max_size=3, unique=True)
            ),
            "target_utilization": draw(st.floats(0.3, 0.95)),
        },
        "constraints": draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "min_replicas": st.integers(0, 3),
                    "max_gpus": st.integers(1, 64),
                    "max_monthly_budget_usd": st.floats(100, 1e6),
                },
            )
        ),
        "solver": {"time_limit_s": 5},
    }
    if draw(st.booleans()):
        doc["hardware"]["inventory"] = {gpus[0]: draw(st.integers(0, 32))}
    return doc


garbage = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.floats(),
        st.text(max_size=12),
        st.sampled_from(KEYS),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), inner, max_size=5),
    ),
    max_leaves=20,
)


@st.composite
def near_valid_docs(draw):
    doc = draw(valid_docs())
    for _ in range(draw(st.integers(1, 3))):
        path = _random_path(draw, doc)
        node, key = path
        action = draw(st.sampled_from(["delete", "retype", "typo", "extra"]))
        if action == "delete":
            node.pop(key, None)
        elif action == "retype":
            node[key] = draw(
                st.one_of(
                    st.just(-1),
                    st.just(0),
                    st.just(float("nan")),
                    st.just(float("inf")),
                    st.just("50 parsecs"),
                    st.just([]),
                    st.just(None),
                    st.just({"x": 1}),
                )
            )
        elif action == "typo" and key in node:
            node[key[:-1] + "x"] = node.pop(key)
        else:
            node[draw(st.sampled_from(KEYS))] = draw(garbage)
    return doc


def _random_path(draw, doc):
    node = doc
    while True:
        keys = list(node) if isinstance(node, dict) else []
        if not keys:
            return node, "model"
        key = draw(st.sampled_from(keys))
        child = node[key]
        if isinstance(child, dict) and child and draw(st.booleans()):
            node = child
            continue
        return node, key


def run_doc(tmp_path, catalog, doc):
    path = tmp_path / "fuzz.yaml"
    path.write_text(yaml.safe_dump(doc) if isinstance(doc, dict | list) else str(doc))
    try:
        scenario, cat = load_scenario(path, catalog)
        result = plan(scenario, cat)
    except PlannerError as exc:
        assert exc.message and "Traceback" not in exc.message
        assert exc.exit_code in (1, 2, 3)
        return None
    check_plan(result, scenario)
    return result


def check_plan(result, scenario) -> None:
    """The plan keeps its promises by the model's own numbers."""
    fleet = result.fleet
    served = {c.name: 0.0 for c in result.classes}
    decoded = {c.name: 0.0 for c in result.classes}  # disaggregated: each request crosses both
    for d in fleet.deployments:
        assert d.replicas >= 1 and d.gpus == d.replicas * (d.gpus_per_replica or d.tp)
        assert d.requests_per_s <= d.capacity_requests_per_s * (1 + 1e-6) + 1e-9
        for c in result.classes:
            load = d.load_by_class.get(c.name, 0.0)
            served[c.name] += load if d.role != "decode" else 0.0  # aggregated or prefill
            decoded[c.name] += load if d.role != "prefill" else 0.0  # aggregated or decode
            if load > 1e-9:
                # a prefill pool has no TPOT; a pool's TTFT is its part of the bound (the MIP
                # pairs parts within it), so the whole bound is checked on aggregated lines
                if c.tpot_ms is not None and d.role != "prefill":
                    assert d.tpot_ms_by_class[c.name] <= c.tpot_ms * (1 + 1e-9)
                if c.ttft_ms is not None and d.role == "aggregated":
                    assert d.ttft_ms_by_class[c.name] <= c.ttft_ms * (1 + 1e-9)
    for c in result.classes:
        assert math.isclose(served[c.name], c.requests_per_second, rel_tol=1e-6, abs_tol=1e-6)
        assert math.isclose(decoded[c.name], c.requests_per_second, rel_tol=1e-6, abs_tol=1e-6)
    cons = scenario.constraints
    assert sum(d.replicas for d in fleet.deployments) >= cons.min_replicas
    if cons.max_gpus is not None:
        assert fleet.total_gpus <= cons.max_gpus
    if cons.max_monthly_budget_usd is not None:
        assert fleet.total_cost_per_hour_usd * HOURS_PER_MONTH <= cons.max_monthly_budget_usd * (
            1 + 1e-9
        )
    for gpu, avail in scenario.hardware.inventory.items():
        assert sum(d.gpus for d in fleet.deployments if d.gpu == gpu) <= avail


@fuzz_settings(150)
@given(doc=valid_docs())
def test_valid_documents_plan_or_explain(tmp_path_factory, catalog, doc):
    run_doc(tmp_path_factory.mktemp("v"), catalog, doc)


@fuzz_settings(800)
@given(doc=near_valid_docs())
def test_near_valid_documents_plan_or_explain(tmp_path_factory, catalog, doc):
    run_doc(tmp_path_factory.mktemp("n"), catalog, doc)


@fuzz_settings(1500)
@given(doc=garbage)
def test_garbage_documents_give_a_clean_error(tmp_path_factory, catalog, doc):
    run_doc(tmp_path_factory.mktemp("g"), catalog, doc)
