"""Data validation, encoding, offline datasets and checkpoint-exported models."""
import numpy as np
import pandas as pd
import pytest

from assets.pac_labels import data, models
from assets.pac_labels.method import InputError

SPEC = data.TableSpec(label_col="Y", pred_col="Yhat", conf_col="confidence", loss="zero_one")


def _table():
    return pd.DataFrame({"Y": ["a", "b", "c", "a"], "Yhat": ["a", "b", "a", "c"], "confidence": [0.9, 0.8, 0.7, 0.6]})


def test_valid_table_has_no_problems_and_encodes_to_sorted_codes():
    assert data.validate_table(_table(), SPEC) == []
    items, space = data.encode_table(_table(), SPEC)
    assert space == ["a", "b", "c"]
    assert items["y"].tolist() == [0.0, 1.0, 2.0, 0.0] and items["yhat"].tolist() == [0.0, 1.0, 0.0, 2.0]


@pytest.mark.parametrize("mutate, fragment", [
    (lambda f: f.drop(columns="confidence"), "missing column(s) ['confidence']"),
    (lambda f: f.assign(confidence=[0.9, 1.5, 0.7, -0.1]), "'confidence' has confidences outside [0, 1] at rows 1, 3"),
    (lambda f: f.assign(confidence=[0.9, np.nan, 0.7, 0.6]), "'confidence' has 1 missing value(s) (NaN) at rows 1"),
    (lambda f: f.assign(Yhat=["a", "z", "a", "c"]), "'Yhat' has labels outside the label space (['z']) at rows 1"),
    (lambda f: f.assign(Y=["a", None, "c", "a"]), "'Y' has 1 missing value(s)"),
    (lambda f: f.assign(confidence=["0.9", "high", "0.7", "0.6"]), "'confidence' is not numeric at rows 1"),
])
def test_bad_tables_name_the_column_and_rows(mutate, fragment):
    problems = data.validate_table(mutate(_table()), SPEC)
    assert any(fragment in p for p in problems), problems
    with pytest.raises(InputError):
        data.encode_table(mutate(_table()), SPEC)


def test_squared_loss_tables_need_numbers():
    spec = data.TableSpec(loss="squared")
    frame = pd.DataFrame({"Y": [0.1, 0.2], "Yhat": ["0.3", "x"], "confidence": [0.5, 0.5]})
    assert any("'Yhat' must be finite numbers" in p for p in data.validate_table(frame, spec))


def test_data_dir_env_var_overrides_the_configured_path(monkeypatch, tmp_path):
    monkeypatch.delenv(data.DATA_DIR_ENV_VAR, raising=False)
    assert data.resolve_data_dir("../shared/pac_labels", tmp_path / "repo") == (tmp_path / "shared" / "pac_labels")
    monkeypatch.setenv(data.DATA_DIR_ENV_VAR, str(tmp_path / "elsewhere"))
    assert data.resolve_data_dir("../shared/pac_labels", tmp_path / "repo") == tmp_path / "elsewhere"


def test_digits_split_is_a_disjoint_partition_of_the_bundled_set():
    frame = data.digits_source(0.4, seed=3)
    assert len(frame) == 1797 and set(frame["split"]) == {"train", "pool"}
    assert (frame["split"] == "train").sum() == round(0.4 * 1797)
    for _, rows in frame.groupby("split"):
        assert sorted(rows["item_id"]) == list(range(len(rows)))
    assert frame[[c for c in frame if c.startswith("x_")]].to_numpy().max() <= 1.0


def test_regression_target_is_standardized_on_the_train_split():
    frame = data.synthetic_regression(300, 200, noise=1.0, seed=0)
    train = frame[frame["split"] == "train"]["y"]
    assert train.mean() == pytest.approx(0.0, abs=1e-9) and train.std() == pytest.approx(1.0)


@pytest.mark.parametrize("kind", ["logreg", "gnb", "mlp"])
def test_exported_classifiers_reproduce_sklearn_probabilities(kind):
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier

    frame = data.digits_source(0.4, seed=1)
    train, pool = frame[frame["split"] == "train"], frame[frame["split"] == "pool"]
    X, y, Xp = data.features(train), train["y"].to_numpy(), data.features(pool)
    state = models.train_model(kind, X, y, seed=0, options={"max_iter": 20})
    ref = {"logreg": lambda: LogisticRegression(max_iter=2000), "gnb": GaussianNB,
           "mlp": lambda: MLPClassifier(hidden_layer_sizes=(16,), max_iter=20, random_state=0)}[kind]()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(X, y)
    assert np.allclose(models.class_probabilities(kind, state, Xp), ref.predict_proba(Xp), atol=1e-6)
    yhat, conf = models.classify(kind, state, Xp)
    assert np.array_equal(yhat, ref.predict(Xp)) and np.all((conf > 0) & (conf <= 1))


def test_packed_gradient_boosting_trees_predict_like_sklearn():
    from sklearn.ensemble import GradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.random((300, 4)).astype(np.float32).astype(float)
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=300)
    state = models.train_model("gb_ensemble", X, y, seed=5, options={"members": 2, "n_estimators": 15})
    members = models.ensemble_members(state, X)
    rows = np.random.default_rng(5).integers(0, 300, size=300)       # member 0's bootstrap resample
    ref = GradientBoostingRegressor(n_estimators=15, max_depth=3, learning_rate=0.1, random_state=5)
    ref.fit(X[rows], y[rows])
    assert np.allclose(members[0], ref.predict(X), atol=1e-9)
    yhat, conf = models.regress(state, X)
    assert np.allclose(yhat, members.mean(0)) and np.allclose(conf, np.exp(-members.std(0)))
