"""Offline data: generated 2-D spirals and sklearn's bundled digits with a concept label.

Both datasets are returned as one tidy-wide DataFrame with columns
    sample (int, unique), split ("train"/"val"/"test"), label (int class), concept (int, −1
    when the dataset has none), group (int: rows sharing a group must share a split),
    x0 … x{D−1} (float32 inputs).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

SPLITS = ("train", "val", "test")


def input_columns(frame: pd.DataFrame) -> list[str]:
    """The input feature columns x0 … x{D−1}, in order."""
    cols = [c for c in frame.columns if c.startswith("x") and c[1:].isdigit()]
    return sorted(cols, key=lambda c: int(c[1:]))


# ----------------------------------------------------------------------------- spirals
def spiral_arms(n_labels: int, n_arms_per_label: int, rng: np.random.Generator) -> np.ndarray:
    """Label of each of the n_labels·n_arms_per_label arms (arm a has base angle 2πa/A):
    every label owns exactly n_arms_per_label arms, assigned at random."""
    labels = np.repeat(np.arange(n_labels), n_arms_per_label)
    return rng.permutation(labels)


def make_spirals(n_labels: int = 7, n_arms_per_label: int = 4, points_per_arm: int = 1000,
                 seed: int = 0, radius: tuple[float, float] = (1.0, 10.0),
                 jitter: float = 0.75, twist: float = 0.1) -> pd.DataFrame:
    """2-D spirals: A = n_labels·n_arms_per_label arms; point at radius r on arm a has angle
        θ = 2πa/A + twist·π/n_labels·r + s·π/A,   s ~ U(−jitter, jitter),
    position r·(cos θ, sin θ); r runs over linspace(radius, points_per_arm) on every arm.
    Split 50/25/25 stratified by label (each row its own group). Columns as the module doc.
    """
    rng = np.random.default_rng(seed)
    n_arms = n_labels * n_arms_per_label
    arm_label = spiral_arms(n_labels, n_arms_per_label, rng)
    r = np.tile(np.linspace(radius[0], radius[1], points_per_arm), n_arms)
    arm = np.repeat(np.arange(n_arms), points_per_arm)
    s = rng.uniform(-jitter, jitter, size=r.shape)
    theta = 2 * np.pi * arm / n_arms + twist * np.pi / n_labels * r + s * np.pi / n_arms
    frame = pd.DataFrame({"x0": (r * np.cos(theta)).astype(np.float32),
                          "x1": (r * np.sin(theta)).astype(np.float32)})
    frame["label"] = arm_label[arm].astype(np.int64)
    frame["concept"] = np.int64(-1)
    frame["arm"] = arm.astype(np.int64)
    frame["radius"] = r.astype(np.float32)
    frame["group"] = np.arange(len(frame), dtype=np.int64)
    frame["split"] = stratified_split(frame["label"].to_numpy(), frame["group"].to_numpy(), rng)
    frame.insert(0, "sample", np.arange(len(frame), dtype=np.int64))
    return frame


# ----------------------------------------------------------------------------- digits
SHIFTS = ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1))   # (down, right) pixel shifts


def shift_image(image: np.ndarray, down: int, right: int) -> np.ndarray:
    """Shift an (8, 8) image by whole pixels, filling with 0 (pixels leaving are dropped)."""
    out = np.zeros_like(image)
    h, w = image.shape
    src = image[max(0, -down):h - max(0, down), max(0, -right):w - max(0, right)]
    out[max(0, down):max(0, down) + src.shape[0], max(0, right):max(0, right) + src.shape[1]] = src
    return out


def within_class_terciles(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Tercile (0, 1, 2) of each value among the values of its own class (rank-based, so
    each class splits into three equal thirds — the concept is independent of the class)."""
    out = np.empty(len(values), dtype=np.int64)
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        ranks = np.empty(len(idx), dtype=np.int64)
        ranks[np.argsort(values[idx], kind="stable")] = np.arange(len(idx))
        out[idx] = (3 * ranks) // len(idx)
    return out


