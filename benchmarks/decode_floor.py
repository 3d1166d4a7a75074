"""What a small decode step costs beyond its bytes, per layer, for each aic TensorRT-LLM series.

For rows at <= 8 requests whose output is at least a quarter of the prompt (few prefills in
the decode loop), the measured TPOT minus the pure roofline's (weights and KV at the card's
bandwidth) divided by `--eta`, over the model's layers. A floor that is one engine cost a
layer would read the same for every model and tp; session 41 (#10) used it to see why a fixed
cost per layer does not carry from one aic campaign to the other.

    python benchmarks/decode_floor.py [--eta 0.85] [--engine trtllm]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import accuracy  # noqa: E402

from planner import calibration as cal  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402


def floors(engine: str, eta: float) -> pd.DataFrame:
    """Median measured TPOT, pure-roofline TPOT and the excess per layer, per series."""
    catalog = load_catalog()
    used = cal.usable(accuracy.load(catalog))
    used = used[(used["engine"] == engine) & (used["dataset"] == "aic")]
    ideal = cal.predict(used, catalog, None, ideal=True)
    small = ideal[(ideal["batch"] <= 8) & (ideal["output_len"] >= ideal["input_len"] / 4)].copy()
    layers = {m: catalog.model(m).num_hidden_layers for m in small["model_id"].unique()}
    small["excess_ms"] = small["meas_tpot"] - small["pred_tpot"] / eta
    small["excess_us_per_layer"] = small["excess_ms"] / small["model_id"].map(layers) * 1e3
    keys = ["source_key", "model_id", "gpu_id", "quant_id", "tp"]
    cols = ["meas_tpot", "pred_tpot", "excess_ms", "excess_us_per_layer"]
    out = small.groupby(keys)[cols].median().round(2)
    out.insert(0, "rows", small.groupby(keys).size())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eta", type=float, default=0.85, help="bandwidth share the bytes get")
    ap.add_argument("--engine", default="trtllm")
    args = ap.parse_args(argv)
    print(f"# {args.engine}: median measured TPOT (ms), pure roofline (eta 1), and the excess")
    print(f"# over the roofline at eta {args.eta}, in ms and in us a layer; rows at <= 8 requests")
    print("# with OSL >= ISL / 4\n")
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(floors(args.engine, args.eta).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
