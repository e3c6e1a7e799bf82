"""Diagnose fair_selective's agents from a finished run's checkpoints (no training).

For every checkpoint: the exact TPR gap of its final stochastic policy at the pool's state
distribution, Σ_s π(s)·p(s)·P(s | g) / Σ_s p(s)·P(s | g) per group (what the windowed evaluation
estimates, without window noise), its mean acceptance, and its distance to the myopic policy
1[p > c] (mean |π(s) − 1[p(s) > c]| weighted by P(s)). Separates "the agent learned an unfair
policy" from "the window estimate is noisy", and shows how far PPO is from the myopic optimum.

    PAPERLAB_DATA_DIR=/tmp/pnew/fair_selective/data .venv/bin/python -m benchmarks.fair_selective_ablation
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from assets.common.report import markdown_table
from assets.fair_selective import agents as ag
from assets.fair_selective import env as envs
from assets.fair_selective import runs
from resources.artifacts import data_root, load_checkpoint


def policy_gap(spec: envs.EnvSpec, accept: np.ndarray) -> tuple[float, float, float]:
    tpr, dist = [], 0.0
    for g in (0, 1):
        m = spec.states[:, 0] == g
        pos = spec.p_state[m] * spec.p_success[m]
        tpr.append(float((pos * accept[m]).sum() / pos.sum()))
        dist += spec.shares[g] * float((spec.p_state[m] * np.abs(accept[m] - (spec.p_success[m] > spec.cost))).sum())
    mean_accept = float(sum(spec.shares[g] * (spec.p_state[spec.states[:, 0] == g]
                                             * accept[spec.states[:, 0] == g]).sum() for g in (0, 1)))
    return tpr[1] - tpr[0], mean_accept, dist


def main() -> None:
    table = pd.read_parquet(data_root() / "fair_selective" / "agent_checkpoint.parquet")
    rows = []
    for r in table.itertuples():
        state, sidecar = load_checkpoint({"checkpoint": r.checkpoint, "md5": r.md5})
        cfg = ag.AgentConfig(**sidecar["config"])
        spec = envs.env_spec(r.env, 0.5, (0.7, 0.3))
        tabs = runs.tables_from_state(state, spec, cfg)
        gap, acc, dist = policy_gap(spec, tabs["accept"])
        rows.append({"env": r.env, "agent": r.agent, "beta1": r.beta1, "seed": r.seed, "policy_tpr_gap": abs(gap),
                     "mean_accept": acc, "distance_to_myopic": dist, "train_delta_obs": r.train_delta_obs,
                     "train_delta_true": r.train_delta_true})
    frame = pd.DataFrame(rows)
    agg = frame.groupby(["env", "agent", "beta1"]).agg(
        policy_tpr_gap=("policy_tpr_gap", "mean"), gap_min=("policy_tpr_gap", "min"),
        gap_max=("policy_tpr_gap", "max"), mean_accept=("mean_accept", "mean"),
        distance_to_myopic=("distance_to_myopic", "mean"), train_delta_obs=("train_delta_obs", "mean"),
        train_delta_true=("train_delta_true", "mean")).reset_index()
    print(markdown_table(agg))
    for env in sorted(frame["env"].unique()):
        spec = envs.env_spec(env, 0.5, (0.7, 0.3))
        print(f"{env}: myopic policy exact TPR gap {abs(envs.myopic_tpr_gap(spec)):.3f}; random (π = 0.5) gap 0")


if __name__ == "__main__":
    main()
