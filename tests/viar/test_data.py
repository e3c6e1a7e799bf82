"""Offline data: stratified disjoint splits, bundled digits, procedural shapes, validation."""
from __future__ import annotations

import numpy as np
import pytest

from assets.viar import data


def test_stratified_split_sizes_and_proportions():
    labels = np.repeat(np.arange(5), 100)
    split = data.stratified_split(labels, (300, 100, 100), seed=3)
    for name, size in zip(data.SPLITS, (300, 100, 100)):
        part = labels[split == name]
        assert len(part) == size
        assert np.bincount(part, minlength=5).tolist() == [size // 5] * 5
    with pytest.raises(ValueError, match="need 600"):
        data.stratified_split(labels, (400, 100, 100), seed=0)


def test_digits_frame_is_the_bundled_set_scaled_to_unit_range():
    frame = data.load_digits_frame((1200, 300, 297), seed=0)
    assert len(frame) == 1797 and frame["split"].value_counts().to_dict() == {"train": 1200, "val": 300, "test": 297}
    x, y = data.to_arrays(frame)
    assert x.shape == (1797, 1, 8, 8) and x.min() == -1.0 and x.max() == 1.0
    # 16 grey levels 0..16 map to (v / 8 − 1): every value on that grid
    assert np.allclose((x + 1) * 8, np.round((x + 1) * 8))
    assert data.validate_images(frame, (1, 8, 8), 10) == []


def test_shapes_are_seeded_balanced_and_shape_dependent():
    a = data.generate_shapes_frame((16, 8, 8), size=16, seed=5)
    b = data.generate_shapes_frame((16, 8, 8), size=16, seed=5)
    x, y = data.to_arrays(a)
    assert np.array_equal(x, data.to_arrays(b)[0])
    assert np.bincount(y[a["split"] == "train"]).tolist() == [2] * 8
    assert x.min() >= -1 and x.max() <= 1 and x.shape[1:] == (3, 16, 16)
    rng = np.random.default_rng(0)
    ring = data.render_shape("ring", "warm", 32, rng)
    circle = data.render_shape("circle", "warm", 32, np.random.default_rng(0))
    # same centre/radius/colour draws: the ring lacks the filled centre the circle has
    assert np.abs(ring - circle).sum() > 1.0
    warm, cool = data.render_shape("square", "warm", 16, rng), data.render_shape("square", "cool", 16, rng)
    assert warm[0].max() > 0.8 and cool[0].max() < 0.5   # red channel: warm anchors ≥ 0.9, cool ≤ 0.2


def test_validate_images_names_each_problem():
    frame = data.load_digits_frame((200, 60, 60), seed=0, max_images=320)
    bad = frame.copy()
    bad.loc[0, "pixels"] = bad.loc[0, "pixels"] * 3
    bad.loc[1, "label"] = 12
    problems = " ".join(data.validate_images(bad, (1, 8, 8), 10))
    assert "outside [-1, 1]" in problems and "conditioning set" in problems
    assert "expected (1, 16, 16)" in " ".join(data.validate_images(frame, (1, 16, 16), 10))
