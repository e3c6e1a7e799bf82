"""Bring your own mesh or image.

    python -m assets.lari.cli annotate --mesh FILE [--out DIR] [--views 4] [--size 32] [--lmax 8] [--seed 0]
        layered GT (z per layer, stop index) + RGB for a mesh file (.obj, .off, .ply, .stl), normalised to the
        unit bbox, cameras on a sphere r ∈ [1.5, 2.2]: DIR/annotation.npz and DIR/view_<i>.png
    python -m assets.lari.cli predict --image FILE [--data-dir DIR] [--kind object] [--seed 0] [--layers 4]
                                      [--checkpoint PT] [--stop-checkpoint PT] [--out FILE.ply]
        layered points of the valid layers (predicted stop index, argmax) as an ASCII .ply, camera frame, up to the
        scale / z-shift the SSI-invariant training leaves free; checkpoints default to the trained ones under
        DIR/lari/checkpoints (DIR: PAPERLAB_DATA_DIR or data/).

Bad input (a missing, empty or unreadable file, an unknown mesh or image extension, wrong image shape or dtype,
non-finite pixels or vertices, f ≤ 0, an empty or degenerate mesh, a checkpoint of another L) exits with status 2
and one stderr line naming the file or parameter. Counts and sizes are checked before any file is read.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from assets.common.inputs import InputError, check_range, read_image, read_mesh, run_cli
from assets.lari import data as D
from assets.lari import model as NN
from assets.lari import render as RD


def load_mesh(path: Path) -> D.Mesh:
    """A mesh file as a unit-bbox Mesh (InputError for an unreadable file, MeshError if degenerate)."""
    v, f = read_mesh(path)
    D.validate_mesh(v, f, str(path))
    return D.Mesh(D.normalise(v), f, np.zeros(len(f), np.int64))


def annotate(mesh: D.Mesh, views: int, size: int, lmax: int, seed: int, f: float | None = None,
             min_area: float = 0.03) -> dict[str, np.ndarray]:
    """{"z" (V, H, W, lmax), "stop" (V, H, W), "count", "rgb" (V, H, W, 3) uint8, "R", "C", "f"} for `views` views."""
    f = D.focal_length(size) if f is None else float(f)
    RD.check_intrinsics(f, size, size)
    rng = np.random.default_rng(seed)
    out = {"z": [], "stop": [], "count": [], "rgb": [], "R": [], "C": []}
    for R, C in D.object_cameras(rng, views, (1.5, 2.2)):
        lay = RD.layered_view(mesh.vertices, mesh.faces, R, C, size, f, lmax, min_area)
        light = -R[:, 2] + 0.6 * rng.normal(size=3)
        rgb = RD.shade(mesh.vertices, mesh.faces, mesh.part, lay, R, C, f, rng.uniform(0.3, 1, size=(1, 3)),
                       light, 4.0)
        for k, v in (("z", lay.z), ("stop", lay.stop), ("count", lay.count), ("rgb", rgb), ("R", R), ("C", C)):
            out[k].append(v)
    arrays = {k: np.stack(v) for k, v in out.items()}
    arrays["f"] = np.array(f)
    return arrays


def load_image(path: Path) -> np.ndarray:
    """An image file (.png, .jpg, .jpeg, .npy) as an array, unchanged; refused here when it is not
    H × W × 3 or has non-finite pixels (check_image checks the networks' size and the range later)."""
    img = read_image(path)
    if img.ndim != 3 or img.shape[-1] != 3:
        raise InputError(f"{path}: an RGB image (H, W, 3) is needed, got shape {img.shape}")
    if img.dtype.kind == "f" and not np.isfinite(img).all():
        bad = np.argwhere(~np.isfinite(img))[0]
        raise InputError(f"{path}: non-finite pixels (first at row {bad[0]}, column {bad[1]})")
    return img


def predict(image: np.ndarray, pointmap_ckpt: Path, stop_ckpt: Path, layers: int) -> tuple[np.ndarray, np.ndarray]:
    """(points (N, 3), layer index (N,)) of the valid predicted layers of one image."""
    from resources.artifacts import load_state_dict

    state, side = load_state_dict(pointmap_ckpt)
    pm = NN.load_net(state, side["config"], "pointmap", layers)
    state, side = load_state_dict(stop_ckpt)
    st = NN.load_net(state, side["config"], "stop", layers)
    img = NN.check_image(image, pm.cfg.image)
    rgb = np.round(img * 255).astype(np.uint8)[None]
    pts = NN.predict_points(pm, rgb)[0]
    stop = NN.stop_argmax(NN.predict_stop_probs(st, rgb))[0]
    mask = np.arange(layers)[None, None, :] < stop[..., None]
    return pts[mask], np.broadcast_to(np.arange(layers), mask.shape)[mask]


def write_ply(path: Path, points: np.ndarray, layer: np.ndarray) -> Path:
    lines = ["ply", "format ascii 1.0", f"element vertex {len(points)}", "property float x", "property float y",
             "property float z", "property uchar layer", "end_header"]
    lines += [f"{x:.6f} {y:.6f} {z:.6f} {int(l)}" for (x, y, z), l in zip(points, layer)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _check_params(args) -> None:
    if args.cmd == "annotate":
        check_range("--views", args.views, 1)
        check_range("--size", args.size, 2)
        check_range("--lmax", args.lmax, 1)
        if args.focal is not None:
            check_range("--focal", args.focal, 0, lo_open=True)
    else:
        check_range("--layers", args.layers, 1)


@run_cli
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m assets.lari.cli", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("annotate")
    a.add_argument("--mesh", type=Path, required=True)
    a.add_argument("--out", type=Path, default=Path("lari_annotation"))
    a.add_argument("--views", type=int, default=4)
    a.add_argument("--size", type=int, default=32)
    a.add_argument("--lmax", type=int, default=8)
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--focal", type=float, default=None, help="focal length in pixels (default 35/32 · size)")
    p = sub.add_parser("predict")
    p.add_argument("--image", type=Path, required=True)
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--kind", choices=["object", "room"], default="object")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--checkpoint", type=Path, default=None)
    p.add_argument("--stop-checkpoint", type=Path, default=None)
    p.add_argument("--out", type=Path, default=Path("lari_points.ply"))
    args = ap.parse_args(argv)
    _check_params(args)
    try:
        if args.cmd == "annotate":
            arrays = annotate(load_mesh(args.mesh), args.views, args.size, args.lmax, args.seed, args.focal)
            args.out.mkdir(parents=True, exist_ok=True)
            D.save_arrays(args.out / "annotation.npz", arrays)
            from PIL import Image

            for i, rgb in enumerate(arrays["rgb"]):
                Image.fromarray(rgb).save(args.out / f"view_{i}.png")
            print(f"{args.views} views → {args.out}/annotation.npz; stop index counts "
                  f"{np.bincount(arrays['stop'].ravel()).tolist()}")
        else:
            from resources.artifacts import data_root

            ckpt = (args.data_dir or data_root()) / "lari" / "checkpoints"
            pm = args.checkpoint or ckpt / f"pointmap_{args.kind}_L{args.layers}_s{args.seed}.pt"
            st = args.stop_checkpoint or ckpt / f"stop_{args.kind}_L{args.layers}_s{args.seed}.pt"
            image = load_image(args.image)
            for path in (pm, st):
                if not path.exists():
                    raise InputError(f"no checkpoint {path}: materialize the lari group first")
            try:
                pts, layer = predict(image, pm, st, args.layers)
            except NN.ImageError as err:
                raise InputError(f"{args.image}: {err}") from None
            write_ply(args.out, pts, layer)
            print(f"{len(pts)} points in {int(layer.max()) + 1 if len(layer) else 0} layers → {args.out}")
    except (D.MeshError, RD.CameraError, NN.CheckpointError) as err:
        raise InputError(str(err)) from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
