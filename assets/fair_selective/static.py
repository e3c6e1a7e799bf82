"""The static (non-RL) estimator study: logged decisions of fixed ε-greedy threshold policies,
then Δ_true, Δ_accepted, Δ_imp (unweighted predictor) and Δ_IW (importance-weighted
predictor), the decomposition and the overlap bound per batch of W decisions — no Dagster.

Behaviour policy: π_b(x) = (1 − ε)·1[p(x) > c + offset] + ε/2 (a threshold on the score with
ε-exploration). One past policy, so a_K = π_b and w = (1 − π_b)/π_b. Predictors are logistic
regressions on [one-hot features, one-hot group] fitted on every accepted row of the log (as
SELLF's memory) with the per-group-normalised (weighted) log-loss; the estimates and the overlap
bound are computed per batch of W consecutive decisions; imputation uses the predicted probability
(ŷ = f(x), the expectation of SELLF's Bernoulli draw), so the study is deterministic.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.fair_selective import fairness as fm
from assets.fair_selective.env import EnvSpec, one_hot


def behaviour_log(spec: EnvSpec, pool: np.ndarray, policy: dict, m: int, rng: np.random.Generator) -> pd.DataFrame:
    """(m rows) state, group, accept_prob, action, label (true, for every row): applicants drawn
    uniformly from the pool (no dynamics). policy: {"name", "offset", "epsilon"}."""
    states = pool[rng.integers(len(pool), size=m)]
    p = spec.p_success[states]
    prob = (1 - policy["epsilon"]) * (p > spec.cost + policy["offset"]) + policy["epsilon"] / 2
    action = (rng.random(m) < prob).astype(np.int64)
    label = (rng.random(m) < p).astype(np.int64)
    return pd.DataFrame({"row": np.arange(m), "state": states, "group": spec.states[states, 0],
                         "accept_prob": prob, "action": action, "label": label})


def observe(full: pd.DataFrame) -> pd.DataFrame:
    """The observed log: the label is NULL (NaN, nullable Int64) wherever action = 0."""
    out = full.copy()
    out["label"] = out["label"].astype("Int64").where(out["action"] == 1)
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, group: np.ndarray, weight: np.ndarray, ridge: float = 1e-2,
                 iterations: int = 50):
    """Logistic regression (no intercept: the one-hot blocks carry it) by Newton's method on the
    per-group-normalised weighted log-loss Σ_g Σ_{i∈g} w_i ℓ_i / Σ_{i∈g} w_i + ridge/2·|θ|².
    x (n, d), y (n,) ∈ {0, 1}, group (n,), weight (n,) ≥ 0. Returns f: X (m, d) → P(y = 1) (m,)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    w = np.asarray(weight, dtype=float).copy()
    for k in (0, 1):
        m = group == k
        if m.any():
            w[m] = w[m] / w[m].sum()
    theta = np.zeros(x.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-x @ theta))
        grad = x.T @ (w * (p - y)) + ridge * theta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + ridge * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return lambda z: 1.0 / (1.0 + np.exp(-np.asarray(z, dtype=float) @ theta))


def fit_predictors(spec: EnvSpec, observed: pd.DataFrame) -> dict:
    """Both predictors fitted on every accepted row of an observed log (the memory), their
    probabilities on every row, the importance weights and the per-state accepted label means.
    Reads only the observed log (labels NULL where rejected)."""
    g = observed["group"].to_numpy()
    a = observed["action"].to_numpy()
    prob = observed["accept_prob"].to_numpy()
    y_obs = observed["label"].to_numpy(dtype=float, na_value=np.nan)
    fm.validate_log(g, a, y_obs, prob)
    states = observed["state"].to_numpy()
    acc = a == 1
    x = one_hot(spec.states[states], spec.cardinalities)
    w = fm.importance_weights(prob, fm.coverage(prob[None]))
    f_unw = fit_logistic(x[acc], y_obs[acc], g[acc], np.ones(int(acc.sum())))
    f_iw = fit_logistic(x[acc], y_obs[acc], g[acc], w[acc])
    state_mean = pd.Series(y_obs[acc]).groupby(states[acc]).mean()
    return {"unweighted": f_unw(x), "iw": f_iw(x), "w": w,
            "state_mean": state_mean.reindex(states).to_numpy()}


