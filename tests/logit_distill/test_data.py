"""Generated data: construction invariants and the concept's independence from the class."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.logit_distill import data


def test_spirals_every_label_owns_its_arms_and_splits_are_stratified():
    frame = data.make_spirals(n_labels=7, n_arms_per_label=4, points_per_arm=20, seed=3)
    assert len(frame) == 7 * 4 * 20
    arms = frame.groupby("arm")["label"].nunique()
    assert (arms == 1).all()                                   # an arm has one label
    assert (frame.groupby("label")["arm"].nunique() == 4).all()
    radius = np.hypot(frame["x0"], frame["x1"])
    np.testing.assert_allclose(radius, frame["radius"], rtol=1e-5)
    assert radius.min() >= 1 - 1e-5 and radius.max() <= 10 + 1e-5
    shares = frame["split"].value_counts(normalize=True)
    assert abs(shares["train"] - 0.5) < 0.02 and abs(shares["test"] - 0.25) < 0.02


def test_shift_image_known_answer():
    image = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(data.shift_image(image, 1, 0), [[0, 0, 0], [0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(data.shift_image(image, 0, -1), [[1, 2, 0], [4, 5, 0], [7, 8, 0]])


def test_within_class_terciles_are_balanced_per_class():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 30)
    values = rng.standard_normal(120) + 5 * labels             # classes differ strongly in value
    tercile = data.within_class_terciles(values, labels)
    table = pd.crosstab(labels, tercile).to_numpy()
    assert (table == 10).all()                                 # exactly a third of each class
    assert data.concept_independence_pvalue(labels, tercile) > 0.99
    # a global tercile would be a function of the class here: the χ² test catches it
    global_tercile = np.digitize(values, np.quantile(values, [1 / 3, 2 / 3]))
    assert data.concept_independence_pvalue(labels, global_tercile) < 1e-6


def test_digits_concept_shifted_copies_share_split_and_concept():
    frame = data.make_digits_concept(seed=1, shifts=data.SHIFTS[:3], max_images=200)
    assert len(frame) == 600
    per_source = frame.groupby("source")[["split", "concept", "label"]].nunique()
    assert (per_source == 1).all().all()
    first = frame.drop_duplicates("source")
    # the concept is the ink mass ordering inside the class
    for _, group in first.groupby("label"):
        low, high = group[group["concept"] == 0]["ink"].max(), group[group["concept"] == 2]["ink"].min()
        assert low <= high
    values = frame[data.input_columns(frame)].to_numpy()
    assert values.min() >= 0 and values.max() <= 1 and len(data.input_columns(frame)) == 64


# ----------------------------------------------------------------------------- shapes
def test_shapes_concept_is_independent_of_the_class_by_construction():
    frame = data.make_shapes_concept(per_class=30, image_size=16, n_classes=10, seed=0)
    table = pd.crosstab(frame["label"], frame["concept"]).to_numpy()
    assert table.shape == (10, 3) and (table == 10).all()         # flat: p(concept | class) = 1/3
    assert data.concept_independence_pvalue(frame["label"], frame["concept"]) > 0.999
    # the concept is the size band: size ∈ SIZE_BANDS[concept]·S, and the bands do not overlap
    for concept, (low, high) in enumerate(data.SIZE_BANDS):
        sizes = frame.loc[frame["concept"] == concept, "size"].to_numpy()
        assert sizes.min() >= low * 16 - 1e-4 and sizes.max() <= high * 16 + 1e-4
    # every class gets exactly per_class images: balanced classes
    assert (frame["label"].value_counts() == 30).all()


def test_balanced_concepts_within_unequal_classes():
    labels = np.repeat(np.arange(4), [7, 9, 12, 30])
    concepts = data.balanced_concepts(labels, 3, np.random.default_rng(5))
    table = pd.crosstab(labels, concepts).to_numpy()
    assert (table.max(axis=1) - table.min(axis=1) <= 1).all()      # ± 1 within every class
    assert data.concept_independence_pvalue(labels, concepts) > 0.9


def test_shapes_are_deterministic_per_seed_and_pixels_lie_in_the_unit_interval():
    a = data.make_shapes_concept(per_class=6, image_size=12, seed=4)
    b = data.make_shapes_concept(per_class=6, image_size=12, seed=4)
    c = data.make_shapes_concept(per_class=6, image_size=12, seed=5)
    pd.testing.assert_frame_equal(a, b)
    columns = data.input_columns(a)
    assert len(columns) == 144 and not np.array_equal(a[columns].to_numpy(), c[columns].to_numpy())
    pixels = a[columns].to_numpy()
    assert pixels.min() >= 0.0 and pixels.max() <= 1.0 and pixels.dtype == np.float32
    per_split = a.groupby("label")["split"].value_counts().unstack()      # 6 per class: 50/25/25 rounded
    assert (per_split["train"] == 3).all() and (per_split["val"] == 2).all() and (per_split["test"] == 1).all()


def test_rendered_area_matches_the_closed_form():
    """Noise-free, unrotated, 8× supersampled: ink mass = intensity × area [pixels²]."""
    half, size = 9.0, 32
    centre = np.array([[16.0, 16.0]])
    for shape, area in (("disk", np.pi * half ** 2), ("square", (2 * 0.85 * half) ** 2),
                        ("diamond", 2 * half ** 2), ("ring", np.pi * half ** 2 * (1 - 0.55 ** 2))):
        image = data.render_shapes(np.array([data.SHAPES.index(shape)]), np.array([half]), centre,
                                   np.zeros(1), np.array([0.5]), size, supersample=8)
        assert image.sum() == pytest.approx(0.5 * area, rel=0.02), shape
        assert image.max() <= 0.5 + 1e-6


def test_every_shape_fits_its_unit_square_and_the_shapes_differ():
    grid = np.linspace(-1.5, 1.5, 301)
    u, v = np.meshgrid(grid, grid)
    masks = {s: data.shape_mask(s, u, v) for s in data.SHAPES}
    outside = np.maximum(np.abs(u), np.abs(v)) > 1.0
    for shape, mask in masks.items():
        assert not (mask & outside).any(), shape
        assert mask.mean() > 0.02, shape                               # not empty
    names = list(masks)
    for i, a in enumerate(names):                                      # pairwise distinct silhouettes
        for b in names[i + 1:]:
            assert (masks[a] != masks[b]).mean() > 0.01, (a, b)
    with pytest.raises(ValueError, match="unknown shape"):
        data.shape_mask("hexagon", u, v)
