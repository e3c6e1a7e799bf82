"""Bring your own decision log: Δ_obs, Δ_imp, the overlap bound and the certificate.

    python -m assets.fair_selective.cli --csv log.csv --measure tpr [--omega 0.05]

The CSV has one row per decision: `group` (0/1), `action` (0/1), `label` (empty when the
action is 0), any number of feature columns (categorical; one-hot encoded), and optionally
`accept_prob` (the deciding policy's acceptance probability π(x)) and `past_prob_*` columns
(acceptance probabilities of past policies, for a_K = 1 − Π_k (1 − π_k)). Without them the
predictor is unweighted and no bound is given. Prints one JSON object; bad logs (labels on
rejected rows, ≠ 2 groups, probabilities outside [0, 1], a group without an accepted positive,
a_K = 0 on a row) and bad files (missing, empty, not UTF-8, not CSV, header only, a missing or
duplicated column, NaN / inf / text in group, action, accept_prob or past_prob_* at row N) exit
with status 2 and one stderr line naming the file and the reason.
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from assets.common.inputs import InputError, check_finite, check_range, read_frame, run_cli
from assets.fair_selective import fairness as fm
from assets.fair_selective.static import fit_logistic

RESERVED = ("group", "action", "label", "accept_prob")


def analyse(frame: pd.DataFrame, measure: str = "tpr", omega: float = 0.05) -> dict:
    """The estimates of one decision log (see the module docstring)."""
    missing = [c for c in ("group", "action", "label") if c not in frame]
    if missing:
        raise fm.FairnessInputError(f"missing column(s) {missing}")
    g = frame["group"].to_numpy()
    a = frame["action"].to_numpy()
    y = pd.to_numeric(frame["label"], errors="coerce").to_numpy(dtype=float)
    prob = frame["accept_prob"].to_numpy(dtype=float) if "accept_prob" in frame else None
    fm.validate_log(g, a, y, prob)
    g, a = g.astype(np.int64), a.astype(np.int64)
    past_cols = [c for c in frame.columns if c.startswith("past_prob_")]
    features = [c for c in frame.columns if c not in RESERVED and c not in past_cols]
    x = pd.get_dummies(frame[features].astype(str), dtype=float) if features else pd.DataFrame(index=frame.index)
    x = np.concatenate([x.to_numpy(), np.eye(2)[g]], axis=1)
    weighted = prob is not None
    if weighted:
        a_k = fm.coverage(frame[past_cols].to_numpy(dtype=float).T) if past_cols else prob
        w = fm.importance_weights(prob, a_k)
    else:
        w = np.ones(len(frame))
    acc = a == 1
    f = fit_logistic(x[acc], y[acc], g[acc], w[acc])
    p = f(x)
    y_tilde = np.where(acc, np.nan_to_num(y), p)
    sums = fm.group_sums(g, a, y_tilde, y_tilde)      # true labels unknown: only α, ỹ are used
    dec = fm.decomposition(sums, measure)
    out = {"rows": len(frame), "measure": measure, "omega": omega, "weighted": weighted,
           "delta_obs": fm.delta(sums, measure, "accepted"), "delta_imp": fm.delta(sums, measure, "imputation"),
           "acceptance_rate": [float(v) for v in dec["alpha"]]}
    if weighted:
        per_group = [fm.overlap_bound(p[acc & (g == k)] - y[acc & (g == k)], w[acc & (g == k)]) for k in (0, 1)]
        bound = float(sum(dec["k"][k] * per_group[k]["bound"] for k in (0, 1)))
        out.update(bias_bound=bound, d2=[s["d2"] for s in per_group], mse=[s["mse"] for s in per_group],
                   certified=fm.certificate(out["delta_imp"], bound, omega))
    else:
        out.update(bias_bound=None, certified=False,
                   note="no accept_prob column: unweighted predictor, no overlap bound, nothing certified")
    return out


def read_log(path) -> pd.DataFrame:
    """The decision log, checked as a file: the three columns, finite numbers where they must be."""
    frame = read_frame(path, required=("group", "action", "label"))
    numeric = [c for c in frame.columns if c in ("group", "action", "accept_prob") or c.startswith("past_prob_")]
    check_finite(frame, numeric, path)
    check_finite(frame, ["label"], path, allow_nan=True)       # empty on rejected rows
    return frame


@run_cli
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", required=True)
    parser.add_argument("--measure", default="tpr", choices=fm.MEASURES)
    parser.add_argument("--omega", type=float, default=0.05)
    args = parser.parse_args(argv)
    check_range("--omega", args.omega, 0, lo_open=True)
    frame = read_log(args.csv)
    try:
        result = analyse(frame, args.measure, args.omega)
    except fm.FairnessInputError as err:
        raise InputError(f"{args.csv}: {err}") from None
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