def estimate_batch(batch: pd.DataFrame, observed: pd.DataFrame, fitted: dict, rows: slice,
                   measures: tuple[str, ...], omega: float, p_true: np.ndarray | None = None) -> list[dict]:
    """Every estimate of one batch (rows of the log), one dict per measure. The predictors and
    the overlap statistics come from `fitted` (the observed log); `batch` (true labels) is read
    only for Δ_true, e_g and the flags."""
    g = observed["group"].to_numpy()[rows]
    a = observed["action"].to_numpy()[rows]
    acc = a == 1
    y_obs = observed["label"].to_numpy(dtype=float, na_value=np.nan)[rows]
    y_true = batch["label"].to_numpy()[rows]
    yhat = {"unweighted": fitted["unweighted"][rows], "iw": fitted["iw"][rows]}
    if p_true is not None:      # evaluator-only ablation: impute with the true P(y | x)
        yhat["oracle_p"] = p_true[rows]
    return [_estimates(g, a, acc, y_obs, y_true, yhat, fitted["w"][rows], fitted["state_mean"][rows], measure, omega)
            for measure in measures]


def _estimates(g, a, acc, y_obs, y_true, yhat, w, state_mean, measure, omega) -> dict:
    out = {"measure": measure, "n": len(g), "accept_rate": float(acc.mean())}
    for name in yhat:
        y_tilde = np.where(acc, np.nan_to_num(y_obs), yhat[name])
        sums = fm.group_sums(g, a, y_true, y_tilde)
        out[f"delta_imp_{name}"] = fm.delta(sums, measure, "imputation")
        if name == "iw":
            dec = fm.decomposition(sums, measure)
            out.update(delta_true=dec["delta_true"], B=dec["B"], residual=dec["residual"],
                       delta_acc=fm.delta(sums, measure, "accepted"))
            for k in (0, 1):
                out[f"b_{k}"], out[f"e_{k}"], out[f"k_{k}"] = float(dec["b"][k]), float(dec["e"][k]), float(dec["k"][k])
    # overlap bound per group on the IW predictor (label-error form and per-state calibration form)
    bias_bound = {"label": 0.0, "calibration": 0.0}
    holds = {"label": True, "calibration": True}
    for k in (0, 1):
        m_acc = acc & (g == k)
        err = yhat["iw"][m_acc] - y_obs[m_acc]
        lab = fm.overlap_bound(err, w[m_acc])
        cal = fm.overlap_bound(yhat["iw"][m_acc] - state_mean[m_acc], w[m_acc])
        out[f"d2_{k}"], out[f"mse_{k}"], out[f"bound_{k}"] = lab["d2"], lab["mse"], lab["bound"]
        out[f"bound_cal_{k}"] = cal["bound"]
        out[f"e_iw_{k}"] = lab["e_iw"]
        for form, stats in (("label", lab), ("calibration", cal)):
            bias_bound[form] += out[f"k_{k}"] * stats["bound"]
            holds[form] &= abs(out[f"e_{k}"]) <= stats["bound"]
    out["bias_bound"] = bias_bound["label"]
    out["bias_bound_cal"] = bias_bound["calibration"]
    out["bound_holds"] = bool(holds["label"])
    out["bound_cal_holds"] = bool(holds["calibration"])
    for form, key in (("label", "bias_bound"), ("calibration", "bias_bound_cal")):
        cert = fm.certificate(out["delta_imp_iw"], out[key], omega)
        suffix = "" if form == "label" else "_cal"
        out[f"certified{suffix}"] = cert
        out[f"violated{suffix}"] = bool(cert and abs(out["delta_true"]) > omega)
    return out


def static_study(spec: EnvSpec, full: pd.DataFrame, observed: pd.DataFrame, measures: tuple[str, ...],
                 batch: int, omega: float) -> pd.DataFrame:
    """One row per (batch, measure) of a log: batches are consecutive blocks of `batch` rows."""
    if batch > len(full):
        raise fm.FairnessInputError(f"window W = {batch} is longer than the log ({len(full)} rows)")
    fitted = fit_predictors(spec, observed)
    rows = []
    for b in range(len(full) // batch):
        sl = slice(b * batch, (b + 1) * batch)
        p_true = spec.p_success[full["state"].to_numpy()]
        for est in estimate_batch(full, observed, fitted, sl, measures, omega, p_true):
            rows.append({"batch": b, **est})
    return pd.DataFrame(rows)
