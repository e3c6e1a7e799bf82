"""Generated data: construction invariants and the concept's independence from the class."""
from __future__ import annotations

import numpy as np
import pandas as pd

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