def make_digits_concept(seed: int = 0, shifts: tuple[tuple[int, int], ...] = SHIFTS,
                        max_images: int | None = None) -> pd.DataFrame:
    """sklearn's bundled digits (1,797 8×8 images, pixel values 0–16, scaled to [0, 1]) and
    one copy per pixel shift. concept = the within-class tercile of ink mass (sum of pixels
    of the unshifted image), shared by the shifted copies. Splits 50/25/25 stratified by
    class and grouped by source image, so shifted copies never straddle splits.
    Extra columns: source (original image index), ink (ink mass, in [0, 64]).
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(seed)
    images, labels = digits.images / 16.0, digits.target.astype(np.int64)
    if max_images is not None and max_images < len(labels):
        per_class = max_images // len(np.unique(labels))        # stratified subsample
        keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(labels == c), size=per_class, replace=False)
                                       for c in np.unique(labels)]))
        images, labels = images[keep], labels[keep]
    ink = images.reshape(len(images), -1).sum(axis=1)
    concept = within_class_terciles(ink, labels)
    split_of_source = stratified_split(labels, np.arange(len(labels)), rng)
    rows, pixels = [], []
    for shift_index, (down, right) in enumerate(shifts):
        for i, image in enumerate(images):
            pixels.append(shift_image(image, down, right).ravel())
            rows.append((i, shift_index))
    pixels = np.asarray(pixels, dtype=np.float32)
    source = np.array([r[0] for r in rows], dtype=np.int64)
    frame = pd.DataFrame(pixels, columns=[f"x{j}" for j in range(pixels.shape[1])])
    frame["label"] = labels[source]
    frame["concept"] = concept[source]
    frame["group"] = source
    frame["source"] = source
    frame["shift"] = np.array([r[1] for r in rows], dtype=np.int64)
    frame["ink"] = ink[source].astype(np.float32)
    frame["split"] = split_of_source[source]
    frame.insert(0, "sample", np.arange(len(frame), dtype=np.int64))
    return frame


# ----------------------------------------------------------------------------- splits
def stratified_split(labels: np.ndarray, groups: np.ndarray, rng: np.random.Generator,
                     fractions: tuple[float, float, float] = (0.5, 0.25, 0.25)) -> np.ndarray:
    """Split label per row: groups are shuffled within each class and cut 50/25/25.
    A group's class is the class of its first row (groups here are single-class)."""
    labels, groups = np.asarray(labels), np.asarray(groups)
    first = pd.Series(labels).groupby(groups).first()
    split_of_group = {}
    for c in np.unique(first.to_numpy()):
        members = rng.permutation(first.index[first.to_numpy() == c].to_numpy())
        cut1 = int(round(fractions[0] * len(members)))
        cut2 = cut1 + int(round(fractions[1] * len(members)))
        for j, g in enumerate(members):
            split_of_group[g] = SPLITS[0] if j < cut1 else SPLITS[1] if j < cut2 else SPLITS[2]
    return np.array([split_of_group[g] for g in groups], dtype=object)


def per_source(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(label, concept) of each source group's first row: one row per source image (shifted
    copies share both), the units of the concept ⟂ class test."""
    first = frame.drop_duplicates("group")
    return first["label"].to_numpy(), first["concept"].to_numpy()


def empty_dataset() -> pd.DataFrame:
    """The table of a dataset the profile does not select."""
    return pd.DataFrame({"sample": pd.Series(dtype=np.int64), "label": pd.Series(dtype=np.int64),
                         "concept": pd.Series(dtype=np.int64), "group": pd.Series(dtype=np.int64),
                         "split": pd.Series(dtype=object)})


def concept_independence_pvalue(labels: np.ndarray, concepts: np.ndarray) -> float:
    """χ² test of independence between class and concept (contingency table); p-value."""
    from scipy.stats import chi2_contingency

    table = pd.crosstab(labels, concepts).to_numpy()
    if table.shape[0] < 2 or table.shape[1] < 2:
        return float("nan")
    return float(chi2_contingency(table).pvalue)


# ----------------------------------------------------------------------------- shapes
SHAPES = ("disk", "square", "triangle_up", "triangle_down", "plus", "cross", "ring", "diamond",
          "ellipse", "frame")
# half-extent of a shape, as a fraction of the image side, per size tercile (the concept):
# small / medium / large, with gaps between the bands so the concept is well defined.
SIZE_BANDS = ((0.20, 0.26), (0.29, 0.35), (0.38, 0.44))


def shape_mask(shape: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Inside-test of a unit shape in its own frame: u right, v down, both in units of the
    half-extent (every shape fits the square |u|, |v| ≤ 1). Boolean array like u."""
    a, b = np.abs(u), np.abs(v)
    if shape == "disk":
        return u ** 2 + v ** 2 <= 1.0
    if shape == "square":
        return np.maximum(a, b) <= 0.85
    if shape == "triangle_up":                       # apex at v = −0.95, base at v = 0.8
        return (v <= 0.8) & (a <= (v + 0.95) / 1.75)
    if shape == "triangle_down":
        return (v >= -0.8) & (a <= (0.95 - v) / 1.75)
    if shape == "plus":
        return ((a <= 0.3) & (b <= 1.0)) | ((b <= 0.3) & (a <= 1.0))
    if shape == "cross":                             # the plus turned by 45°
        p, q = np.abs(u + v) / np.sqrt(2), np.abs(u - v) / np.sqrt(2)
        return ((p <= 0.28) & (q <= 1.0)) | ((q <= 0.28) & (p <= 1.0))
    if shape == "ring":
        r2 = u ** 2 + v ** 2
        return (r2 <= 1.0) & (r2 >= 0.55 ** 2)
    if shape == "diamond":
        return a + b <= 1.0
    if shape == "ellipse":
        return u ** 2 + (v / 0.5) ** 2 <= 1.0
    if shape == "frame":
        m = np.maximum(a, b)
        return (m <= 0.9) & (m >= 0.55)
    raise ValueError(f"unknown shape {shape!r}; choose from {SHAPES}")


