"""Non-LLM detectors on the same splits — numpy / sklearn / pyod, no Dagster.

Features (fitted on the train split only): numeric columns standardised by the train mean and
standard deviation, categorical columns one-hot over the train levels (unseen levels → all
zeros), text columns hashed bag-of-words (`text_features` buckets). Every detector is fitted
on the train rows and returns anomaly scores (higher = more anomalous) for any rows.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.dispat.data import CATEGORICAL, NUMERIC, TEXT, Schema

CLASSICAL = ("iforest", "lof", "ocsvm", "ecod", "copod", "knn")
DEEP = ("autoencoder", "deepsvdd")
BASELINES = CLASSICAL + DEEP


class Featurizer:
    """Formatted rows ({column: text}) → dense features (N, D)."""

    def __init__(self, schema: Schema, train_rows: list[dict[str, str]], text_features: int = 32):
        self.schema = schema
        self.text_features = text_features
        self.stats = {}
        for c in schema.columns:
            if c.kind == NUMERIC:
                x = np.array([float(r[c.name]) for r in train_rows])
                self.stats[c.name] = (float(x.mean()), float(x.std() or 1.0))

    def transform(self, rows: list[dict[str, str]]) -> np.ndarray:
        from sklearn.feature_extraction.text import HashingVectorizer

        blocks = []
        for c in self.schema.columns:
            values = [r[c.name] for r in rows]
            if c.kind == NUMERIC:
                mu, sd = self.stats[c.name]
                blocks.append(((np.array(values, float) - mu) / sd)[:, None])
            elif c.kind == CATEGORICAL:
                index = {lvl: i for i, lvl in enumerate(c.levels)}
                block = np.zeros((len(rows), len(c.levels)))
                for i, v in enumerate(values):
                    if v in index:
                        block[i, index[v]] = 1.0
                blocks.append(block)
            elif c.kind == TEXT:
                hv = HashingVectorizer(n_features=self.text_features, alternate_sign=False, norm="l2")
                blocks.append(hv.transform(values).toarray())
        return np.hstack(blocks)


def fit_score(name: str, x_train: np.ndarray, x_eval: np.ndarray, seed: int, epochs: int = 20) -> np.ndarray:
    """Fit detector `name` on x_train (N, D); anomaly scores of x_eval (M, D)."""
    if name == "iforest":
        from sklearn.ensemble import IsolationForest

        model = IsolationForest(n_estimators=100, random_state=seed).fit(x_train)
        return -model.score_samples(x_eval)
    if name == "lof":
        from sklearn.neighbors import LocalOutlierFactor

        model = LocalOutlierFactor(n_neighbors=20, novelty=True).fit(x_train)
        return -model.score_samples(x_eval)
    if name == "ocsvm":
        from sklearn.svm import OneClassSVM

        model = OneClassSVM(gamma="scale", nu=0.1).fit(x_train)
        return -model.score_samples(x_eval)
    if name in ("ecod", "copod", "knn"):
        from pyod.models.copod import COPOD
        from pyod.models.ecod import ECOD
        from pyod.models.knn import KNN

        model = {"ecod": ECOD, "copod": COPOD, "knn": lambda: KNN(n_neighbors=5)}[name]()
        model.fit(x_train)
        return np.asarray(model.decision_function(x_eval), float)
    if name == "autoencoder":
        model = _autoencoder_class()(epoch_num=epochs, batch_size=128, random_state=seed, verbose=0,
                            hidden_neuron_list=[32, 16], device="cpu")
        model.fit(x_train)
        return np.asarray(model.decision_function(x_eval), float)
    if name == "deepsvdd":
        import torch
        from pyod.models.deep_svdd import DeepSVDD

        torch.manual_seed(seed)
        model = DeepSVDD(n_features=x_train.shape[1], epochs=epochs, batch_size=32, random_state=seed, verbose=0,
                         hidden_neurons=[32, 16])
        model.fit(x_train)
        return np.asarray(model.decision_function(x_eval), float)
    raise ValueError(f"unknown baseline {name!r}; known: {BASELINES}")


def _autoencoder_class():
    """pyod's AutoEncoder, scoring with numpy: its numba-jitted distance helper costs ≈ 13 s of
    compilation per process for the same Euclidean reconstruction error."""
    import torch
    from pyod.models.auto_encoder import AutoEncoder

    class NumpyScoredAutoEncoder(AutoEncoder):
        def evaluating_forward(self, batch_data):
            with torch.no_grad():
                recon = self.model(batch_data.to(self.device)).cpu().numpy()
            return np.sqrt(((batch_data.numpy() - recon) ** 2).sum(axis=1)).ravel()

    return NumpyScoredAutoEncoder


def baseline_scores(schema: Schema, train_rows, eval_rows, seed: int, methods=BASELINES, epochs: int = 20,
                    text_features: int = 32) -> pd.DataFrame:
    """(len(eval_rows), len(methods)) anomaly scores, one column per method."""
    feat = Featurizer(schema, train_rows, text_features)
    x_train, x_eval = feat.transform(train_rows), feat.transform(eval_rows)
    return pd.DataFrame({m: fit_score(m, x_train, x_eval, seed, epochs) for m in methods})
