"""plan(scenario, catalog) is a pure function of picklable inputs: sweeps can fan out."""

from __future__ import annotations

import dataclasses
import math
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.fleet.selection import (
    _KEY_VALUES,
    CANDIDATE_KEY,
    _candidates,
    _prune_group,
    _prune_group_loop,
    sla_met,
    sla_verdicts,
)
from planner.inputs.scenarios import load_scenario
from planner.perf.table import Table
from planner.planning.pipeline import plan
from planner.render.json import offered_records, plan_dict, to_json
from planner.schema.plan import Deployment

ROOT = Path(__file__).resolve().parent.parent


def _cost(args) -> float:
    scenario, catalog = args
    return plan(scenario, catalog).fleet.total_cost_per_hour_usd


@pytest.mark.slow  # the diurnal plan over time, twice
def test_inputs_and_plan_pickle_and_plan_is_deterministic(catalog, unhurried):
    """Solved to optimality under a generous limit: a time-limited incumbent depends on the
    machine's speed, and would make two runs differ."""
    scenario, cat = load_scenario(ROOT / "scenarios" / "diurnal-chatbot.yaml", catalog)
    scenario = unhurried(scenario)
    scenario2, cat2 = pickle.loads(pickle.dumps((scenario, cat)))
    first, second = plan(scenario, cat), plan(scenario2, cat2)
    assert first.fleet.status == first.over_time.solution.status == "optimal"
    restored = pickle.loads(pickle.dumps(first))
    assert to_json(plan_dict(first)) == to_json(plan_dict(second)) == to_json(plan_dict(restored))


@pytest.mark.slow  # worker processes import planner and plan afresh
def test_a_what_if_sweep_fans_out_on_a_process_pool(catalog):
    scenario, cat = load_scenario(ROOT / "scenarios" / "chatbot.yaml", catalog)
    sweep = [
        scenario.model_copy(
            update={"workload": scenario.workload.model_copy(update={"requests_per_second": rps})}
        )
        for rps in (5, 10, 20)
    ]
    with ProcessPoolExecutor(max_workers=2) as pool:
        costs = list(pool.map(_cost, [(s, cat) for s in sweep]))
    assert costs == pytest.approx([_cost((s, cat)) for s in sweep])
    assert costs[0] <= costs[1] <= costs[2]


def _renamed(line: Deployment, names: dict[str, str]) -> Deployment:
    """A fleet line with its per-class figures keyed by the new class names."""
    by_class = ("load_by_class", "tpot_ms_by_class", "ttft_ms_by_class")
    return dataclasses.replace(
        line, **{f: {names[k]: v for k, v in getattr(line, f).items()} for f in by_class}
    )


def _comparable(lines: tuple[Deployment, ...]) -> list:
    """Fleet lines as plain values with NaN as None: a prefill line's TPOT is NaN, and NaN
    never equals itself, so two equal fleets with a prefill pool would compare unequal."""

    def plain(value: object) -> object:
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    return [{k: plain(v) for k, v in dataclasses.asdict(line).items()} for line in lines]


@pytest.mark.parametrize(
    "names", [("gpu", "cost_per_hour_usd"), ("tp", "class"), ("batch", "quant")], ids=str
)
def test_class_names_that_are_column_names_plan_like_any_other(names, catalog, tmp_path):
    """Per-class capacity is an array, not columns named after classes: any name plans."""
    doc = yaml.safe_load((ROOT / "scenarios" / "mixed-traffic.yaml").read_text())
    mapping = {c["name"]: new for c, new in zip(doc["workload"]["classes"], names, strict=True)}
    for c in doc["workload"]["classes"]:
        c["name"] = mapping[c["name"]]
    path = tmp_path / "mixed-traffic.yaml"
    path.write_text(yaml.safe_dump(doc))
    renamed = plan(*load_scenario(path, catalog))
    original = plan(*load_scenario(ROOT / "scenarios" / "mixed-traffic.yaml", catalog))
    assert [c.name for c in renamed.classes] == list(names)
    assert renamed.fleet.status == "optimal"
    assert renamed.fleet.total_cost_per_hour_usd == original.fleet.total_cost_per_hour_usd
    want = [{**r, "class": mapping[r["class"]]} for r in offered_records(original)]
    assert offered_records(renamed) == want
    assert _comparable(renamed.fleet.deployments) == _comparable(
        tuple(_renamed(d, mapping) for d in original.fleet.deployments)
    )
    assert plan_dict(renamed)["candidates_evaluated"] == len(original.candidates)


def _old_verdicts(rows: pd.DataFrame, tpot_ms: float | None, ttft_ms: float | None) -> list:
    """The per-row reasons as sla_verdicts wrote them with DataFrame.apply (the reference)."""
    out = []
    for r in rows.itertuples():
        if not r.fits:
            why = (
                f"out of memory: needs {r.memory_per_gpu_gb:.1f} GB/GPU, "
                f"{r.memory_usable_gb:.1f} usable (max batch {int(r.max_batch)})"
            )
        elif np.isnan(r.price_usd_per_gpu_hour):
            why = "no price for this GPU"
        elif tpot_ms is not None and r.tpot_ms > tpot_ms:
            why = f"TPOT {r.tpot_ms:.1f} ms > {tpot_ms:g} ms"
        elif ttft_ms is not None and r.ttft_ms > ttft_ms:
            why = f"TTFT {r.ttft_ms:.0f} ms > {ttft_ms:g} ms"
        else:
            why = ""
        out.append(why)
    return out


