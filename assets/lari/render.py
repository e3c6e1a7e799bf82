"""Our "rendering engine": pixel rays, a batched Möller–Trumbore multi-hit caster (torch), layered
ground truth (camera z per layer, stop index) and Lambertian RGB of the first hit. No Dagster import.

Conventions: pixel (u, v) = (column, row) has its ray through the pixel centre (u + 0.5, v + 0.5), for
RGB and ground truth alike. Intrinsics: focal f (pixels) and principal point (cx, cy) = (W/2, H/2).
A hit at ray length t along the unit camera-frame direction d has camera depth z = t · d_z; its camera
point is (X, Y, Z) = t · d, so X = (u + 0.5 − cx) · z / f and Y = (v + 0.5 − cy) · z / f.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEDUPE_EPS = 1e-6      # hits closer than this in z are one surface (shared edges / vertices)
HIT_EPS = 1e-9         # t > ε: hits in front of the origin only
BARY_TOL = 1e-12       # inclusive barycentric test, as trimesh's
KEEP = 24              # hits kept per ray and face block before de-duplication


class CameraError(ValueError):
    """Bad intrinsics (f ≤ 0, non-finite) or image size."""


def check_intrinsics(f: float, width: int, height: int) -> None:
    if not np.isfinite(f) or f <= 0:
        raise CameraError(f"focal length must be finite and > 0, got {f}")
    if int(width) < 1 or int(height) < 1:
        raise CameraError(f"image size must be ≥ 1 × 1, got {width} × {height}")


def pixel_directions(width: int, height: int, f: float) -> np.ndarray:
    """(H, W, 3) unit ray directions in the camera frame through the pixel centres."""
    check_intrinsics(f, width, height)
    u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
    d = np.stack([(u - width / 2) / f, (v - height / 2) / f, np.ones_like(u)], axis=-1)
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def unproject(z: np.ndarray, f: float) -> np.ndarray:
    """Camera points (..., H, W, L, 3) from depths z (..., H, W, L) at every pixel centre; z = 0 stays (0, 0, 0)."""
    h, w = z.shape[-3], z.shape[-2]
    u, v = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    x = (u - w / 2)[..., None] * z / f
    y = (v - h / 2)[..., None] * z / f
    return np.stack([x, y, z], axis=-1)


def project(points: np.ndarray, f: float, width: int, height: int) -> np.ndarray:
    """Pixel indices (..., 2) = (u, v) of camera points (..., 3): u = f X / Z + cx − 0.5."""
    z = points[..., 2]
    return np.stack([f * points[..., 0] / z + width / 2 - 0.5, f * points[..., 1] / z + height / 2 - 0.5], axis=-1)


def _block_bounds(tri, block: int):
    """Faces sorted along the longest axis into blocks of `block`: (order, (B, 2, 3) AABBs)."""
    cent = tri.mean(dim=1)
    axis = int(((cent.max(0).values - cent.min(0).values)).argmax())
    order = cent[:, axis].argsort()
    boxes = []
    for s in range(0, len(order), block):
        t = tri[order[s:s + block]].reshape(-1, 3)
        boxes.append(np.stack([t.min(0).values.numpy(), t.max(0).values.numpy()]))
    return order, np.stack(boxes)


def _ray_box(o, d, box):
    """(R,) bool: the rays hit the AABB box (2, 3) in front of the origin (slab test)."""
    import torch

    inv = 1.0 / torch.where(d.abs() < 1e-12, torch.full_like(d, 1e-12), d)
    lo = (torch.as_tensor(box[0], dtype=o.dtype) - o) * inv
    hi = (torch.as_tensor(box[1], dtype=o.dtype) - o) * inv
    tmin = torch.minimum(lo, hi).max(dim=1).values
    tmax = torch.maximum(lo, hi).min(dim=1).values
    return (tmax >= torch.clamp(tmin, min=0)) & (tmax > 0)


def cast(vertices: np.ndarray, faces: np.ndarray, origins: np.ndarray, directions: np.ndarray,
         block: int = 256, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """Every forward hit of each ray (Möller–Trumbore, float64, box culling per face block).

    origins, directions: (R, 3) world; directions need not be unit (t is in units of |d|).
    Returns t (R, K) ray parameters sorted ascending, padded with +inf, and face (R, K) int64
    (−1 for padding), with K ≤ KEEP per block merged; duplicates are NOT removed here.
    """
    import torch

    tri = torch.as_tensor(np.asarray(vertices, np.float64)[np.asarray(faces)])
    order, boxes = _block_bounds(tri, block)
    o_all = torch.from_numpy(np.array(origins, dtype=np.float64))          # a copy (inputs may be read-only)
    d_all = torch.from_numpy(np.array(directions, dtype=np.float64))
    out_t, out_f = [], []
    for s in range(0, len(o_all), chunk):
        o, d = o_all[s:s + chunk], d_all[s:s + chunk]
        ts, fs = [torch.full((len(o), 1), torch.inf, dtype=torch.float64)], [torch.full((len(o), 1), -1)]
        for b in range(len(boxes)):
            rows = _ray_box(o, d, boxes[b]).nonzero().squeeze(1)
            if len(rows) == 0:
                continue
            idx = order[b * block:(b + 1) * block]
            v0, v1, v2 = tri[idx, 0], tri[idx, 1], tri[idx, 2]
            e1, e2 = v1 - v0, v2 - v0                                       # (F, 3)
            ro, rd = o[rows][:, None, :], d[rows][:, None, :]                # (r, 1, 3)
            p = torch.cross(rd.expand(-1, len(idx), -1), e2[None].expand(len(rows), -1, -1), dim=-1)
            det = (e1[None] * p).sum(-1)
            ok = det.abs() > 1e-15
            inv = 1.0 / torch.where(ok, det, torch.ones_like(det))
            sv = ro - v0[None]
            u = (sv * p).sum(-1) * inv
            q = torch.cross(sv, e1[None].expand(len(rows), -1, -1), dim=-1)
            v = (rd * q).sum(-1) * inv
            t = (e2[None] * q).sum(-1) * inv
            hit = ok & (u >= -BARY_TOL) & (v >= -BARY_TOL) & (u + v <= 1 + BARY_TOL) & (t > HIT_EPS)
            t = torch.where(hit, t, torch.full_like(t, torch.inf))
            k = min(KEEP, len(idx))
            tk, ik = torch.topk(t, k, dim=1, largest=False)
            full_t = torch.full((len(o), k), torch.inf, dtype=torch.float64)
            full_f = torch.full((len(o), k), -1)
            full_t[rows] = tk
            full_f[rows] = torch.where(torch.isfinite(tk), idx[ik], torch.full_like(ik, -1))
            ts.append(full_t)
            fs.append(full_f)
        t_cat, f_cat = torch.cat(ts, 1), torch.cat(fs, 1)
        t_sorted, j = t_cat.sort(dim=1)
        f_sorted = torch.gather(f_cat, 1, j)
        width = int(torch.isfinite(t_sorted).sum(1).max()) if len(t_sorted) else 0
        out_t.append(t_sorted[:, :max(width, 1)].numpy())
        out_f.append(f_sorted[:, :max(width, 1)].numpy())
    width = max(a.shape[1] for a in out_t)
    pad = [(np.pad(t, ((0, 0), (0, width - t.shape[1])), constant_values=np.inf),
            np.pad(f, ((0, 0), (0, width - f.shape[1])), constant_values=-1)) for t, f in zip(out_t, out_f)]
    return np.concatenate([p[0] for p in pad]), np.concatenate([p[1] for p in pad])


def dedupe(z: np.ndarray, face: np.ndarray, eps: float = DEDUPE_EPS) -> tuple[np.ndarray, np.ndarray]:
    """Merge sorted hits closer than eps in z (one surface hit through a shared edge or vertex).

    z, face: (R, K) sorted ascending, +inf / −1 padded. Returns the same layout with duplicates removed
    (kept: the first of each run of hits less than eps apart, so genuinely thin walls ≥ eps stay).
    """
    keep = np.isfinite(z)
    with np.errstate(invalid="ignore"):                      # inf − inf on the padding
        keep[:, 1:] &= (z[:, 1:] - z[:, :-1]) >= eps          # z sorted: a run of near-equal hits keeps its first
    order = np.argsort(~keep, axis=1, kind="stable")        # kept hits first, in depth order
    out_z = np.take_along_axis(np.where(keep, z, np.inf), order, axis=1)
    out_f = np.take_along_axis(np.where(keep, face, -1), order, axis=1)
    return out_z, out_f


@dataclass(frozen=True)
class Layered:
    """Layered ground truth of one view.

    z (H, W, Lmax) camera depth of the first Lmax de-duplicated hits (0 where invalid), stop (H, W)
    number of valid layers after the area filter, count (H, W) all de-duplicated hits (parity),
    face (H, W) face index of the first hit (−1: background).
    """

    z: np.ndarray
    stop: np.ndarray
    count: np.ndarray
    face: np.ndarray


def layered_view(mesh_vertices: np.ndarray, faces: np.ndarray, R: np.ndarray, C: np.ndarray, width: int,
                 f: float, lmax: int, min_area: float) -> Layered:
    """Cast one ray per pixel centre and build the layered depth of one view.

    Layers whose valid area is under `min_area` × layer 1's area are dropped (with every deeper layer,
    so the mask stays a prefix); stop = number of kept layers ≤ lmax.
    """
    d_cam = pixel_directions(width, width, f).reshape(-1, 3)
    d_world = d_cam @ np.asarray(R).T
    origins = np.broadcast_to(np.asarray(C, np.float64), d_world.shape)
    t, face = cast(mesh_vertices, faces, origins, d_world)
    z_all = t * d_cam[:, 2:3]                                   # camera z = t · (d · ẑ)
    z_all, face = dedupe(z_all, face)
    count = np.isfinite(z_all).sum(1)
    k = min(lmax, z_all.shape[1])
    z = np.zeros((len(z_all), lmax))
    z[:, :k] = np.where(np.isfinite(z_all[:, :k]), z_all[:, :k], 0.0)
    stop = np.minimum(count, lmax)
    area = np.array([(stop > l).sum() for l in range(lmax)])
    keep_layers = lmax
    for l in range(1, lmax):
        if area[0] == 0 or area[l] < min_area * area[0]:
            keep_layers = l
            break
    stop = np.minimum(stop, keep_layers)
    z[np.arange(lmax)[None, :] >= stop[:, None]] = 0.0
    h = w = width
    return Layered(z.reshape(h, w, lmax), stop.reshape(h, w).astype(np.int64), count.reshape(h, w).astype(np.int64),
                   face[:, 0].reshape(h, w).astype(np.int64))


def shade(vertices: np.ndarray, faces: np.ndarray, part: np.ndarray, layered: Layered, R: np.ndarray,
          C: np.ndarray, f: float, albedo: np.ndarray, light: np.ndarray, checker: float,
          ambient: float = 0.3, diffuse: float = 0.7) -> np.ndarray:
    """Lambert + ambient RGB (H, W, 3) uint8 of the first hit; black background; no depth cue in colour.

    c = albedo[part] · texture · (ambient + diffuse · max(0, n · l)), with the face normal n turned toward
    the camera, l the unit light direction (world), texture = 0.75 + 0.25 · checker(world point · checker).
    """
    h, w = layered.face.shape
    fid = layered.face.reshape(-1)
    hit = fid >= 0
    img = np.zeros((h * w, 3))
    if hit.any():
        tri = vertices[faces[fid[hit]]]
        n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
        d_world = pixel_directions(w, h, f).reshape(-1, 3)[hit] @ np.asarray(R).T
        n = np.where(((n * d_world).sum(1) > 0)[:, None], -n, n)
        lam = np.clip(n @ (light / np.linalg.norm(light)), 0, None)
        pts_cam = unproject(layered.z[..., :1], f).reshape(-1, 3)[hit]
        world = pts_cam @ np.asarray(R).T + C
        tex = 0.75 + 0.25 * (np.floor(world * checker).sum(1) % 2) if checker > 0 else np.ones(hit.sum())
        img[hit] = albedo[part[fid[hit]]] * (tex * (ambient + diffuse * lam))[:, None]
    return np.clip(np.round(img * 255), 0, 255).astype(np.uint8).reshape(h, w, 3)


def foreground(rgb: np.ndarray, threshold: int = 10) -> np.ndarray:
    """(H, W) bool: the RGB foreground, sum of the uint8 channels > threshold (the paper's sum(rgb) > 100
    at its brighter renders; ours: any non-black pixel, the darkest lit surface sums to ≥ 40)."""
    return rgb.astype(np.int64).sum(-1) > threshold
