"""lari data-quality predicates (pure): the problems found, empty when fine. Thresholds are the issue's,
the same at every profile (the training gate's loss ratio is a parameter only so smoke's 10 steps pass)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.findings import finding
from assets.lari import data as D
from assets.lari import render as RD
from assets.lari import runs
from resources.artifacts import load_checkpoint, resolve_data_ref
from resources.versioning import file_md5

MAX_ODD_FRACTION = 0.01          # odd-hit pixels on watertight objects
MIN_MULTI_FRACTION = 0.30        # object hit pixels with > 2 layers
MAX_RGB_MISMATCH = 0.01          # RGB foreground vs layer-1 mask
REPROJECTION_PX = 1e-3


def _md5_problems(frame: pd.DataFrame) -> list[str]:
    out = []
    for path, md5 in frame[["path", "md5"]].drop_duplicates().itertuples(index=False):
        if file_md5(resolve_data_ref(path)) != md5:
            out.append(f"{path} does not match its md5")
    return out


def catalog_valid(catalog: pd.DataFrame, params) -> object:
    """Every mesh non-empty, non-degenerate, finite and unit-bbox normalised; objects watertight; counts as asked."""
    problems = _md5_problems(catalog)
    for kind in runs.KINDS:
        s = runs.scene_set(params, kind)
        n = int((catalog["scene_kind"] == kind).sum())
        if n != s.train + s.val + s.test:
            problems.append(f"{kind}: {n} meshes, expected {s.train + s.val + s.test}")
        arrays = runs._arrays(resolve_data_ref(catalog.loc[catalog["scene_kind"] == kind, "path"].iloc[0]))
        for m in catalog.loc[catalog["scene_kind"] == kind, "mesh_id"]:
            mesh = runs.mesh_of(arrays, m)
            try:
                D.validate_mesh(mesh.vertices, mesh.faces, m)
            except D.MeshError as err:
                problems.append(str(err))
                continue
            side = (mesh.vertices.max(0) - mesh.vertices.min(0)).max()
            if abs(side - 1) > 1e-6:
                problems.append(f"{m}: largest bbox side {side:.6f}, not 1")
    leaky = catalog[(catalog["scene_kind"] == "object") & ~catalog["watertight"]]
    problems += [f"{m}: object mesh is not watertight" for m in leaky["mesh_id"]]
    return finding(problems, ok=f"{len(catalog)} meshes valid, unit bbox, objects watertight")


def layers_consistent(layered: pd.DataFrame, params) -> object:
    """z strictly increasing over valid layers, prefix mask, S = Σ mask, finite, z > near plane, and every
    valid point re-projects to its pixel within 1e-3 px."""
    problems = _md5_problems(layered)
    for kind in runs.KINDS:
        a = runs._arrays(resolve_data_ref(layered.loc[layered["scene_kind"] == kind, "path"].iloc[0]))
        z, stop = a["z"].astype(np.float64), a["stop"].astype(np.int64)
        if not np.isfinite(z).all():
            problems.append(f"{kind}: non-finite depths")
            continue
        valid = z > 0
        if (valid[..., 1:] & ~valid[..., :-1]).any():
            problems.append(f"{kind}: mask is not a prefix at {int((valid[..., 1:] & ~valid[..., :-1]).sum())} slots")
        if (valid.sum(-1) != stop).any():
            problems.append(f"{kind}: stop ≠ Σ mask at {int((valid.sum(-1) != stop).sum())} pixels")
        both = valid[..., 1:] & valid[..., :-1]
        if (np.diff(z, axis=-1)[both] <= 0).any():
            problems.append(f"{kind}: z not strictly increasing at {int((np.diff(z, axis=-1)[both] <= 0).sum())} slots")
        if (z[valid] <= params.near).any():
            problems.append(f"{kind}: {int((z[valid] <= params.near).sum())} valid depths ≤ near plane {params.near}")
        n, h, w, _ = z.shape
        f = D.focal_length(params.image)
        grid = np.stack(np.meshgrid(np.arange(w), np.arange(h)), -1)[None, :, :, None, :]
        worst = 0.0
        for s in range(0, n, 64):                                   # chunks: (64, H, W, Lmax, 3) at a time
            zc, vc = z[s:s + 64], valid[s:s + 64]
            uv = RD.project(RD.unproject(np.where(vc, zc, 1.0), f), f, w, h)
            err = np.abs(uv - grid).max(-1)[vc]
            worst = max(worst, float(err.max()) if len(err) else 0.0)
        if worst > REPROJECTION_PX:
            problems.append(f"{kind}: re-projection error {worst:.2e} px > {REPROJECTION_PX}")
        if (stop > params.lmax).any():
            problems.append(f"{kind}: stop index above Lmax")
    return finding(problems, ok="layers strictly increasing, prefix masks, S = Σ mask, z > near, re-projection ok")


def parity(layered: pd.DataFrame) -> object:
    """≤ 1 % of hit pixels with an odd number of hits on watertight objects (a closed surface is crossed in pairs)."""
    tight = layered[(layered["scene_kind"] == "object") & layered["watertight"]]
    hits, odd = int(tight["hit_pixels"].sum()), int(tight["odd_pixels"].sum())
    frac = odd / hits if hits else 0.0
    problems = [f"odd-hit pixels {frac:.2%} of {hits} hit pixels on watertight objects > {MAX_ODD_FRACTION:.0%}"
                ] if frac > MAX_ODD_FRACTION else []
    if not hits:
        problems.append("no hit pixels on watertight objects")
    return finding(problems, ok=f"odd-hit pixels {frac:.3%} of {hits}", odd_fraction=frac)


def has_occlusions(layered: pd.DataFrame) -> object:
    """≥ 30 % of object hit pixels with > 2 layers (convex parts give 2), so the occlusion claim is tested."""
    obj = layered[layered["scene_kind"] == "object"]
    hits, multi = int(obj["hit_pixels"].sum()), int(obj["multi_pixels"].sum())
    frac = multi / hits if hits else 0.0
    problems = [f"only {frac:.1%} of object hit pixels have > 2 layers (need ≥ {MIN_MULTI_FRACTION:.0%})"
                ] if frac < MIN_MULTI_FRACTION else []
    return finding(problems, ok=f"{frac:.1%} of object hit pixels have > 2 layers", multi_fraction=frac)


def rgb_matches_layer1(rgb: pd.DataFrame, layered: pd.DataFrame, params) -> object:
    """RGB foreground vs the layer-1 mask: ≤ 1 % of pixels over every view, and every kept view ≤ reject_mismatch;
    the stored images are uint8 (N, H, W, 3) of the annotation's size."""
    problems = _md5_problems(rgb)
    total = float(rgb["mismatch"].mean()) if len(rgb) else 1.0
    if total > MAX_RGB_MISMATCH:
        problems.append(f"RGB / layer-1 disagreement {total:.2%} > {MAX_RGB_MISMATCH:.0%}")
    kept = rgb[~rgb["rejected"]]
    if len(kept) and kept["mismatch"].max() > params.reject_mismatch:
        problems.append("a kept view exceeds the rejection threshold")
    for kind in runs.KINDS:
        a = runs._arrays(resolve_data_ref(rgb.loc[rgb["scene_kind"] == kind, "path"].iloc[0]))["rgb"]
        if a.dtype != np.uint8 or a.shape[1:] != (params.image, params.image, 3):
            problems.append(f"{kind}: images {a.dtype} {a.shape[1:]}, expected uint8 "
                            f"({params.image}, {params.image}, 3)")
        if len(a) != int((layered["scene_kind"] == kind).sum()):
            problems.append(f"{kind}: {len(a)} images for {int((layered['scene_kind'] == kind).sum())} views")
    return finding(problems, ok=f"disagreement {total:.3%}; {int(rgb['rejected'].sum())} views rejected")


