"""Bring your own CSV: PAC-label any table of items with an AI label, a confidence and
purchasable expert labels (pure; used by the command line `assets.pac_labels.cli`).

The table's label column plays the expert: it is wrapped in an `ExpertOracle`, so only the
entries PAC labeling decides to buy are ever read. Output: the input table plus
    pac_label    the final label Ỹ (the expert's where bought, else the AI's)
    provenance   ai | expert_sampled | expert_threshold
    uncertainty  1 − confidence with deterministic tie-breaking jitter
and a summary (threshold û, purchases, fraction saved, the guarantee).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from assets.pac_labels import method as M
from assets.pac_labels.data import TableSpec, encode_table


def label_table(frame: pd.DataFrame, spec: TableSpec, config: M.PACConfig, seed: int = 0,
                tie_break_seed: int = 0) -> tuple[pd.DataFrame, dict[str, Any]]:
    """PAC-label one table. Raises InputError naming the bad column/parameter and rows."""
    if config.loss != spec.loss:
        raise M.InputError(f"loss mismatch: table spec {spec.loss!r} vs config {config.loss!r}")
    items, space = encode_table(frame, spec)
    M.validate_config(config, len(items))
    uncertainty = M.uncertainty_from_confidence(items["confidence"].to_numpy(), seed=tie_break_seed)
    oracle = M.ExpertOracle(items["y"].to_numpy())
    result = M.pac_labeling(items["yhat"].to_numpy(), uncertainty, oracle, config, np.random.default_rng(seed))
    out = frame.copy()
    if space:
        out["pac_label"] = [space[int(code)] for code in result.labels]
    else:
        out["pac_label"] = result.labels
    out["provenance"] = np.asarray(M.PROVENANCE, dtype=object)[result.provenance]
    out["uncertainty"] = uncertainty
    n = len(items)
    cal = result.calibration
    summary = {
        "rows": n, "epsilon": config.epsilon, "alpha": config.alpha, "num_draws": config.num_draws,
        "ci": config.ci, "loss": config.loss, "seed": int(seed),
        "u_hat": cal.u_hat if np.isfinite(cal.u_hat) else None, "threshold_feasible": cal.feasible,
        "expert_labels_bought": oracle.n_bought, **oracle.counts(),
        "ai_labels_kept": int(np.count_nonzero(result.provenance == M.AI)),
        "fraction_saved": 1.0 - oracle.n_bought / n,
        "guarantee": (f"with probability ≥ {1 - config.alpha:g} over this run's random draws, the mean "
                      f"{config.loss} loss of pac_label against the true labels is ≤ {config.epsilon:g}"
                      + (" (asymptotic: CLT bound)" if config.ci == "clt" else "")),
    }
    return out, summary
