"""D5a (SDE below ODE) is judged per cell by a paired CI over seeds, never by the seed means."""
from __future__ import annotations

import pandas as pd

from assets.diffusion_w2 import benchmark


def _runs(cells: dict[str, tuple[list[float], list[float]]]) -> pd.DataFrame:
    rows = []
    for err, (sde, ode) in cells.items():
        for sampler, values in (("sde", sde), ("ode", ode)):
            rows += [{"target": "gauss1d", "process": "vp", "sampler": sampler, "grid": "uniform", "delta": 1e-3,
                      "K": 200, "seed": s, "error_model": err, "rms": v} for s, v in enumerate(values)]
    return pd.DataFrame(rows)


def test_sde_below_ode_established_on_every_cell():
    cells = benchmark.sde_vs_ode_cells(_runs({"a": ([1.0, 1.1, 0.9], [2.0, 2.1, 2.05]),
                                              "b": ([0.5, 0.52, 0.49], [0.8, 0.79, 0.83])}))
    assert cells["established"].all() and (cells["seeds"] == 3).all()
    claim = benchmark.sde_below_ode_claim(cells)
    assert claim.verdict == "holds" and claim.seeds == "0–2 (3)" and "2 hold, 0 refuted" in claim.measured_value


def test_sde_below_ode_fails_when_a_cell_ci_straddles_zero():
    """Cell b: the SDE seed mean is below the ODE's (the old point rule counts it), but the
    seeds disagree and the 90 % CI of RMS_SDE − RMS_ODE reaches above 0."""
    cells = benchmark.sde_vs_ode_cells(_runs({"a": ([1.0, 1.1, 0.9], [2.0, 2.1, 2.05]),
                                              "b": ([0.5, 1.2, 0.4, 1.1], [0.9, 0.7, 0.9, 0.8])}))
    b = cells.set_index("error_model").loc["b"]
    assert b["sde"] < b["ode"] and b["sde_below_ode"] and not b["established"]
    claim = benchmark.sde_below_ode_claim(cells)
    assert claim.verdict == "inconclusive" and "1 hold, 0 refuted, 1 inconclusive of 2" in claim.measured_value
    assert "seed means SDE < ODE in 2/2" in claim.measured_value
    assert claim.seeds == "0–3 (4); 3–4 per configuration"


def test_sde_below_ode_one_seed_establishes_nothing():
    cells = benchmark.sde_vs_ode_cells(_runs({"a": ([1.0], [2.0])}))
    assert not cells["established"].any()
    assert benchmark.sde_below_ode_claim(cells).verdict == "inconclusive"


def test_sde_below_ode_is_refuted_when_one_cell_is_confidently_above():
    cells = benchmark.sde_vs_ode_cells(_runs({"a": ([1.0, 1.1, 0.9], [2.0, 2.1, 2.05]),
                                              "b": ([2.0, 2.1, 2.05], [1.0, 1.1, 0.9])}))
    assert benchmark.sde_below_ode_claim(cells).verdict == "refuted"


def test_seeds_text():
    assert benchmark.seeds_text([5, 5]) == "0–4 (5)"
    assert benchmark.seeds_text([3, 5]) == "0–4 (5); 3–5 per configuration"
    assert benchmark.seeds_text([]) == "none"