def splits_disjoint(splits: pd.DataFrame) -> object:
    """No mesh id in two splits; every split of every kind non-empty."""
    problems = []
    roles = splits.groupby("mesh_id")["split"].nunique()
    problems += [f"mesh {m} is in {n} splits" for m, n in roles[roles > 1].items()]
    for kind in runs.KINDS:
        for split in ("train", "val", "test"):
            if not ((splits["scene_kind"] == kind) & (splits["split"] == split)).any():
                problems.append(f"{kind}: empty {split} split")
    return finding(problems, ok=f"{splits['mesh_id'].nunique()} meshes, disjoint splits")


def models_valid(models: pd.DataFrame, params) -> object:
    """Checkpoints load (md5), have finite weights and the declared L; training loss finite and falling:
    mean of the last 10 % of steps ≤ loss_fall_ratio × the first 10 % (ratio 1 at cpu / gpu)."""
    import torch

    problems = []
    for r in models.itertuples(index=False):
        try:
            state, sidecar = load_checkpoint(r.checkpoint)
        except (OSError, ValueError) as err:
            problems.append(f"{r.name}: {err}")
            continue
        if int(sidecar["config"]["layers"]) != int(r.layers):
            problems.append(f"{r.name}: checkpoint has L = {sidecar['config']['layers']}, table says {r.layers}")
        if not all(bool(torch.isfinite(v.float()).all()) for v in state.values() if v.is_floating_point()):
            problems.append(f"{r.name}: non-finite weights")
        losses = np.asarray(r.losses, dtype=float)
        if not np.isfinite(losses).all():
            problems.append(f"{r.name}: non-finite training loss")
        elif not r.loss_last <= params.loss_fall_ratio * r.loss_first:
            problems.append(f"{r.name}: loss not falling ({r.loss_first:.4g} → {r.loss_last:.4g})")
    return finding(problems, ok=f"{len(models)} checkpoints finite, losses falling")


