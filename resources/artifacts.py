"""Artifacts: deterministic paths under data/, checkpoints, and the IO manager.

Layout (all generated, DVC-tracked, never committed):
    data/<slug>/<asset>.parquet|.json   asset values (the IO manager)
    data/<slug>/checkpoints/            torch state_dicts + JSON sidecars
    data/results/<slug>/<table>.parquet tidy rows for the warehouse
    data/reports/<slug>/                markdown report, PNG plots, metrics.json
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


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


class PaperlabIOManager(dg.ConfigurableIOManager):
    """Stores asset values as files under data/<asset key path>.

    DataFrames → .parquet, dicts/lists → .json. Human-readable, DVC-trackable, and loadable
    without pickle. Each output's path, md5 and size go into the materialization metadata.
    """

    root: str = "data"

    def _base(self, key: dg.AssetKey) -> Path:
        return data_root(self.root).joinpath(*key.path)

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if obj is None:
            return
        base = self._base(context.asset_key)
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
        base = self._base(context.asset_key)
        if base.with_suffix(".parquet").exists():
            return pd.read_parquet(base.with_suffix(".parquet"))
        if base.with_suffix(".json").exists():
            return read_json(base.with_suffix(".json"))
        raise FileNotFoundError(f"no stored value for {context.asset_key.to_user_string()} under "
                                f"{base}(.parquet|.json): materialize it first")


def _provenance(context: dg.OutputContext) -> dict[str, str]:
    """git sha, profile and params hash of the paper, on every stored output."""
    from resources.versioning import git_sha, provenance

    slug = context.asset_key.path[0]
    try:
        profile = context.step_context.resources.compute.profile
        return provenance(slug, profile)
    except Exception:  # no compute resource (platform assets, bare tests) or no params block
        return {"git_sha": git_sha()}
