"""How fast the performance model evaluates a whole grid for one model.

The grid of issue 2: every GPU x tp 1/2/4/8 x every quantization x batch 1..1024, one request
shape. Prints rows, build time and evaluation time (best of 5).

    python benchmarks/grid_speed.py [model-id]
"""

from __future__ import annotations

import sys
import time

from planner.inputs.catalog import load_catalog
from planner.perf.candidates import GridSpec, Price, build_grid
from planner.perf.evaluate import evaluate


def main(model_id: str = "llama-3.1-70b") -> None:
    catalog = load_catalog()
    model = catalog.model(model_id)
    gpus = list(catalog.gpus.values())
    spec = GridSpec(
        gpus=gpus,
        quants=list(catalog.quants.values()),
        tps=[1, 2, 4, 8],
        batches=list(range(1, 1025)),
        shapes=[(2048, 256)],
        prices={g.id: Price(1.0, "benchmark") for g in gpus},
    )
    best_build, best_eval, rows = float("inf"), float("inf"), 0
    cpu_build, cpu_eval = float("inf"), float("inf")  # CPU s: less moved by a loaded machine
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        grid, _ = build_grid(model, spec, catalog.engine("vllm"))
        t1, c1 = time.perf_counter(), time.process_time()
        out = evaluate(model, grid, 0.8)
        t2, c2 = time.perf_counter(), time.process_time()
        best_build, best_eval, rows = min(best_build, t1 - t0), min(best_eval, t2 - t1), len(out)
        cpu_build, cpu_eval = min(cpu_build, c1 - c0), min(cpu_eval, c2 - c1)
    print(f"{model_id}: {len(gpus)} GPUs x tp 1/2/4/8 x {len(spec.quants)} quants x 1024 batches")
    print(f"  candidates evaluated: {rows:,} (invalid combinations dropped first)")
    print(
        f"  build grid: {best_build * 1e3:.0f} ms, evaluate: {best_eval * 1e3:.0f} ms, "
        f"total {(best_build + best_eval) * 1e3:.0f} ms (best of 5)"
    )
    cpu = f"build grid {cpu_build * 1e3:.0f} ms, evaluate {cpu_eval * 1e3:.0f} ms"
    print(f"  CPU: {cpu} (best of 5)")


if __name__ == "__main__":
    main(*sys.argv[1:])
