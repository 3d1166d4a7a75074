"""Capacity of one 8-GPU node for Llama-2-70B under MLPerf's Server constraints (issue #12).

MLPerf Inference (v4.0 on) Llama-2-70B Server: p99 TTFT <= 2 s and p99 TPOT <= 200 ms, on the
OpenOrca subset of 24,576 samples; mlcommons/inference language/llama2-70b/README.md states
294.45 tokens per sample (the mean output, the accuracy target) and a 1,024-token limit on the
sequence (`processorca.py --seqlen_limit=1024`). The mean input length is not stated in our
sources, so the prompt is modelled at that 1,024-token limit: the most prefill a sample can
cost, making the capacity below a lower bound on that count. The model's TPOT is one number
per configuration (no spread), so the p99 TPOT bound is held on it as on the mean.

Prints one row per GPU: the node's largest Server rate, output tokens/s, the configuration.
The measured value it is set beside, 21,606 output tok/s on 8 x H100 (MLPerf v4.1 Server),
is the figure quoted in issue #12; it is not in calibration/measured_public.csv.

    python benchmarks/capacity_mlperf.py [--engine trtllm] [--input-tokens 1024] [--utilization 0.8]
"""

from __future__ import annotations

import argparse

from planner.inputs.catalog import load_catalog
from planner.planning.capacity import fleet_capacity
from planner.schema.scenario import Scenario

GPUS = ("h100-sxm", "h200", "b200", "mi300x")
OUTPUT_TOKENS = 294  # mlcommons/inference llama2-70b README: 294.45 tokens per sample
MEASURED_H100_TOK_S = 21_606.0  # issue #12: MLPerf v4.1 Server, 8 x H100


def node(gpu: str, engine: str, input_tokens: int, utilisation: float) -> Scenario:
    """One 8-GPU node of `gpu` under the MLPerf Server latency constraints."""
    return Scenario.model_validate(
        {
            "name": f"mlperf-llama2-70b-8x{gpu}",
            "model": "llama-2-70b",
            "engine": engine,
            "workload": {
                "requests_per_second": 1,
                "input_tokens": input_tokens,
                "output_tokens": OUTPUT_TOKENS,
            },
            "sla": {"tpot_ms": 200, "ttft_ms": 2000, "statistic": "p99"},
            "hardware": {"fleet": {gpu: 8}},
            "search": {
                "quants": ["bf16", "fp8"],
                "tp": [1, 2, 4, 8],
                "target_utilization": utilisation,
            },
            "constraints": {"min_replicas": 1},
            "solver": {"time_limit_s": 60},
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="trtllm")
    parser.add_argument("--input-tokens", type=int, default=1024)
    parser.add_argument("--utilization", type=float, default=0.8, help="planned load")
    args = parser.parse_args()
    catalog = load_catalog()
    print(
        f"engine {args.engine}, {args.input_tokens} in / {OUTPUT_TOKENS} out, p99 TTFT <= 2 s, "
        f"TPOT <= 200 ms, planned utilisation {args.utilization:g}"
    )
    print(f"{'node':<12}{'req/s':>9}{'out tok/s':>11}{'vs 21,606':>10}  configuration")
    for gpu in GPUS:
        r = fleet_capacity(node(gpu, args.engine, args.input_tokens, args.utilization), catalog)
        conf = "; ".join(
            f"{d.replicas} x tp{d.tp} {d.quant} kv {d.kv_dtype} batch {d.batch}"
            for d in r.deployments
        )
        ratio = r.max_output_tokens_per_s / MEASURED_H100_TOK_S
        print(
            f"8x {gpu:<9}{r.max_requests_per_second:>9.1f}{r.max_output_tokens_per_s:>11,.0f}"
            f"{ratio:>10.2f}  {conf}; {r.binding[-1]}"
        )


if __name__ == "__main__":
    main()
