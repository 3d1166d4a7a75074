"""The only Ray user: the same sweep points as Ray tasks, on a cluster or a local one.

The scenario and catalog are put in the object store once (`ray.put`); each task gets the
reference (nested, so Ray does not resolve it per call) and a worker fetches and unpickles
it once, keeping it for every later point it runs. Each task is `run_point` on one point:
the same pure function as the local pool, so the rows are the same.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

from planner.errors import InputError
from planner.inputs.catalog import Catalog
from planner.planning.sweep import Collected, Point, Progress, run_point
from planner.schema.scenario import Scenario

_INPUTS: dict[str, tuple[Scenario, Catalog]] = {}
BATCH = 64  # results collected per ray.wait
# Ray binds a local cluster to the machine's address unless told it is a single-node one;
# `local` keeps every Ray process on 127.0.0.1 (read when ray is first imported)
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _ray():
    """Import Ray, or say how to install it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install -e '.[ray]'") from None
    return ray


def _task(refs: list[Any], point: Point) -> dict[str, Any]:
    """One point on a Ray worker; the shipped inputs are fetched once per worker process."""
    ray = _ray()
    key = refs[0].hex()
    if key not in _INPUTS:
        _INPUTS.clear()
        _INPUTS[key] = ray.get(refs[0])
    base, catalog = _INPUTS[key]
    return run_point(base, catalog, point)


def connect(address: str, jobs: int | None = None) -> tuple[Any, bool]:
    """Join the cluster at `address`, or start a local one for `local` (dashboard off,
    `jobs` CPUs, on 127.0.0.1 only); a Ray already initialised in this process is used as it
    is. Returns the module and whether this call started it (and so should shut it down)."""
    if address == "local":
        os.environ.setdefault(LOOPBACK_ONLY, "0")
    ray = _ray()
    if ray.is_initialized():
        return ray, False
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    try:
        if address == "local":
            ray.init(num_cpus=jobs, **options)
        else:
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InputError(f"--ray {address}: cannot connect to a Ray cluster: {exc}") from None
    return ray, True


def run_on_ray(
    base: Scenario,
    catalog: Catalog,
    points: Sequence[Point],
    address: str,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> tuple[Collected, str]:
    """Plan the points as Ray tasks; Ctrl-C cancels the rest and keeps the finished rows.
    Returns the rows and a description of the cluster."""
    ray, started = connect(address, jobs)
    out = Collected()
    try:
        cpus = int(ray.cluster_resources().get("CPU", 0))
        shared = [ray.put((base, catalog))]
        task = ray.remote(num_cpus=1, max_retries=0)(_task)
        pending = [task.remote(shared, p) for p in points]
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=min(BATCH, len(pending)), timeout=1)
                for row in ray.get(done):
                    out.rows.append(row)
                    if progress:
                        progress(1)
        except KeyboardInterrupt:
            out.interrupted = True
            for ref in pending:
                ray.cancel(ref, force=True)
    finally:
        if started:
            ray.shutdown()
    return out, f"ray {address} ({cpus} CPUs)"
