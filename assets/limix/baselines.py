"""Baselines on the same context/query splits — sklearn only, no Dagster.

Logistic regression, kNN, random forest and HistGradientBoosting, each tuned by stratified CV
on the context rows only (a small grid), then refit on all context rows. LightGBM / XGBoost are
not installed in this environment (issue 22 names them; they are left out, see NOTES).
Inputs: context x (n, D) float with NaN allowed, y (n,) int; query x (m, D) → probabilities
(m, n_classes).
"""
from __future__ import annotations

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

BASELINES = ("logreg", "knn", "random_forest", "hist_gbm")


def _estimator(name: str, seed: int):
    if name == "logreg":
        return make_pipeline(SimpleImputer(), StandardScaler(), LogisticRegression(max_iter=2000)), \
            {"logisticregression__C": [0.1, 1.0, 10.0]}
    if name == "knn":
        return make_pipeline(SimpleImputer(), StandardScaler(), KNeighborsClassifier()), \
            {"kneighborsclassifier__n_neighbors": [3, 7, 15]}
    if name == "random_forest":
        return make_pipeline(SimpleImputer(), RandomForestClassifier(n_estimators=100, random_state=seed)), \
            {"randomforestclassifier__max_depth": [3, None]}
    if name == "hist_gbm":
        return HistGradientBoostingClassifier(random_state=seed, max_iter=100), {"learning_rate": [0.05, 0.2]}
    raise ValueError(f"unknown baseline {name!r}; known: {BASELINES}")


def fit_predict(name: str, x_ctx: np.ndarray, y_ctx: np.ndarray, x_q: np.ndarray, n_classes: int,
                seed: int = 0) -> np.ndarray:
    """Query probabilities (m, n_classes) of baseline `name` tuned on the context rows."""
    x_ctx = np.where(np.isfinite(x_ctx), x_ctx, np.nan)
    x_q = np.where(np.isfinite(x_q), x_q, np.nan)
    est, grid = _estimator(name, seed)
    folds = int(min(3, np.bincount(y_ctx).min()))
    if name == "knn":  # k below the smallest CV training fold
        k = len(y_ctx) - len(y_ctx) // max(folds, 2) - 1
        key = "kneighborsclassifier__n_neighbors"
        grid[key] = [v for v in grid[key] if v <= k] or [1]
        est.set_params(**{key: grid[key][0]})
    if folds >= 2:
        est = GridSearchCV(est, grid, cv=StratifiedKFold(folds, shuffle=True, random_state=seed), scoring="roc_auc_ovr")
    est.fit(x_ctx, y_ctx)
    p = est.predict_proba(x_q)
    classes = (est.best_estimator_ if hasattr(est, "best_estimator_") else est).classes_
    out = np.zeros((len(x_q), n_classes))
    out[:, classes] = p
    return out
