"""What each lari asset computes, given parameters, seeds and paths (no Dagster import).

Large arrays live in deterministic .npz files under data/lari/ (data.save_arrays); asset values are
tables that reference them (data-root-relative path + md5). Worker jobs (spawned) get absolute paths
and seed their own generators, so results do not depend on the process or on the worker count.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from assets.common.worker import torch_worker
from assets.lari import data as D
from assets.lari import metrics as M
from assets.lari import model as NN
from assets.lari import render as RD
from assets.lari.params import LariParams
from resources.artifacts import data_ref, load_checkpoint, resolve_data_ref
from resources.versioning import file_md5

KINDS = ("object", "room")
_CACHE: dict[str, dict[str, np.ndarray]] = {}


def _arrays(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of an .npz, cached per process (workers read the same files many times)."""
    key = str(path)
    if key not in _CACHE:
        _CACHE[key] = D.load_arrays(Path(path))
    return _CACHE[key]


def _forget(path: Path) -> None:
    _CACHE.pop(str(path), None)


def scene_set(p: LariParams, kind: str):
    return p.objects if kind == "object" else p.rooms


def mesh_of(arrays: dict[str, np.ndarray], mesh_id: str) -> D.Mesh:
    return D.Mesh(arrays[f"v_{mesh_id}"], arrays[f"f_{mesh_id}"], arrays[f"p_{mesh_id}"])


# ---------------------------------------------------------------- data
def mesh_catalog(p: LariParams, seed_for, out_dir: Path) -> pd.DataFrame:
    """Procedural objects (generators cycled) and rooms; meshes in meshes_<kind>.npz, one row per mesh."""
    rows = []
    for kind in KINDS:
        s = scene_set(p, kind)
        arrays = {}
        for i in range(s.train + s.val + s.test):
            mesh_id = f"{kind[:3]}_{i:04d}"
            rng = np.random.default_rng(seed_for("mesh", mesh_id))
            generator = D.OBJECT_GENERATORS[i % len(D.OBJECT_GENERATORS)] if kind == "object" else "room"
            mesh = D.object_mesh(generator, rng) if kind == "object" else D.room_mesh(rng, p.furniture)
            arrays.update({f"v_{mesh_id}": mesh.vertices, f"f_{mesh_id}": mesh.faces, f"p_{mesh_id}": mesh.part})
            lo, hi = mesh.vertices.min(0), mesh.vertices.max(0)
            tri = mesh.triangles
            rows.append({"mesh_id": mesh_id, "scene_kind": kind, "generator": generator,
                         "generator_version": D.GENERATOR_VERSION, "n_vertices": len(mesh.vertices),
                         "n_faces": len(mesh.faces), "parts": int(mesh.part.max() + 1),
                         "watertight": D.is_watertight(mesh) if kind == "object" else False,
                         "area": float(0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]),
                                                            axis=1).sum()),
                         **{f"lo_{a}": float(lo[j]) for j, a in enumerate("xyz")},
                         **{f"hi_{a}": float(hi[j]) for j, a in enumerate("xyz")}})
        path = D.save_arrays(out_dir / f"meshes_{kind}.npz", arrays)
        _forget(path)
        for r in rows:
            if r["scene_kind"] == kind:
                r["path"], r["md5"] = data_ref(path), file_md5(path)
    return pd.DataFrame(rows)


def camera_rigs(p: LariParams, catalog: pd.DataFrame, seed_for) -> pd.DataFrame:
    """One row per (mesh, view): f, image size, R (camera→world, r0..r8 row-major), C, light direction, checker."""
    rows = []
    f = D.focal_length(p.image)
    for m in catalog.itertuples(index=False):
        rng = np.random.default_rng(seed_for("rig", m.mesh_id))
        s = scene_set(p, m.scene_kind)
        if m.scene_kind == "object":
            cams = D.object_cameras(rng, s.views, p.radius)
        else:
            cams = D.room_cameras(np.array([m.lo_x, m.lo_y, m.lo_z]), np.array([m.hi_x, m.hi_y, m.hi_z]), rng, s.views)
        for v, (R, C) in enumerate(cams):
            light = -R[:, 2] + 0.6 * rng.normal(size=3)
            light /= np.linalg.norm(light)
            rows.append({"mesh_id": m.mesh_id, "scene_kind": m.scene_kind, "view": v, "f": f, "width": p.image,
                         **{f"r{j}": float(x) for j, x in enumerate(R.reshape(-1))},
                         **{f"c{j}": float(x) for j, x in enumerate(C)},
                         **{f"light{j}": float(x) for j, x in enumerate(light)},
                         "checker": float(rng.uniform(2, 6)) if rng.random() < 0.7 else 0.0})
    return pd.DataFrame(rows)


