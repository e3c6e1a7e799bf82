"""Artifacts: deterministic paths under data/, checkpoints, and the IO manager.

Layout (all generated, never committed):
    data/<slug>/<asset>.parquet|.json   asset values (the IO manager)            DVC-tracked
    data/<slug>/checkpoints/            torch state_dicts + JSON sidecars        DVC-tracked
    data/results/<slug>/<table>.parquet tidy rows for the warehouse              DVC-tracked
    data/reports/<slug>/                REPORT.md, PNG plots, metrics.json       DVC-tracked
    data/runs/<slug>/                   run records: run id, git sha, times, check rows,
                                        wall-clock measurements, the report payload  (not DVC)

Everything DVC tracks is a deterministic function of code, parameters and seeds: a rerun at
the same seed writes the same bytes. What a rerun cannot repeat (run ids, timestamps, wall
clock) goes to data/runs/, which the warehouse reads but DVC does not track.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np
import pandas as pd

from resources.profiles import REPO_ROOT
from resources.versioning import file_md5

DATA_DIR_ENV_VAR = "PAPERLAB_DATA_DIR"
# asset metadata flag: the value is a run record (wall-clock measurements, the report
# payload) and is stored under data/runs/, outside DVC's outputs
VOLATILE = "paperlab/volatile"
RESERVED_DIRS = ("results", "reports", "runs", "platform", "inputs")


def data_root(root: str | Path = "data") -> Path:
    """Absolute data directory. The default "data" is <repo>/data unless PAPERLAB_DATA_DIR
    points elsewhere (tests use a temporary directory, so they never touch real outputs)."""
    if str(root) == "data" and os.environ.get(DATA_DIR_ENV_VAR):
        return Path(os.environ[DATA_DIR_ENV_VAR])
    path = Path(root)
    return path if path.is_absolute() else REPO_ROOT / path


def data_ref(path: Path) -> str:
    """A path as stored in asset values: relative to the data root, so values (and their
    md5) do not depend on where the data directory lives."""
    return Path(path).resolve().relative_to(data_root().resolve()).as_posix()


def resolve_data_ref(ref: str) -> Path:
    return data_root() / ref


def runs_dir(slug: str, root: str | Path = "data") -> Path:
    """data/runs/<slug>: this paper's run records (not tracked by DVC)."""
    return _mkdir(data_root(root) / "runs" / slug)


def record_timings(slug: str, name: str, rows: pd.DataFrame, root: str | Path = "data") -> Path:
    """Wall-clock rows measured inside an asset (training seconds, throughput, latency):
    a run record data/runs/<slug>/timings/<name>.parquet, never part of a DVC-tracked value.
    The report reads them back with `recorded_timings` (for Report.timings / timing_body)."""
    return write_parquet(runs_dir(slug, root) / "timings" / f"{name}.parquet", rows)


def recorded_timings(slug: str, name: str, root: str | Path = "data") -> pd.DataFrame | None:
    """The rows `record_timings` wrote for <slug>/<name>, or None when this data directory
    has none (e.g. the report re-run alone on a copy of the outputs)."""
    path = data_root(root) / "runs" / slug / "timings" / f"{name}.parquet"
    return pd.read_parquet(path) if path.exists() else None


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def write_json(path: Path, obj: Any) -> Path:
    """Deterministic JSON (sorted keys); NaN/inf are refused rather than written silently."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, sort_keys=True, indent=1, default=_json_default, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_parquet(path: Path, frame: pd.DataFrame) -> Path:
    """Parquet without the index; byte-identical for identical frames."""
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.reset_index(drop=True).to_parquet(path, index=False, engine="pyarrow",
                                            compression="zstd")
    return path


def save_state_dict(path: Path, state: dict[str, Any], sidecar: dict[str, Any]) -> dict[str, Any]:
    """Save a state_dict of tensors with a JSON sidecar (config, seed, device, torch version).

    Only tensors (numpy arrays are converted) so that torch.load(weights_only=True) can read
    it back; everything else belongs in the sidecar. Returns the sidecar as written.
    """
    import torch

    tensors = {}
    for name, value in state.items():
        if isinstance(value, np.ndarray):
            value = torch.from_numpy(np.array(value, order="C", copy=True))  # keeps 0-d shapes
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"state[{name!r}] is {type(value).__name__}; only tensors/arrays "
                            "belong in a state_dict (put the rest in the sidecar)")
        tensors[name] = value.detach().cpu()
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(tensors, path)
    full = dict(sidecar, torch_version=torch.__version__, file=path.name, md5=file_md5(path),
                tensors={k: [str(v.dtype).replace("torch.", ""), list(v.shape)] for k, v in tensors.items()})
    write_json(sidecar_path(path), full)
    return full


def save_checkpoint(path: Path, state: dict[str, Any], *, provenance: dict[str, Any], config: Any = None,
                    seed: int | None = None, device: str = "cpu", **extra: Any) -> dict[str, Any]:
    """Save a state_dict with a sidecar recording where it came from, and return the
    reference an asset value carries: {"checkpoint": data-root-relative path, "md5"}.

    provenance: compute.provenance(slug) (profile, params hash); config: the model config
    (dataclass or dict); the torch version, md5 and tensor shapes are added by
    save_state_dict. No git sha or time: the file is a reproducible output.
    """
    sidecar = {**provenance, "config": _plain(config), "seed": seed, "device": device, **extra}
    written = save_state_dict(path, state, sidecar)
    return {"checkpoint": data_ref(path), "md5": written["md5"]}


def load_checkpoint(ref: str | dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state_dict, sidecar) of a reference written by save_checkpoint (or its path string);
    weights_only, on the CPU, md5-checked."""
    path = ref["checkpoint"] if isinstance(ref, dict) else ref
    return load_state_dict(resolve_data_ref(path))


