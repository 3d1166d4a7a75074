"""Issue 16: the grid is evaluated in slices, so a sweep's temporaries stay bounded; the
slices give exactly the table one pass gives."""

from __future__ import annotations

import pandas as pd

from planner.perf import evaluate as ev
from planner.perf.candidates import GridSpec, Price, build_grid


def test_evaluating_in_slices_gives_the_table_of_one_pass(catalog, monkeypatch):
    model = catalog.model("llama-3.1-70b")
    gpus = [catalog.gpus["h100-sxm"], catalog.gpus["a100-80gb"]]
    spec = GridSpec(
        gpus=gpus,
        quants=list(catalog.quants.values()),
        tps=[1, 2, 4, 8],
        batches=[1, 8, 64, 256],
        shapes=[(2048, 256), (512, 64)],
        prices={g.id: Price(2.0, "test") for g in gpus},
    )
    grid, _ = build_grid(model, spec, catalog.engine("vllm"))
    whole = ev.evaluate(model, grid, 0.8, "p95")
    monkeypatch.setattr(ev, "CHUNK_ROWS", 7)  # slices that end mid-deployment and mid-shape
    assert len(grid) > 3 * ev.CHUNK_ROWS
    sliced = ev.evaluate(model, grid, 0.8, "p95")
    pd.testing.assert_frame_equal(sliced, whole)