def rig_pose(row) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([getattr(row, f"r{j}") for j in range(9)]).reshape(3, 3),
            np.array([getattr(row, f"c{j}") for j in range(3)]))


def annotate_job(job: dict) -> dict[str, np.ndarray]:
    """Worker: layered GT of a shard of views (one torch thread)."""
    torch_worker(1)
    meshes = _arrays(job["mesh_path"])
    out = {"z": [], "stop": [], "count": [], "face": []}
    for mesh_id, R, C in job["views"]:
        m = mesh_of(meshes, mesh_id)
        lay = RD.layered_view(m.vertices, m.faces, R, C, job["width"], job["f"], job["lmax"], job["min_area"])
        for k in out:
            out[k].append(getattr(lay, k))
    return {k: np.stack(v) if v else np.zeros((0,)) for k, v in out.items()}


def layered_gt(p: LariParams, catalog: pd.DataFrame, rigs: pd.DataFrame, out_dir: Path, imap) -> pd.DataFrame:
    """Layered depth per view (layered_<kind>.npz: z float32 (N, H, W, Lmax), stop, count, face) and per-view
    statistics (hit / odd-parity / > 2-layer pixels, layer areas). `imap(fn, jobs)` runs the shards."""
    rows = []
    for kind in KINDS:
        r = rigs[rigs["scene_kind"] == kind].reset_index(drop=True)
        mesh_path = str(resolve_data_ref(catalog.loc[catalog["scene_kind"] == kind, "path"].iloc[0]))
        views = [(x.mesh_id, *rig_pose(x)) for x in r.itertuples(index=False)]
        shards = max(1, min(len(views), 8))
        bounds = np.linspace(0, len(views), shards + 1).astype(int)
        jobs = [{"mesh_path": mesh_path, "views": views[a:b], "width": p.image, "f": D.focal_length(p.image),
                 "lmax": p.lmax, "min_area": p.min_layer_area} for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        parts = list(imap(annotate_job, jobs))
        arrays = {k: np.concatenate([q[k] for q in parts]) for k in ("z", "stop", "count", "face")}
        arrays = {"z": arrays["z"].astype(np.float32), "stop": arrays["stop"].astype(np.int8),
                  "count": arrays["count"].astype(np.int16), "face": arrays["face"].astype(np.int32)}
        path = D.save_arrays(out_dir / f"layered_{kind}.npz", arrays)
        _forget(path)
        tight = dict(zip(catalog["mesh_id"], catalog["watertight"]))
        for i, x in enumerate(r.itertuples(index=False)):
            count, stop = arrays["count"][i], arrays["stop"][i]
            rows.append({"scene_kind": kind, "mesh_id": x.mesh_id, "view": x.view, "index": i,
                         "watertight": bool(tight[x.mesh_id]), "hit_pixels": int((count > 0).sum()),
                         "odd_pixels": int((count % 2 == 1).sum()), "multi_pixels": int((count > 2).sum()),
                         "layers": int(stop.max()), "path": data_ref(path), "md5": file_md5(path),
                         **{f"area_l{l + 1}": int((stop > l).sum()) for l in range(p.lmax)}})
    return pd.DataFrame(rows)


def rgb_renders(p: LariParams, catalog: pd.DataFrame, rigs: pd.DataFrame, layered: pd.DataFrame, seed_for,
                out_dir: Path) -> pd.DataFrame:
    """Lambert + ambient RGB of the first hit (rgb_<kind>.npz, uint8 (N, H, W, 3)); foreground vs layer-1
    mismatch per view; views over `reject_mismatch` are rejected."""
    rows = []
    for kind in KINDS:
        lay_rows = layered[layered["scene_kind"] == kind].reset_index(drop=True)
        lay = _arrays(resolve_data_ref(lay_rows["path"].iloc[0]))
        meshes = _arrays(resolve_data_ref(catalog.loc[catalog["scene_kind"] == kind, "path"].iloc[0]))
        r = rigs[rigs["scene_kind"] == kind].reset_index(drop=True)
        images = []
        for i, x in enumerate(r.itertuples(index=False)):
            m = mesh_of(meshes, x.mesh_id)
            albedo = np.random.default_rng(seed_for("albedo", x.mesh_id)).uniform(0.3, 1.0, size=(m.part.max() + 1, 3))
            R, C = rig_pose(x)
            layered_view = RD.Layered(lay["z"][i].astype(np.float64), lay["stop"][i].astype(np.int64),
                                      lay["count"][i].astype(np.int64), lay["face"][i].astype(np.int64))
            rgb = RD.shade(m.vertices, m.faces, m.part, layered_view, R, C, x.f, albedo,
                           np.array([x.light0, x.light1, x.light2]), x.checker)
            images.append(rgb)
            mismatch = float((RD.foreground(rgb) != (lay["face"][i] >= 0)).mean())
            rows.append({"scene_kind": kind, "mesh_id": x.mesh_id, "view": x.view, "index": i,
                         "mismatch": mismatch, "rejected": mismatch > p.reject_mismatch})
        path = D.save_arrays(out_dir / f"rgb_{kind}.npz", {"rgb": np.stack(images)})
        _forget(path)
        for row in rows:
            if row["scene_kind"] == kind:
                row["path"], row["md5"] = data_ref(path), file_md5(path)
    return pd.DataFrame(rows)


def gt_surface_points(p: LariParams, catalog: pd.DataFrame, seed_for, out_dir: Path) -> pd.DataFrame:
    """`surface_points` area-uniform samples per object mesh (world frame, float32; surface_object.npz)."""
    objects = catalog[catalog["scene_kind"] == "object"]
    meshes = _arrays(resolve_data_ref(objects["path"].iloc[0]))
    arrays = {f"s_{m}": D.sample_surface(mesh_of(meshes, m), p.surface_points,
                                         np.random.default_rng(seed_for("surface", m))).astype(np.float32)
              for m in objects["mesh_id"]}
    path = D.save_arrays(out_dir / "surface_object.npz", arrays)
    _forget(path)
    return pd.DataFrame({"mesh_id": list(objects["mesh_id"]), "points": p.surface_points,
                         "path": data_ref(path), "md5": file_md5(path)})


def make_splits(p: LariParams, catalog: pd.DataFrame, rgb: pd.DataFrame, seed_for) -> pd.DataFrame:
    """Mesh-id-level train / val / test per kind (seeded permutation); val and test keep their first
    `eval_views` views; rejected views are left out. One row per kept view."""
    rows = []
    for kind in KINDS:
        s = scene_set(p, kind)
        ids = catalog.loc[catalog["scene_kind"] == kind, "mesh_id"].to_numpy()
        perm = np.random.default_rng(seed_for("split", kind)).permutation(len(ids))
        role = {}
        for j, i in enumerate(perm):
            role[ids[i]] = "train" if j < s.train else ("val" if j < s.train + s.val else "test")
        for x in rgb[rgb["scene_kind"] == kind].itertuples(index=False):
            split = role[x.mesh_id]
            if x.rejected or (split != "train" and x.view >= s.eval_views):
                continue
            rows.append({"scene_kind": kind, "mesh_id": x.mesh_id, "view": x.view, "split": split, "index": x.index})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- training
def training_jobs(p: LariParams, net: str, splits: pd.DataFrame, layered: pd.DataFrame, rgb: pd.DataFrame,
                  seed_for, device: str) -> list[dict]:
    """Point-map nets: kind × seed × L ∈ {L, 1} (+ the ablation L at the first seed, objects); stop nets:
    kind × seed (L + 1 classes)."""
    jobs = []
    for kind in KINDS:
        idx = splits.loc[(splits["scene_kind"] == kind) & (splits["split"] == "train"), "index"].astype(int).tolist()
        paths = {"layered": str(resolve_data_ref(layered.loc[layered["scene_kind"] == kind, "path"].iloc[0])),
                 "rgb": str(resolve_data_ref(rgb.loc[rgb["scene_kind"] == kind, "path"].iloc[0]))}
        for seed in p.seeds:
            if net == "pointmap":
                ls = [p.model.layers, 1] + (list(p.model.ablation_layers) if kind == "object" and seed == p.seeds[0]
                                            else [])
            else:
                ls = [p.model.layers]
            for L in ls:
                cfg = NN.NetConfig(net, L, p.model.width, p.model.levels, p.image)
                name = f"{net}_{kind}_L{L}_s{seed}"
                jobs.append({"name": name, "net": net, "kind": kind, "seed": seed, "layers": L, "cfg": cfg.as_dict(),
                             "train_seed": seed_for("train", name), "indices": idx, "paths": paths,
                             "f": D.focal_length(p.image), "train": {
                                 "steps": p.train.steps, "batch": p.train.batch, "lr": p.train.lr,
                                 "lr_min": p.train.lr_min, "weight_decay": p.train.weight_decay,
                                 "betas": tuple(p.train.betas)}, "device": device})
    return jobs


def train_job(job: dict) -> dict:
    """Worker: one net trained from scratch on the kind's training views (one torch thread)."""
    torch_worker(1)
    lay, rgb = _arrays(job["paths"]["layered"]), _arrays(job["paths"]["rgb"])
    idx = np.asarray(job["indices"], dtype=int)
    z = lay["z"][idx].astype(np.float64)
    points = RD.unproject(z[..., :job["layers"]], job["f"])
    out = NN.train_net(NN.NetConfig(**job["cfg"]), rgb["rgb"][idx], points, lay["stop"][idx].astype(np.int64),
                       seed=job["train_seed"], device=job["device"], **job["train"])
    return out


def model_row(job: dict, out: dict, ref: dict) -> dict:
    losses = np.asarray(out["losses"], dtype=float)
    k = max(1, len(losses) // 10)
    return {"net": job["net"], "scene_kind": job["kind"], "seed": job["seed"], "layers": job["layers"],
            "name": job["name"], "checkpoint": ref["checkpoint"], "md5": ref["md5"], "steps": len(losses),
            "parameters": int(out["parameters"]), "loss_first": float(losses[:k].mean()),
            "loss_last": float(losses[-k:].mean()), "losses": [float(x) for x in losses],
            "finite": bool(np.isfinite(losses).all() and all(bool(torch_finite(v)) for v in out["state"].values()))}


def torch_finite(tensor) -> bool:
    import torch

    return bool(torch.isfinite(tensor.float()).all()) if tensor.is_floating_point() else True


def load_model(row, kind: str, layers: int | None = None):
    state, sidecar = load_checkpoint(row["checkpoint"] if isinstance(row, dict) else row.checkpoint)
    return NN.load_net(state, sidecar["config"], kind, layers)


# ---------------------------------------------------------------- evaluation
def gt_sets(kind: str, z_gt: np.ndarray, stop_gt: np.ndarray, f: float, surface_cam: np.ndarray | None) -> dict:
    """Evaluation GT of one view: objects {"surface"}; rooms {"visible": layer 1, "unseen": layers ≥ 2}."""
    if kind == "object":
        return {"surface": surface_cam}
    pts = RD.unproject(z_gt, f)
    mask = M.layer_mask(stop_gt, z_gt.shape[-1])
    return {"visible": pts[..., 0, :][mask[..., 0]], "unseen": pts[..., 1:, :][mask[..., 1:]]}


def align_to_gt(pred: np.ndarray, z_gt: np.ndarray, stop_gt: np.ndarray, f: float) -> np.ndarray:
    """SSI-align a predicted layer map (H, W, L, 3) to the GT layered points over the layers they share."""
    L = pred.shape[-2]
    gt = RD.unproject(z_gt, f)[..., :L, :]
    mask = M.layer_mask(stop_gt, z_gt.shape[-1])[..., :L]
    if L > gt.shape[-2]:
        raise ValueError("prediction has more layers than the stored GT")
    s, t = M.ssi_fit(pred, gt, mask)
    return M.aligned(pred, s, t)


def split_points(points: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(visible (n, 3), hidden (m, 3)) predicted points of layer 1 and layers ≥ 2 under stop (H, W)."""
    mask = M.layer_mask(stop, points.shape[-2])
    return points[..., 0, :][mask[..., 0]], points[..., 1:, :][mask[..., 1:]]


def score(kind: str, visible: np.ndarray, hidden: np.ndarray, gt: dict, thresholds) -> dict[str, float]:
    """Objects: CD / F of all predicted points vs the surface samples; rooms: visible vs GT layer 1, unseen vs
    GT layers ≥ 2 and all vs all (prefixed visible_ / unseen_ / all_)."""
    if kind == "object":
        return M.chamfer_f(np.concatenate([visible, hidden]), gt["surface"], thresholds)
    out = {}
    pairs = {"visible": (visible, gt["visible"]), "unseen": (hidden, gt["unseen"]),
             "all": (np.concatenate([visible, hidden]), np.concatenate([gt["visible"], gt["unseen"]]))}
    for name, (pr, g) in pairs.items():
        out.update({f"{name}_{k}": v for k, v in M.chamfer_f(pr, g, thresholds).items()})
    return out


def headline(kind: str) -> str:
    """The metric a τ is chosen on (F@0.05 of everything)."""
    return "f@0.05" if kind == "object" else "all_f@0.05"


def _eval_inputs(job: dict, split: str):
    lay, rgb = _arrays(job["paths"]["layered"]), _arrays(job["paths"]["rgb"])
    idx = np.asarray(job["views"][split]["index"], dtype=int)
    surface = _arrays(job["paths"]["surface"]) if job["kind"] == "object" else None
    gts = []
    for i, (mesh_id, R, C) in zip(idx, job["views"][split]["poses"]):
        cam = None
        if surface is not None:
            cam = (surface[f"s_{mesh_id}"].astype(np.float64) - C) @ R    # world → camera: Rᵀ(X − C)
        gts.append(gt_sets(job["kind"], lay["z"][i].astype(np.float64), lay["stop"][i].astype(np.int64), job["f"],
                           cam))
    return rgb["rgb"][idx], lay["z"][idx].astype(np.float64), lay["stop"][idx].astype(np.int64), gts


def threshold_job(job: dict) -> dict:
    """Worker: τ on P(S ≥ l) maximising mean validation F@0.05 for one (kind, seed); argmax for reference."""
    torch_worker(1)
    rgb, z, stop, gts = _eval_inputs(job, "val")
    L = job["layers"]
    pts = NN.predict_points(load_model(job["pointmap"], "pointmap", L), rgb)
    probs = NN.predict_stop_probs(load_model(job["stop"], "stop", L), rgb)
    aligned = [align_to_gt(pts[i], z[i], stop[i], job["f"]) for i in range(len(rgb))]
    key = headline(job["kind"])

    def mean_f(stops):
        return float(np.mean([score(job["kind"], *split_points(aligned[i], stops[i]), gts[i], (0.05,))[key]
                              for i in range(len(rgb))]))

    grid = [mean_f(NN.stop_threshold_rule(probs, tau)) for tau in job["tau_grid"]]
    best = int(np.argmax(grid))
    return {"scene_kind": job["kind"], "seed": job["seed"], "tau": float(job["tau_grid"][best]),
            "val_f_tau": grid[best], "val_f_argmax": mean_f(NN.stop_argmax(probs)),
            "grid_f": [float(g) for g in grid], "tau_grid": [float(t) for t in job["tau_grid"]],
            "val_views": len(rgb)}


def eval_jobs(p: LariParams, models: pd.DataFrame, splits: pd.DataFrame, layered: pd.DataFrame, rgb: pd.DataFrame,
              rigs: pd.DataFrame, surface: pd.DataFrame, thresholds: pd.DataFrame | None = None) -> list[dict]:
    """One job per (kind, seed): checkpoints, paths and the val / test views with their poses."""
    jobs = []
    pose = {(r.mesh_id, r.view): rig_pose(r) for r in rigs.itertuples(index=False)}
    for kind in KINDS:
        views = {}
        for split in ("val", "test"):
            s = splits[(splits["scene_kind"] == kind) & (splits["split"] == split)]
            views[split] = {"index": s["index"].astype(int).tolist(), "mesh_id": s["mesh_id"].tolist(),
                            "poses": [(m, *pose[(m, v)]) for m, v in zip(s["mesh_id"], s["view"])]}
        paths = {"layered": str(resolve_data_ref(layered.loc[layered["scene_kind"] == kind, "path"].iloc[0])),
                 "rgb": str(resolve_data_ref(rgb.loc[rgb["scene_kind"] == kind, "path"].iloc[0])),
                 "surface": str(resolve_data_ref(surface["path"].iloc[0]))}
        for seed in p.seeds:
            mine = models[(models["scene_kind"] == kind) & (models["seed"] == seed)]
            nets = {(r.net, int(r.layers)): {"checkpoint": r.checkpoint} for r in mine.itertuples(index=False)}
            tau = None
            if thresholds is not None:
                tau = float(thresholds.loc[(thresholds["scene_kind"] == kind) & (thresholds["seed"] == seed),
                                           "tau"].iloc[0])
            jobs.append({"kind": kind, "seed": seed, "layers": p.model.layers, "f": D.focal_length(p.image),
                         "paths": paths, "views": views, "tau_grid": list(p.eval.tau_grid), "tau": tau,
                         "pointmap": nets[("pointmap", p.model.layers)], "visible": nets[("pointmap", 1)],
                         "stop": nets[("stop", p.model.layers)], "thresholds": list(p.eval.thresholds),
                         "z_rule_tau": p.eval.z_rule_tau, "examples": p.eval.examples if seed == p.seeds[0] else 0,
                         "ablation": {L: nets[("pointmap", L)] for L in p.model.ablation_layers
                                      if ("pointmap", L) in nets}})
    return jobs


def predict_job(job: dict) -> dict:
    """Worker: every method on the test views of one (kind, seed) → per-view metric rows, stop-index
    confusion, layer-order counts and (first seed) example arrays for the report."""
    torch_worker(1)
    kind, f, L, thr = job["kind"], job["f"], job["layers"], tuple(job["thresholds"])
    rgb, z, stop_gt, gts = _eval_inputs(job, "test")
    pts = NN.predict_points(load_model(job["pointmap"], "pointmap", L), rgb)
    vis = NN.predict_points(load_model(job["visible"], "pointmap", 1), rgb)
    probs = NN.predict_stop_probs(load_model(job["stop"], "stop", L), rgb)
    s_arg = NN.stop_argmax(probs)
    s_tau = NN.stop_threshold_rule(probs, job["tau"])
    ablation = {l: NN.predict_points(load_model(ref, "pointmap", l), rgb) for l, ref in job["ablation"].items()}
    rows, violations, pairs = [], 0, 0
    examples = {"rgb": [], "z_gt": [], "stop_gt": [], "z_pred": [], "stop_pred": []}
    for i in range(len(rgb)):
        a = align_to_gt(pts[i], z[i], stop_gt[i], f)
        methods = {"lari": split_points(a, s_arg[i]), "lari_tau": split_points(a, s_tau[i]),
                   "lari_gt_mask": split_points(a, np.minimum(stop_gt[i], L)),
                   "lari_all_valid": split_points(a, np.full_like(s_arg[i], L)),
                   "lari_z_rule": split_points(a, M.z_rule_stop(a, job["z_rule_tau"]))}
        # diagnostic: LaRI's layer 1 aligned on GT layer 1 alone (as visible-only is), no hidden layers
        a1 = align_to_gt(pts[i][..., :1, :], z[i], stop_gt[i], f)
        methods["lari_layer1_only"] = (split_points(a1, np.minimum(s_arg[i], 1))[0], np.zeros((0, 3)))
        av = align_to_gt(vis[i], z[i], stop_gt[i], f)
        visible = split_points(av, np.minimum(s_arg[i], 1))
        methods["visible_only"] = visible
        completed = M.mirrored_completion(av[..., 0, :], s_arg[i] >= 1)
        methods["heuristic_mirror"] = (visible[0], completed[len(visible[0]):])
        for l, pl in ablation.items():
            methods[f"lari_L{l}"] = split_points(align_to_gt(pl[i], z[i], stop_gt[i], f), np.minimum(s_arg[i], l))
        for name, (v_pts, h_pts) in methods.items():
            for metric, value in score(kind, v_pts, h_pts, gts[i], thr).items():
                rows.append({"scene_kind": kind, "seed": job["seed"], "method": name, "view": i, "metric": metric,
                             "value": float(value)})
        bad, n = M.order_violations(a, s_arg[i])
        violations, pairs = violations + bad, pairs + n
        if i < job["examples"]:
            for k, v in (("rgb", rgb[i]), ("z_gt", z[i]), ("stop_gt", stop_gt[i]), ("z_pred", a[..., 2]),
                         ("stop_pred", s_arg[i])):
                examples[k].append(v)
    gt_clip = np.minimum(stop_gt, L)
    confusion = np.zeros((L + 1, L + 1), dtype=int)
    np.add.at(confusion, (gt_clip.reshape(-1), s_arg.reshape(-1)), 1)
    return {"rows": rows, "confusion": confusion, "violations": violations, "pairs": pairs,
            "examples": {k: np.stack(v) for k, v in examples.items() if v}}


def stop_rows(kind: str, seed: int, confusion: np.ndarray, violations: int, pairs: int) -> list[dict]:
    """Per-view-free rows of the stop index: accuracy, majority rate, per-class recall, order violations."""
    total = confusion.sum()
    rows = [("stop_accuracy", np.trace(confusion) / total), ("stop_majority_rate", confusion.sum(1).max() / total),
            ("order_violations", violations / pairs if pairs else 0.0), ("order_pairs", pairs)]
    rows += [(f"stop_recall_S{c}", confusion[c, c] / confusion[c].sum() if confusion[c].sum() else float("nan"))
             for c in range(len(confusion))]
    return [{"scene_kind": kind, "seed": seed, "method": "lari", "view": -1, "metric": m, "value": float(v)}
            for m, v in rows]


# ---------------------------------------------------------------- performance (wall clock)
def perf_benchmark(p: LariParams, catalog: pd.DataFrame, rigs: pd.DataFrame, splits: pd.DataFrame,
                   rgb: pd.DataFrame, models: pd.DataFrame) -> pd.DataFrame:
    """Views/s of our caster vs trimesh's multi-hit intersector on the same test meshes (the same de-duplicated
    hits asserted), and ms/image of LaRI (both nets) vs visible-only, batch 1, one thread."""
    import trimesh

    torch = torch_worker(1)
    test = splits[(splits["scene_kind"] == "object") & (splits["split"] == "test") & (splits["view"] == 0)]
    ids = test["mesh_id"].tolist()[:p.perf.meshes]
    meshes = _arrays(resolve_data_ref(catalog.loc[catalog["scene_kind"] == "object", "path"].iloc[0]))
    f = D.focal_length(p.image)
    d_cam = RD.pixel_directions(p.image, p.image, f).reshape(-1, 3)
    ours = theirs = 0.0
    agree = rays = 0
    for mesh_id in ids:
        m = mesh_of(meshes, mesh_id)
        R, C = rig_pose(next(rigs[(rigs["mesh_id"] == mesh_id) & (rigs["view"] == 0)].itertuples(index=False)))
        d = d_cam @ R.T
        o = np.broadcast_to(C, d.shape).copy()
        t0 = time.perf_counter()
        t, face = RD.cast(m.vertices, m.faces, o, d)
        z_ours, _ = RD.dedupe(t * d_cam[:, 2:3], face)
        ours += time.perf_counter() - t0
        t0 = time.perf_counter()
        z_theirs = trimesh_hits(m, o, d, d_cam)
        theirs += time.perf_counter() - t0
        agree += same_hits(z_ours, z_theirs)
        rays += len(d)
    if agree < 0.995 * rays:
        raise AssertionError(f"caster and trimesh disagree on {rays - agree} of {rays} rays")
    rows = [("caster_views_per_s", len(ids) / ours), ("trimesh_views_per_s", len(ids) / theirs),
            ("caster_speedup", theirs / ours), ("rays_same_hits", agree / rays)]
    obj = models[(models["scene_kind"] == "object") & (models["seed"] == p.seeds[0])]
    pick = {(r.net, int(r.layers)): r for r in obj.itertuples(index=False)}
    lari = load_model(pick[("pointmap", p.model.layers)], "pointmap", p.model.layers)
    stop = load_model(pick[("stop", p.model.layers)], "stop", p.model.layers)
    vis = load_model(pick[("pointmap", 1)], "pointmap", 1)
    imgs = NN.to_batch(_arrays(resolve_data_ref(rgb["path"].iloc[0]))["rgb"][:p.perf.images])

    def ms(*nets):
        with torch.no_grad():
            for net in nets:
                net(imgs[:1])
            t0 = time.perf_counter()
            for i in range(len(imgs)):
                for net in nets:
                    net(imgs[i:i + 1])
        return (time.perf_counter() - t0) / len(imgs) * 1000

    lari_ms, vis_ms = ms(lari, stop), ms(vis)
    rows += [("lari_ms_per_image", lari_ms), ("visible_ms_per_image", vis_ms), ("lari_vs_visible", lari_ms / vis_ms)]
    _ = trimesh  # imported for its intersector in trimesh_hits
    return pd.DataFrame([{"metric": k, "value": float(v)} for k, v in rows])


def trimesh_hits(mesh: D.Mesh, origins: np.ndarray, directions: np.ndarray, d_cam: np.ndarray) -> np.ndarray:
    """(R, K) de-duplicated camera z of trimesh's multi-hit intersector (+inf padded), our dedupe applied."""
    import trimesh

    tm = trimesh.Trimesh(mesh.vertices, mesh.faces, process=False)
    tri, ray, loc = trimesh.ray.ray_triangle.RayMeshIntersector(tm).intersects_id(
        origins, directions, multiple_hits=True, return_locations=True)
    t = ((loc - origins[ray]) * directions[ray]).sum(1) / (directions[ray] ** 2).sum(1)
    keep = t > RD.HIT_EPS
    ray, t, tri = ray[keep], t[keep], tri[keep]
    width = max(1, int(np.bincount(ray, minlength=len(origins)).max()) if len(ray) else 1)
    z = np.full((len(origins), width), np.inf)
    faces = np.full((len(origins), width), -1)
    order = np.lexsort((t, ray))
    ray, t, tri = ray[order], t[order], tri[order]
    slot = np.arange(len(ray)) - np.searchsorted(ray, ray)
    z[ray, slot] = t * d_cam[ray, 2]
    faces[ray, slot] = tri
    return RD.dedupe(z, faces)[0]


def same_hits(a: np.ndarray, b: np.ndarray, tol: float = 1e-6) -> int:
    """Rays whose de-duplicated hit lists agree (same count, z within tol)."""
    width = max(a.shape[1], b.shape[1])
    a = np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=np.inf)
    b = np.pad(b, ((0, 0), (0, width - b.shape[1])), constant_values=np.inf)
    fa, fb = np.isfinite(a), np.isfinite(b)
    close = np.where(fa & fb, np.abs(np.where(fa, a, 0) - np.where(fb, b, 0)) < tol, fa == fb)
    return int(close.all(1).sum())


def save_examples(path: Path, per_kind: dict[str, dict[str, np.ndarray]]) -> Path:
    """The report's example views (first seed): {kind: {rgb, z_gt, stop_gt, z_pred, stop_pred}} → one .npz."""
    return D.save_arrays(path, {f"{kind}__{k}": v for kind, ex in per_kind.items() for k, v in ex.items()})


def load_examples(path: Path) -> dict[str, dict[str, np.ndarray]]:
    out: dict[str, dict[str, np.ndarray]] = {}
    if Path(path).exists():
        for key, value in D.load_arrays(Path(path)).items():
            kind, name = key.split("__")
            out.setdefault(kind, {})[name] = value
    return out