def _plain(value: Any) -> Any:
    """JSON-able form of a config: dataclasses and read-only mappings become dicts."""
    import dataclasses
    from collections.abc import Mapping

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def sidecar_path(path: Path) -> Path:
    return path.with_suffix(path.suffix + ".json")


def load_state_dict(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load (state_dict, sidecar) with weights_only=True on the CPU; checks the md5."""
    import torch

    sidecar = read_json(sidecar_path(path))
    if file_md5(path) != sidecar["md5"]:
        raise ValueError(f"checkpoint {path} does not match the md5 in its sidecar")
    state = torch.load(path, map_location="cpu", weights_only=True)
    return state, sidecar


class ArtifactsResource(dg.ConfigurableResource):
    """Deterministic locations under data/ for one paper's files."""

    root: str = "data"

    def paper_dir(self, slug: str) -> Path:
        return _mkdir(data_root(self.root) / slug)

    def checkpoint_path(self, slug: str, name: str) -> Path:
        return _mkdir(self.paper_dir(slug) / "checkpoints") / f"{name}.pt"

    def results_dir(self, slug: str) -> Path:
        return _mkdir(data_root(self.root) / "results" / slug)

    def report_dir(self, slug: str) -> Path:
        return _mkdir(data_root(self.root) / "reports" / slug)

    def runs_dir(self, slug: str) -> Path:
        return runs_dir(slug, self.root)

    def record_timings(self, slug: str, name: str, rows: pd.DataFrame) -> Path:
        return record_timings(slug, name, rows, self.root)

    def recorded_timings(self, slug: str, name: str) -> pd.DataFrame | None:
        return recorded_timings(slug, name, self.root)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


class PaperlabIOManager(dg.ConfigurableIOManager):
    """Stores asset values as files under data/<asset key path>.

    DataFrames → .parquet, dicts/lists → .json. Human-readable, DVC-trackable, and loadable
    without pickle. Each output's path, md5 and size go into the materialization metadata.
    Assets whose metadata sets VOLATILE (run records) are stored under data/runs/ instead.
    """

    root: str = "data"

    def _base(self, key: dg.AssetKey, volatile: bool = False) -> Path:
        root = data_root(self.root) / "runs" if volatile else data_root(self.root)
        return root.joinpath(*key.path)

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if obj is None:
            return
        volatile = bool((context.definition_metadata or {}).get(VOLATILE))
        base = self._base(context.asset_key, volatile)
        if isinstance(obj, pd.DataFrame):
            path = write_parquet(base.with_suffix(".parquet"), obj)
            meta = {"rows": len(obj), "columns": ", ".join(map(str, obj.columns))}
        elif isinstance(obj, (dict, list)):
            path = write_json(base.with_suffix(".json"), obj)
            meta = {}
        else:
            raise TypeError(f"{context.asset_key.to_user_string()}: PaperlabIOManager stores "
                            f"DataFrames and dicts, not {type(obj).__name__}")
        context.add_output_metadata({**meta, "path": str(path.relative_to(REPO_ROOT))
                                     if path.is_relative_to(REPO_ROOT) else str(path),
                                     "md5": file_md5(path), "bytes": path.stat().st_size,
                                     **_provenance(context)})

    def load_input(self, context: dg.InputContext) -> Any:
        for base in (self._base(context.asset_key), self._base(context.asset_key, volatile=True)):
            if base.with_suffix(".parquet").exists():
                return pd.read_parquet(base.with_suffix(".parquet"))
            if base.with_suffix(".json").exists():
                return read_json(base.with_suffix(".json"))
        base = self._base(context.asset_key)
        raise FileNotFoundError(f"no stored value for {context.asset_key.to_user_string()} under "
                                f"{base}(.parquet|.json): materialize it first")


def _provenance(context: dg.OutputContext) -> dict[str, str]:
    """git sha, profile and params hash of the paper, on every stored output's metadata."""
    from resources.versioning import git_sha

    slug = context.asset_key.path[0]
    try:
        return {"git_sha": git_sha(), **context.step_context.resources.compute.provenance(slug)}
    except Exception:  # no compute resource (platform assets, bare tests) or no params block
        return {"git_sha": git_sha()}