@pytest.mark.parametrize(("tpot", "ttft"), [(50.0, 1500.0), (None, 800.5), (45.25, None)])
def test_sla_verdicts_say_why_in_order_memory_price_tpot_ttft(tpot, ttft):
    rows = pd.DataFrame(
        {
            "fits": [True, False, True, True, True, True, False],
            "memory_per_gpu_gb": [10.0, 93.456, 20.0, 30.0, 40.0, 50.0, 81.05],
            "memory_usable_gb": [72.0, 72.0, 72.0, 72.0, 72.0, 72.0, 72.0],
            "max_batch": [100, 12, 40, 50, 60, 70, 0],
            "price_usd_per_gpu_hour": [2.0, 2.0, np.nan, 2.0, 2.0, 2.0, np.nan],
            "tpot_ms": [20.0, 80.0, 90.0, 60.04, 49.99, np.nan, 10.0],
            "ttft_ms": [200.0, 9000.0, 100.0, 5000.4, 1600.5, 2000.0, 10.0],
        },
        index=range(10, 17),
    )
    got = sla_verdicts(rows, tpot, ttft)
    assert isinstance(got, np.ndarray) and len(got) == len(rows)  # one reason per row, in order
    assert got.tolist() == _old_verdicts(rows, tpot, ttft)
    assert sla_verdicts(Table.from_pandas(rows), tpot, ttft).tolist() == got.tolist()


_ms = st.one_of(st.none(), st.floats(1.0, 5000.0))
_cell = st.one_of(st.just(np.nan), st.floats(0.0, 9000.0))


@settings(max_examples=60, deadline=None)
@given(
    cells=st.lists(st.tuples(st.booleans(), _cell, _cell, _cell), min_size=1, max_size=30),
    tpot=_ms,
    ttft=_ms,
)
def test_sla_met_is_where_sla_verdicts_gives_no_reason(cells, tpot, ttft):
    """The verdict without its reasons (the mean-TTFT comparison, issue #16) is the same
    rule: NaN latencies pass, a NaN price or a batch out of memory fails."""
    rows = pd.DataFrame(
        {
            "fits": [c[0] for c in cells],
            "price_usd_per_gpu_hour": [c[1] for c in cells],
            "tpot_ms": [c[2] for c in cells],
            "ttft_ms": [c[3] for c in cells],
            "memory_per_gpu_gb": 1.0,
            "memory_usable_gb": 1.0,
            "max_batch": 1,
        }
    )
    want = sla_verdicts(rows, tpot, ttft) == ""
    np.testing.assert_array_equal(sla_met(rows, tpot, ttft), want)


@pytest.fixture(scope="module")
def mixed_rows(catalog):
    """The evaluated candidates of a three-class scenario with pools (every key kind)."""
    return plan(*load_scenario(ROOT / "scenarios" / "mixed-traffic.yaml", catalog)).candidates


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_candidates_by_lexsort_are_the_groupby_ones(mixed_rows, data):
    """offered_capacity's key rows and row-to-candidate map (issue #16: one lexsort) equal
    groupby(sort=True, observed=True).first() and ngroup() on any subset in any order."""
    n = len(mixed_rows)
    size = data.draw(st.integers(1, 400))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rows = mixed_rows.iloc[np.random.default_rng(seed).permutation(n)[:size]]
    keys, row = _candidates(Table.from_pandas(rows))
    groups = rows.groupby(CANDIDATE_KEY, sort=True, observed=True)
    want = groups[_KEY_VALUES].first().reset_index()
    pd.testing.assert_frame_equal(keys.to_pandas(), want, check_exact=True)
    np.testing.assert_array_equal(row, groups.ngroup().to_numpy())


@settings(max_examples=80, deadline=None)
@given(
    m=st.integers(1, 40),
    classes=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
    pools=st.booleans(),
)
def test_pruning_by_matrix_keeps_what_the_loop_keeps(m, classes, seed, pools):
    """The pairwise dominance matrix (issue #16) keeps exactly the candidates the
    one-at-a-time loop keeps, ties and pools' TTFT parts included (small integer values, so
    ties are common)."""
    rng = np.random.default_rng(seed)
    tp = rng.integers(1, 3, m)
    cost = rng.integers(1, 4, m).astype(float)
    caps = rng.integers(0, 3, (m, classes)).astype(float)
    ttft = rng.integers(0, 3, (m, classes)).astype(float)
    pool = rng.random(m) < 0.5 if pools else np.zeros(m, dtype=bool)
    members = np.arange(m)
    by_matrix, by_loop = np.ones(m, dtype=bool), np.ones(m, dtype=bool)
    _prune_group(members, by_matrix, tp, cost, caps, ttft, pool)
    _prune_group_loop(members, by_loop, tp, cost, caps, ttft, pool)
    np.testing.assert_array_equal(by_matrix, by_loop)


def test_candidates_from_undeclared_key_dtypes_fall_back_to_the_groupby():
    """Keys as plain strings (not the declared categoricals) and a NaN value take groupby's
    path and its rules: sorted keys, the first non-NaN value of each."""
    rows = pd.DataFrame({k: 1 for k in CANDIDATE_KEY}, index=range(3))
    rows["gpu"] = ["b", "a", "b"]
    rows["role"] = "aggregated"
    rows = rows.assign(gpus_per_replica=1, nodes_per_replica=1)
    rows["cost_per_hour_usd"] = [np.nan, 2.0, 3.0]
    keys, row = _candidates(Table.from_pandas(rows))
    assert keys["gpu"].tolist() == ["a", "b"]
    assert keys["cost_per_hour_usd"].tolist() == [2.0, 3.0]  # b's first non-NaN cost
    assert row.tolist() == [1, 0, 1]
