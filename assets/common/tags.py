"""Tags that route assets to hardware, read by executors rather than by our code."""
from __future__ import annotations

from typing import Any

GPU_POOL = "gpu"
DUCKDB_POOL = "duckdb"


def gpu_asset_kwargs(gpus: int = 1) -> dict[str, Any]:
    """Keyword arguments for @dg.asset on an asset that wants a GPU.

    - pool "gpu" (limit 1 per GPU in .dagster/dagster.yaml) serialises GPU work across runs;
    - "dagster-dask/resource_requirements" makes the dagster-dask executor place the step on
      a worker started with `--resources GPU=1`;
    - "dagster-k8s/config" gives the step's pod a GPU limit under the dagster-k8s executor.
    Scaling out is then a change of executor, not of asset code.
    """
    return {
        "pool": GPU_POOL,
        "op_tags": {
            "dagster-dask/resource_requirements": {"GPU": gpus},
            "dagster-k8s/config": {
                "container_config": {"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
            },
        },
        "kinds": {"torch"},
    }
