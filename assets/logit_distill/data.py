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


def concept_independence_pvalue(labels: np.ndarray, concepts: np.ndarray) -> float:
    """χ² test of independence between class and concept (contingency table); p-value."""
    from scipy.stats import chi2_contingency

    table = pd.crosstab(labels, concepts).to_numpy()
    if table.shape[0] < 2 or table.shape[1] < 2:
        return float("nan")
    return float(chi2_contingency(table).pvalue)
