"""How long the largest inputs planner accepts take, end to end through the CLI (issue 15).

Each input sits just inside a documented limit (README, Limits; planner/schema/limits.py):
a 4 MiB scenario, 64 request classes of varied shapes and SLAs over the whole catalog, a
20,000-row measurements CSV, a batch of 1,000,000, a 64 MiB demand CSV, a ~60 MiB vLLM result
with per-request lists. Prints the exit code and wall-clock seconds of each.

    python benchmarks/largest.py [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile  # noqa: E402

MiB = 1024 * 1024


def big_scenario(tmp: Path) -> tuple[str, ...]:
    text = hostile.scenario_text()
    line = "#" + "x" * 998 + "\n"
    text += line * ((4 * MiB - len(text)) // len(line) - 1)
    (tmp / "s.yaml").write_text(text)
    return hostile.solve()


def many_classes(tmp: Path) -> tuple[str, ...]:
    rng = random.Random(1)
    classes = [
        {
            "name": f"c{i}",
            "requests_per_second": round(rng.uniform(0.1, 3), 2),
            "input_tokens": rng.randint(100, 8000),
            "output_tokens": rng.randint(50, 1000),
            "sla": {"tpot_ms": rng.choice([30, 50, 80, 150]), "ttft_ms": rng.choice([1e3, 1e4])},
        }
        for i in range(64)
    ]
    doc = {"model": "llama-3.1-8b", "workload": {"classes": classes}}
    (tmp / "s.yaml").write_text(yaml.safe_dump(doc))
    return hostile.solve()


def many_rows(tmp: Path) -> tuple[str, ...]:
    (tmp / "m.csv").write_text(hostile.big_csv(20_000))
    return ("validate", "m.csv", "--json")


def big_batch(tmp: Path) -> tuple[str, ...]:
    return (*hostile.ESTIMATE, "--batch", "1000000", "--json")


def big_demand_csv(tmp: Path) -> tuple[str, ...]:
    with open(tmp / "d.csv", "w") as out:
        out.write("timestamp,requests_per_second\n")
        size, minute = 0, 0
        while size < 63 * MiB:
            day, rest = divmod(minute, 1440)
            row = f"2025-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}T{rest // 60:02d}:"
            row += f"{rest % 60:02d}:00Z,{1 + rest / 1440:.4f}\n"
            out.write(row)
            size, minute = size + len(row), minute + 1
    finance = hostile.finance(profile={"csv": "d.csv"})
    (tmp / "s.yaml").write_text(hostile.scenario_text(finance=finance))
    return hostile.solve()


def big_vllm_json(tmp: Path) -> tuple[str, ...]:
    doc = hostile.vllm_doc(itls=[[0.015] * 500 for _ in range(14_000)], ttfts=[0.2] * 14_000)
    (tmp / "r.json").write_text(json.dumps(doc))
    return ("validate", "r.json", *hostile.VLLM_IDS, "--json")


INPUTS: dict[str, Callable[[Path], tuple[str, ...]]] = {
    "scenario-4MiB": big_scenario,
    "classes-64": many_classes,
    "validate-20000-rows": many_rows,
    "estimate-batch-1e6": big_batch,
    "demand-csv-64MiB": big_demand_csv,
    "vllm-json-60MiB": big_vllm_json,
}


def run(name: str, make: Callable[[Path], tuple[str, ...]]) -> tuple[int | None, float, int]:
    """(exit code, seconds, input bytes) of one input, None on a 600 s timeout."""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        args = make(tmp)
        size = sum(p.stat().st_size for p in tmp.iterdir())
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "planner.cli", *args],
                cwd=tmp,
                env=hostile._environment(),
                capture_output=True,
                timeout=600,
            )
            code: int | None = done.returncode
        except subprocess.TimeoutExpired:
            code = None
        return code, time.perf_counter() - start, size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    args = parser.parse_args(argv)
    print(f"{'input':<22}{'bytes':>14}{'exit':>6}{'seconds':>10}")
    for name, make in INPUTS.items():
        if name.startswith(args.only):
            code, seconds, size = run(name, make)
            print(f"{name:<22}{size:>14,}{code if code is not None else 'hang':>6}{seconds:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
