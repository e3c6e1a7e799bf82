"""Offline image data for VIAR: sklearn's bundled digits and seeded procedural shapes.

Pure numpy (sklearn only for the bundled digits file); no Dagster import.

Every dataset is returned as a tidy frame, one row per image:
    dataset   str    "digits" | "shapes"
    image_id  int64  unique within the dataset
    split     str    "train" | "val" | "test" (disjoint, stratified by label)
    label     int64  class index 0..n_classes-1 (the conditioning label)
    channels, height, width  int64   image shape (C, H, W)
    pixels    list[float32]  C*H*W values in [-1, 1], C-major (reshape to (C, H, W))
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

SPLITS = ("train", "val", "test")
GENERATOR_VERSION = "viar-data-1"
SHAPE_KINDS = ("circle", "square", "triangle", "ring")
# two colour families: warm (red/orange/yellow hues) and cool (blue/green/cyan hues), as RGB
# anchor colours; a shape's colour is an anchor of its family plus jitter.
COLOUR_FAMILIES = {
    "warm": np.array([[0.95, 0.25, 0.15], [0.95, 0.60, 0.10], [0.90, 0.85, 0.20]]),
    "cool": np.array([[0.15, 0.35, 0.95], [0.15, 0.80, 0.45], [0.20, 0.80, 0.90]]),
}
SHAPE_CLASSES = tuple(f"{kind}_{family}" for family in COLOUR_FAMILIES for kind in SHAPE_KINDS)
N_CLASSES = {"digits": 10, "shapes": len(SHAPE_CLASSES)}


def stratified_split(labels: np.ndarray, sizes: tuple[int, int, int], seed: int) -> np.ndarray:
    """Assign each item to train/val/test, stratified by label.

    labels: (n,) ints; sizes: (n_train, n_val, n_test) summing to at most n. Every class is
    split in the same proportions (rounded; the remainder goes to train, then test), so the
    class histogram of each split matches the whole set. Returns (n,) array of split names
    ("" for items left out when sum(sizes) < n).
    """
    labels = np.asarray(labels)
    n = len(labels)
    total = sum(sizes)
    if total > n:
        raise ValueError(f"split sizes {sizes} need {total} items, only {n} available")
    rng = np.random.default_rng(seed)
    out = np.full(n, "", dtype=object)
    fractions = np.asarray(sizes, dtype=float) / n
    for cls in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == cls))
        counts = np.floor(fractions * len(idx)).astype(int)
        start = 0
        for name, count in zip(SPLITS, counts):
            out[idx[start:start + count]] = name
            start += count
    # fix rounding: move left-out items into the split furthest below its target size
    left = rng.permutation(np.flatnonzero(out == ""))
    for i in left:
        deficits = [sizes[j] - int(np.sum(out == SPLITS[j])) for j in range(3)]
        j = int(np.argmax(deficits))
        if deficits[j] <= 0:
            break
        out[i] = SPLITS[j]
    return out


def load_digits_frame(sizes: tuple[int, int, int], seed: int, max_images: int | None = None) -> pd.DataFrame:
    """sklearn's bundled 8×8 digits (1797 images, 16 grey levels 0..16) scaled to [-1, 1].

    sizes: (train, val, test) counts, stratified; max_images keeps a stratified subset first
    (smoke profile). Not a fetch_*: the file ships inside the scikit-learn wheel.
    """
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = bunch.images.astype(np.float32)            # (1797, 8, 8) in [0, 16]
    labels = bunch.target.astype(np.int64)
    if max_images is not None and max_images < len(labels):
        keep = stratified_split(labels, (max_images, 0, 0), seed + 1) == "train"
        images, labels = images[keep], labels[keep]
    pixels = (images / 8.0 - 1.0).reshape(len(labels), 1, 8, 8)
    split = stratified_split(labels, sizes, seed)
    return _frame("digits", pixels, labels, split)


def _frame(dataset: str, pixels: np.ndarray, labels: np.ndarray, split: np.ndarray) -> pd.DataFrame:
    keep = split != ""
    pixels, labels, split = pixels[keep], labels[keep], split[keep]
    n, c, h, w = pixels.shape
    return pd.DataFrame({"dataset": dataset, "image_id": np.arange(n, dtype=np.int64),
                         "split": split.astype(str), "label": labels.astype(np.int64),
                         "channels": c, "height": h, "width": w,
                         "pixels": list(pixels.reshape(n, -1).astype(np.float32))})


def render_shape(kind: str, family: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """One RGB image (3, size, size) in [0, 1]: a shape of `kind` in a colour of `family`
    on a textured background.

    Random centre (shape fully inside), radius 0.22–0.38 of the size, colour = a family anchor
    + N(0, 0.05) jitter; background = dark grey with a random-orientation sinusoidal texture
    (amplitude 0.06) and pixel noise (σ 0.03), so classes differ only by shape and colour family.
    """
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) + 0.5
    radius = rng.uniform(0.22, 0.38) * size
    cx, cy = rng.uniform(radius + 0.5, size - radius - 0.5, size=2)
    dx, dy = xx - cx, yy - cy
    if kind == "circle":
        mask = dx ** 2 + dy ** 2 <= radius ** 2
    elif kind == "square":
        half = radius * 0.85
        mask = (np.abs(dx) <= half) & (np.abs(dy) <= half)
    elif kind == "triangle":
        # upward triangle: below the top vertex, above the base, inside both slanted edges
        top, base = cy - radius, cy + radius * 0.8
        slope = (yy - top) / max(base - top, 1e-6)
        mask = (yy >= top) & (yy <= base) & (np.abs(dx) <= slope * radius)
    elif kind == "ring":
        d2 = dx ** 2 + dy ** 2
        mask = (d2 <= radius ** 2) & (d2 >= (0.55 * radius) ** 2)
    else:
        raise ValueError(f"unknown shape kind {kind!r}; expected one of {SHAPE_KINDS}")
    anchors = COLOUR_FAMILIES[family]
    colour = np.clip(anchors[rng.integers(len(anchors))] + rng.normal(0, 0.05, 3), 0, 1)
    theta, freq, phase = rng.uniform(0, np.pi), rng.uniform(0.3, 0.9), rng.uniform(0, 2 * np.pi)
    texture = 0.06 * np.sin(freq * (np.cos(theta) * xx + np.sin(theta) * yy) + phase)
    background = 0.2 + texture + rng.normal(0, 0.03, (size, size))
    image = np.repeat(background[None], 3, axis=0)
    image[:, mask] = colour[:, None]
    return np.clip(image, 0, 1).astype(np.float32)


def generate_shapes_frame(n_per_split: tuple[int, int, int], size: int, seed: int) -> pd.DataFrame:
    """Procedural coloured shapes: 8 classes = {circle, square, triangle, ring} × {warm, cool},
    balanced (class = index mod 8), RGB (3, size, size) scaled to [-1, 1]. Each split is drawn
    from its own child seed, so the splits are independent samples."""
    children = np.random.SeedSequence([seed, 7]).spawn(3)
    images, labels, splits = [], [], []
    for name, count, child in zip(SPLITS, n_per_split, children):
        rng = np.random.default_rng(child)
        for i in range(count):
            label = i % len(SHAPE_CLASSES)
            kind, family = SHAPE_CLASSES[label].split("_")
            images.append(render_shape(kind, family, size, rng))
            labels.append(label)
            splits.append(name)
    pixels = np.stack(images) * 2.0 - 1.0
    return _frame("shapes", pixels, np.asarray(labels), np.asarray(splits, dtype=object))


def build_dataset(name: str, cfg: dict[str, Any], seed: int) -> pd.DataFrame:
    """The frame of dataset `name` from its params block (see params.yaml viar.<profile>.<name>)."""
    if name == "digits":
        return load_digits_frame(tuple(cfg["split_sizes"]), seed, cfg.get("max_images"))
    if name == "shapes":
        return generate_shapes_frame(tuple(cfg["split_sizes"]), int(cfg["image_size"]), seed)
    raise ValueError(f"unknown dataset {name!r}; expected digits or shapes")


def to_arrays(frame: pd.DataFrame, split: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(images (n, C, H, W) float32, labels (n,) int64) of one dataset frame (optionally one split)."""
    if split is not None:
        frame = frame[frame["split"] == split]
    if frame.empty:
        raise ValueError(f"no images in split {split!r}")
    c, h, w = (int(frame[k].iat[0]) for k in ("channels", "height", "width"))
    pixels = np.stack(frame["pixels"].to_numpy()).astype(np.float32)
    if pixels.shape[1] != c * h * w:
        raise ValueError(f"pixel rows have {pixels.shape[1]} values, expected C*H*W = {c * h * w}")
    return pixels.reshape(len(frame), c, h, w), frame["label"].to_numpy(dtype=np.int64)