def threshold_valid(thresholds: pd.DataFrame, params) -> object:
    """τ finite, in (0, 1), from the grid, one per kind × seed."""
    problems = []
    if len(thresholds) != len(runs.KINDS) * len(params.seeds):
        problems.append(f"{len(thresholds)} thresholds for {len(runs.KINDS)} kinds × {len(params.seeds)} seeds")
    bad = thresholds[~np.isfinite(thresholds["tau"]) | (thresholds["tau"] <= 0) | (thresholds["tau"] >= 1)]
    problems += [f"{r.scene_kind}/seed {r.seed}: τ = {r.tau} outside (0, 1)" for r in bad.itertuples(index=False)]
    return finding(problems, ok="τ in (0, 1) for every kind × seed")


def predictions_complete(predictions: pd.DataFrame, splits: pd.DataFrame, params) -> object:
    """Finite F-scores in [0, 1]; every kind × seed × method scored every test view."""
    problems = []
    rows = predictions[predictions["view"] >= 0]
    f = rows[rows["metric"].str.contains("f@")]
    if not np.isfinite(f["value"]).all() or (f["value"] < 0).any() or (f["value"] > 1).any():
        problems.append("F-scores outside [0, 1] or non-finite")
    for kind in runs.KINDS:
        n = int(((splits["scene_kind"] == kind) & (splits["split"] == "test")).sum())
        seen = rows[rows["scene_kind"] == kind].groupby(["seed", "method"])["view"].nunique()
        problems += [f"{kind}/seed {s}/{m}: {c} of {n} test views" for (s, m), c in seen.items() if c != n]
        if set(rows.loc[rows["scene_kind"] == kind, "seed"]) != set(params.seeds):
            problems.append(f"{kind}: seeds {sorted(set(rows.loc[rows['scene_kind'] == kind, 'seed']))}")
    return finding(problems, ok=f"{len(rows)} metric rows, every test view scored")