def render_shapes(classes: np.ndarray, half_extent: np.ndarray, centre: np.ndarray, angle: np.ndarray,
                  intensity: np.ndarray, image_size: int, supersample: int = 2,
                  shapes: tuple[str, ...] = SHAPES, chunk: int = 2048) -> np.ndarray:
    """Grey images (n, image_size, image_size) in [0, 1]: shape `shapes[classes[i]]` with
    half-extent half_extent[i] [pixels], centre centre[i] = (row, col) [pixels], rotated by
    angle[i] [radians], filled with intensity[i] on a 0 background. Anti-aliased by averaging
    a supersample × supersample grid of sub-pixel samples per pixel."""
    n = len(classes)
    s = supersample
    sub = (np.arange(image_size * s) + 0.5) / s                       # sub-pixel centres [pixels]
    rows, cols = np.meshgrid(sub, sub, indexing="ij")
    out = np.empty((n, image_size, image_size), dtype=np.float32)
    for start in range(0, n, chunk):
        sl = slice(start, min(n, start + chunk))
        dy = (rows[None] - centre[sl, 0, None, None]) / half_extent[sl, None, None]
        dx = (cols[None] - centre[sl, 1, None, None]) / half_extent[sl, None, None]
        cos, sin = np.cos(angle[sl])[:, None, None], np.sin(angle[sl])[:, None, None]
        u, v = cos * dx + sin * dy, -sin * dx + cos * dy                 # rotate into the shape frame
        mask = np.zeros(u.shape, dtype=np.float32)
        for c in np.unique(classes[sl]):
            rows_c = np.flatnonzero(classes[sl] == c)
            mask[rows_c] = shape_mask(shapes[c], u[rows_c], v[rows_c])
        pooled = mask.reshape(len(mask), image_size, s, image_size, s).mean(axis=(2, 4))
        out[sl] = pooled * intensity[sl, None, None]
    return out


def balanced_concepts(labels: np.ndarray, n_concepts: int, rng: np.random.Generator) -> np.ndarray:
    """A concept value per row, drawn independently of the class: within every class the
    values 0 … n_concepts−1 occur equally often (± 1) in a random order, so the class ×
    concept table is flat and p(concept | class) = p(concept) by construction."""
    out = np.empty(len(labels), dtype=np.int64)
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        out[idx] = rng.permutation(np.arange(len(idx)) % n_concepts)
    return out


def make_shapes_concept(per_class: int = 600, image_size: int = 28, n_classes: int = 10, seed: int = 0,
                        max_rotation: float = np.pi / 12, intensity: tuple[float, float] = (0.6, 1.0),
                        noise: float = 0.05, supersample: int = 2) -> pd.DataFrame:
    """Procedural shapes with an independent size concept (offline, seeded).

    class = the shape (first n_classes of SHAPES); concept = size tercile (0 small, 1 medium,
    2 large), balanced within every class and drawn independently of it; nuisances drawn
    independently of both: position (the shape stays inside the image), rotation
    U(±max_rotation), fill intensity U(intensity), Gaussian pixel noise σ = noise; pixels
    clipped to [0, 1]. Half-extent [pixels] = U(SIZE_BANDS[concept]) · image_size.
    Split 50/25/25 stratified by class (every image its own group).
    Columns: sample, x0 … x{S²−1} (row-major image), label, concept, group, size (half-extent
    [pixels]), row, col (centre [pixels]), angle [rad], intensity, split.
    """
    if not 2 <= n_classes <= len(SHAPES):
        raise ValueError(f"n_classes must be in 2 … {len(SHAPES)}, got {n_classes}")
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_classes, dtype=np.int64), per_class)
    concept = balanced_concepts(labels, len(SIZE_BANDS), rng)
    bands = np.asarray(SIZE_BANDS)[concept]
    half = rng.uniform(bands[:, 0], bands[:, 1]) * image_size
    margin = half + 0.5
    centre = np.stack([rng.uniform(margin, image_size - margin) for _ in range(2)], axis=1)
    angle = rng.uniform(-max_rotation, max_rotation, size=len(labels))
    fill = rng.uniform(intensity[0], intensity[1], size=len(labels))
    images = render_shapes(labels, half, centre, angle, fill, image_size, supersample,
                           shapes=SHAPES[:n_classes])
    images = np.clip(images + rng.normal(0.0, noise, size=images.shape), 0.0, 1.0).astype(np.float32)
    frame = pd.DataFrame(images.reshape(len(images), -1), columns=[f"x{j}" for j in range(image_size ** 2)])
    frame["label"] = labels
    frame["concept"] = concept
    frame["group"] = np.arange(len(frame), dtype=np.int64)
    frame["size"] = half.astype(np.float32)
    frame["row"], frame["col"] = centre[:, 0].astype(np.float32), centre[:, 1].astype(np.float32)
    frame["angle"] = angle.astype(np.float32)
    frame["intensity"] = fill.astype(np.float32)
    frame["split"] = stratified_split(labels, frame["group"].to_numpy(), rng)
    frame.insert(0, "sample", np.arange(len(frame), dtype=np.int64))
    return frame