def validate_images(frame: pd.DataFrame, expected_shape: tuple[int, int, int], n_classes: int) -> list[str]:
    """Problems with one dataset frame (empty list = fine): shape, range, labels, splits."""
    problems = []
    shapes = frame[["channels", "height", "width"]].drop_duplicates()
    if len(shapes) != 1 or tuple(int(v) for v in shapes.iloc[0]) != tuple(expected_shape):
        problems.append(f"image shape {[tuple(r) for r in shapes.itertuples(index=False)]} "
                        f"!= expected {tuple(expected_shape)}")
    lengths = frame["pixels"].map(len).unique()
    if len(lengths) != 1 or int(lengths[0]) != int(np.prod(expected_shape)):
        problems.append(f"pixel rows of lengths {sorted(map(int, lengths))[:5]}, "
                        f"expected {int(np.prod(expected_shape))}")
    else:
        pixels = np.stack(frame["pixels"].to_numpy())
        if not np.isfinite(pixels).all():
            problems.append(f"{int((~np.isfinite(pixels)).sum())} non-finite pixel values")
        elif pixels.min() < -1.0 - 1e-6 or pixels.max() > 1.0 + 1e-6:
            problems.append(f"pixel range [{pixels.min():.3f}, {pixels.max():.3f}] outside [-1, 1]")
    labels = frame["label"].to_numpy()
    bad = labels[(labels < 0) | (labels >= n_classes)]
    if len(bad):
        problems.append(f"{len(bad)} labels outside the conditioning set 0..{n_classes - 1} (e.g. {bad[:3].tolist()})")
    for split in SPLITS:
        part = frame[frame["split"] == split]
        if part.empty:
            problems.append(f"split {split!r} is empty")
        elif part["label"].nunique() != n_classes:
            problems.append(f"split {split!r} has {part['label'].nunique()} of {n_classes} classes")
    if frame["image_id"].duplicated().any():
        problems.append("duplicate image_id (an image in two splits)")
    return problems
