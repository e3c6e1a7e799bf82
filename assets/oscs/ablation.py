"""Where OSCS's FAR and power go: swap estimated pieces for the truth — no Dagster import.

OSCS's malicious posterior m̂ = 1 − π̂0 f̂0(s) / f̂(s) has three estimated pieces: the null
proportion π̂0 (Storey on conformal p-values), the benign density f̂0 (KDE of the m
calibration scores) and the mixture density f̂ (recursive KDE of the stream). Each variant
below replaces some of them by the truth and re-runs the same online rule on the same stream:

    estimated      π̂0, f̂0, f̂       (OSCS as specified)
    true_pi0       π0,  f̂0, f̂
    true_f0        π̂0, f0,  f̂
    true_f         π̂0, f̂0, f
    true_pi0_f0    π0,  f0,  f̂
    true_all       π0,  f0,  f      (the oracle posterior: B3's rule, with OSCS's burn-in)
 On the text streams "true" means the distributions
the stream is sampled from: f0 = Gaussian KDE of the whole labelled benign stream pool, f1 =
KDE of the scenario's attack pool, f = (1 − π1) f0 + π1 f1, π0 = 1 − π1 of the scenario. On
the Gaussian suite they are closed forms.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from assets.oscs import method as M
from assets.oscs.streams import SCENARIOS, scenario_target_pi1

VARIANTS: dict[str, tuple[str, ...]] = {
    "estimated": (),
    "true_pi0": ("pi0",),
    "true_f0": ("f0",),
    "true_f": ("f",),
    "true_pi0_f0": ("pi0", "f0"),
    "true_all": ("pi0", "f0", "f"),
}


def oracle_parts(truth: dict, swapped: tuple[str, ...]) -> M.OracleParts:
    """OracleParts with the pieces named in `swapped` taken from `truth` (pi0, f0, f)."""
    return M.OracleParts(**{name: truth[name] for name in swapped})


def _lookup(scores: np.ndarray, values: np.ndarray) -> Callable[[float], float]:
    """A density known at the stream's own scores (the ablation is offline: every score of the
    stream is known in advance, so the truth can be tabulated at exactly those points)."""
    table = dict(zip(np.asarray(scores, dtype=float).tolist(), np.asarray(values, dtype=float).tolist()))
    return table.__getitem__


def text_truth(detector_scores: pd.DataFrame, detector: str, scenario: str, stream_scores: np.ndarray) -> dict:
    """True π0, f0, f of one text stream (see the module docstring); f0 and f as lookups at
    the stream's scores."""
    spec = SCENARIOS[scenario]
    attacks = spec.get("attacks") or (*spec["attacks_first"], *spec["attacks_second"])
    own = detector_scores[detector_scores["detector"] == detector]
    benign = own[own["role"] == "stream"]["score"].to_numpy(dtype=float)
    malicious = own[(own["role"] == "attack") & own["attack"].isin(attacks)]["score"].to_numpy(dtype=float)
    scores = np.asarray(stream_scores, dtype=float)
    pi1 = scenario_target_pi1(scenario, scores.size)
    f0 = M.gaussian_kde(scores, benign, M.silverman_bandwidth(benign))
    f1 = M.gaussian_kde(scores, malicious, M.silverman_bandwidth(malicious))
    return {"pi0": 1.0 - pi1, "f0": _lookup(scores, f0), "f": _lookup(scores, (1 - pi1) * f0 + pi1 * f1)}


def gaussian_truth(mu: float, pi1: float) -> dict:
    """Closed-form π0, f0 = N(0, 1), f = (1 − π1) N(0, 1) + π1 N(μ, 1)."""
    def phi(x: float) -> float:
        return float(np.exp(-0.5 * x * x) / M.SQRT_2PI)

    return {"pi0": 1.0 - pi1, "f0": phi, "f": lambda s: (1 - pi1) * phi(s) + pi1 * phi(s - mu)}


def ablate(scores: np.ndarray, labels: np.ndarray, calib: np.ndarray, truth: dict, alpha: float,
           config: M.OSCSConfig) -> list[dict]:
    """One row per variant: far_selected, tar, pi0_used (π0 at the last step), n_accepted."""
    cfg = replace(config, alpha=alpha)
    rows = []
    for variant, swapped in VARIANTS.items():
        trace = M.run_oscs(scores, calib, cfg, oracle_parts(truth, swapped))
        rows.append({"variant": variant, "far_selected": M.far_selected(trace["decision"], labels),
                     "tar": M.tar(trace["decision"], labels), "pi0_used": float(trace["pi0_hat"][-1]),
                     "n_accepted": int(trace["decision"].sum())})
    return rows
