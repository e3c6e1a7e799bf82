"""Blocking data-quality predicates of fair_selective — pure, no Dagster import.

Each returns the list of problems (empty = pass) or a Finding (assets.common.findings)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.findings import finding
from assets.fair_selective import env as envs

PREMISE_GAP = 0.10          # the myopic 1[p > c] policy must be TPR-unfair by at least this (exact)
SHARE_SIGMAS = 3.0
RESIDUAL_TOL = 1e-9
WEIGHT_WARN = 1e3


def env_spec_valid(table: pd.DataFrame) -> list[str]:
    """Σ_s P(s | g) = 1 per (env, group), probabilities in [0, 1], shares sum to 1, success
    monotone in the lending bucket, provenance hash present, and the premise: the exact
    myopic TPR gap |U_1 − U_0| ≥ 0.10."""
    problems = []
    for (name, g), rows in table.groupby(["env", "group"]):
        total = float(rows["p_state"].sum())
        if abs(total - 1) > 1e-6:
            problems.append(f"{name}: Σ p(state | group {g}) = {total:.6f} ≠ 1")
        if name == "lending" and (np.diff(rows.sort_values("bucket")["p_success"].to_numpy()) < 0).any():
            problems.append(f"lending: p_success not monotone in the bucket for group {g}")
    for col in ("p_state", "p_success"):
        bad = table[(table[col] < 0) | (table[col] > 1) | ~np.isfinite(table[col])]
        if len(bad):
            problems.append(f"{len(bad)} row(s) with {col} outside [0, 1]")
    for name, rows in table.groupby("env"):
        if abs(rows["share_0"].iloc[0] + rows["share_1"].iloc[0] - 1) > 1e-9:
            problems.append(f"{name}: group shares do not sum to 1")
        if not str(rows["source_sha256"].iloc[0]):
            problems.append(f"{name}: provenance hash missing")
        gap = abs(float(rows["myopic_tpr_gap"].iloc[0]))
        if not np.isfinite(gap) or gap < PREMISE_GAP:
            problems.append(f"{name}: premise fails — the myopic policy's TPR gap is {gap:.3f} < {PREMISE_GAP}")
    return problems


def myopic_gap_of(spec: envs.EnvSpec) -> float:
    return abs(envs.myopic_tpr_gap(spec))


def pool_valid(pool: pd.DataFrame, env_spec: pd.DataFrame):
    """No nulls; per (env, seed) the group-1 share within 3σ of the spec; the state histogram
    per group passes a χ² goodness-of-fit test (p > 1e-3)."""
    from scipy import stats

    problems = []
    if pool.isna().any().any():
        problems.append("the pool has null values")
    for (name, seed), rows in pool.groupby(["env", "seed"]):
        spec = env_spec[env_spec["env"] == name]
        share = float(spec["share_1"].iloc[0])
        n = len(rows)
        observed = float((rows["group"] == 1).mean())
        sigma = np.sqrt(share * (1 - share) / n)
        if abs(observed - share) > SHARE_SIGMAS * sigma:
            problems.append(f"{name}/seed {seed}: group-1 share {observed:.3f} vs {share:.3f} (> 3σ = {3 * sigma:.3f})")
        for g in (0, 1):
            sub = spec[spec["group"] == g]
            expect = sub["p_state"].to_numpy()
            counts = rows[rows["group"] == g]["state"].value_counts().reindex(sub["state"], fill_value=0).to_numpy()
            keep = expect > 0
            if counts[~keep].sum():
                problems.append(f"{name}/seed {seed}: applicants in zero-probability states")
            exp = expect[keep] / expect[keep].sum() * counts[keep].sum()
            if keep.sum() > 1 and counts.sum() > 0:
                pval = float(stats.chisquare(counts[keep], exp).pvalue)
                if pval <= 1e-3:
                    problems.append(f"{name}/seed {seed}: group {g} state histogram χ² p = {pval:.2g}")
    return finding(problems, ok=f"{pool.groupby(['env', 'seed']).ngroups} pools match their spec")


def observed_logs_valid(observed: pd.DataFrame, params=None):
    """THE selective-label leakage gate: count(label not null ∧ action = 0) = 0. Also: exactly
    two groups, actions in {0, 1}, acceptance probabilities in [0, 1] and > 0 on rejected rows
    (a_K > 0: one past policy), every accepted row labelled, the window W no longer than a log,
    and every batch of W rows has an accepted positive in each group."""
    problems = []
    leaked = int((observed["label"].notna() & (observed["action"] == 0)).sum())
    if leaked:
        problems.append(f"leakage: {leaked} rejected row(s) carry a label")
    if set(observed["group"].unique()) != {0, 1}:
        problems.append(f"groups must be exactly {{0, 1}}, got {sorted(observed['group'].unique().tolist())}")
    if not set(observed["action"].unique()) <= {0, 1}:
        problems.append("actions outside {0, 1}")
    p = observed["accept_prob"]
    if ((p < 0) | (p > 1) | ~np.isfinite(p)).any():
        problems.append(f"{int(((p < 0) | (p > 1)).sum())} acceptance probabilities outside [0, 1]")
    if ((observed["action"] == 0) & (p <= 0)).any():
        problems.append("a_K = 0 on a rejected row: no behaviour policy could accept it (overlap fails)")
    if (observed["label"].isna() & (observed["action"] == 1)).any():
        problems.append("accepted rows without a label")
    if params is not None:
        w = params.static.batch
        sizes = observed.groupby(["env", "seed", "policy"]).size()
        if (sizes < w).any():
            problems.append(f"W = {w} is longer than a log ({int(sizes.min())} rows)")
        else:
            batch = observed["row"] // w
            pos = observed.assign(batch=batch, pos=(observed["action"] == 1) & (observed["label"] == 1))
            counts = pos.groupby(["env", "seed", "policy", "batch", "group"])["pos"].sum()
            empty = counts[counts == 0]
            if len(empty):
                problems.append(f"{len(empty)} (batch, group) cell(s) with no accepted positive, e.g. {empty.index[0]}")
    return finding(problems, ok=f"{len(observed)} logged decisions, 0 leaked labels")


def estimates_valid(estimates: pd.DataFrame) -> list[str]:
    """The decomposition identity (residual ≤ 1e-9, an identity: a failure is a bug) and every
    estimate finite and in [−1, 1]."""
    problems = []
    worst = float(estimates["residual"].max())
    if not worst <= RESIDUAL_TOL:
        problems.append(f"identity Δ_true = Δ_imp + B violated: max residual {worst:.3g} > {RESIDUAL_TOL}")
    for col in ("delta_true", "delta_acc", "delta_imp_unweighted", "delta_imp_iw", "B"):
        v = estimates[col]
        if (~np.isfinite(v) | (v.abs() > 1)).any():
            problems.append(f"{col} not finite or outside [−1, 1]")
    return problems


def checkpoints_valid(table: pd.DataFrame):
    """Finite parameters, a non-empty predictor memory for the agents with a predictor, and
    the identity on every training batch; the largest weight goes into the metadata."""
    problems = [f"{r.env}/{r.agent}/β1={r.beta1}/seed {r.seed}: non-finite parameters"
                for r in table.itertuples() if not r.finite]
    problems += [f"{r.env}/{r.agent}/seed {r.seed}: empty predictor memory"
                 for r in table.itertuples() if r.uses_predictor and r.memory_rows == 0]
    if (table["max_residual"] > RESIDUAL_TOL).any():
        problems.append(f"training-batch identity residual {table['max_residual'].max():.3g} > {RESIDUAL_TOL}")
    return finding(problems, ok=f"{len(table)} checkpoints finite",
                   largest_weight=float(table["largest_weight"].max()),
                   max_importance_weight=float(table["max_importance_weight"].max()))


def importance_weights_moderate(table: pd.DataFrame) -> list[str]:
    """Warning: the largest importance weight w = (1 − π)/a_K above 1e3 (overlap nearly lost)."""
    big = table[table["max_importance_weight"] > WEIGHT_WARN]
    return [f"{r.env}/{r.agent}/seed {r.seed}: max importance weight {r.max_importance_weight:.3g}"
            for r in big.itertuples()]


def selection_valid(selected: pd.DataFrame, agent_checkpoint: pd.DataFrame) -> list[str]:
    """One selected β1 per trained (env, agent), taken from the trained grid."""
    problems = []
    trained = agent_checkpoint.groupby(["env", "agent"])["beta1"].apply(set)
    for (name, kind), betas in trained.items():
        row = selected[(selected["env"] == name) & (selected["agent"] == kind)]
        if len(row) != 1:
            problems.append(f"{name}/{kind}: {len(row)} selected configs")
        elif float(row["beta1"].iloc[0]) not in betas:
            problems.append(f"{name}/{kind}: selected β1 {row['beta1'].iloc[0]} was not trained")
    return problems


def rollouts_valid(rollouts: pd.DataFrame, params) -> list[str]:
    """Δ ∈ [0, 1], resource ≥ 0, episode length ≤ T, actions in {0, 1}, labels only on accepted rows."""
    problems = []
    for col in ("delta_true", "delta_obs"):
        v = rollouts[col].dropna()
        if ((v < 0) | (v > 1)).any():
            problems.append(f"{col} outside [0, 1]")
    if (rollouts["resource"] < 0).any():
        problems.append("negative resource")
    if (rollouts["t"] >= params.horizon).any():
        problems.append(f"an episode longer than T = {params.horizon}")
    if not set(rollouts["action"].unique()) <= {0, 1}:
        problems.append("actions outside {0, 1}")
    if (rollouts["label"].notna() & (rollouts["action"] == 0)).any():
        problems.append("leakage: eval rows with a label on a rejected applicant")
    return problems
