"""Forward processes and reverse grids: closed forms, inverses, grid shapes, bad input."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad

from assets.diffusion_w2.processes import Process, make_taus, time_grid_frame, validate_grid

VP, VE = Process("vp"), Process("ve")


def test_vp_marginal_is_variance_preserving_with_known_decay():
    t = np.array([1e-4, 0.3, 1.0])
    a, s = VP.alpha_sigma(t)
    integral = 0.1 * t + 0.5 * (20 - 0.1) * t ** 2           # ∫₀ᵗ β
    assert np.allclose(a, np.exp(-0.5 * integral), rtol=1e-12)
    assert np.allclose(a ** 2 + s ** 2, 1.0, rtol=1e-12)
    eps = 1e-6                                                # d log a / dt = −β/2
    dlog = (np.log(VP.alpha_sigma(0.3 + eps)[0]) - np.log(VP.alpha_sigma(0.3 - eps)[0])) / (2 * eps)
    assert dlog == pytest.approx(-0.5 * float(VP.beta(0.3)), rel=1e-6)


def test_ve_variance_is_the_integral_of_g_squared():
    for t in (1e-3, 0.25, 1.0):
        integral, _ = quad(lambda u: float(VE.diffusion_sq(u)), 0, t, epsabs=0, epsrel=1e-11)
        assert float(VE.alpha_sigma(t)[1]) ** 2 == pytest.approx(integral, rel=1e-8)
    assert float(VE.alpha_sigma(0.0)[1]) == 0.0
    assert float(VE.alpha_sigma(1.0)[1]) == pytest.approx(50.0, rel=1e-4)


@pytest.mark.parametrize("process", [VP, VE])
def test_time_of_nsr_inverts_nsr(process):
    t = np.array([1e-4, 1e-2, 0.2, 0.7, 1.0])
    assert np.allclose(process.time_of_nsr(process.nsr(t)), t, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("process", [VP, VE])
def test_grids_have_their_defining_spacing(process):
    delta, K = 1e-3, 40
    uni = make_taus(process, "uniform", delta, K)
    assert np.allclose(np.diff(uni), -(1 - delta) / K)
    quad_ = make_taus(process, "quadratic", delta, K)
    assert np.allclose(np.diff(np.sqrt(quad_)), (np.sqrt(delta) - 1) / K)
    logsnr = make_taus(process, "logsnr", delta, K)
    assert np.allclose(np.diff(np.log(process.nsr(logsnr))), np.log(process.nsr(delta) / process.nsr(1.0)) / K,
                       rtol=1e-6)
    edm = make_taus(process, "edm", delta, K)
    assert np.allclose(np.diff(process.nsr(edm) ** (1 / 7)), np.diff(process.nsr(edm) ** (1 / 7))[0], rtol=1e-6)
    for taus in (uni, quad_, logsnr, edm):
        assert taus[0] == 1.0 and taus[-1] == delta and np.all(np.diff(taus) < 0)
    # the quadratic, EDM and log-SNR grids are finer than uniform near t = 0
    assert quad_[-2] < uni[-2] and edm[-2] < uni[-2] and logsnr[-2] < uni[-2]


def test_bad_delta_and_K_are_named():
    with pytest.raises(ValueError, match="delta .* must be < T"):
        make_taus(VP, "uniform", 1.0, 10)
    with pytest.raises(ValueError, match="delta"):
        make_taus(VP, "uniform", -1e-3, 10)
    with pytest.raises(ValueError, match="K"):
        make_taus(VP, "uniform", 1e-3, 0)
    with pytest.raises(ValueError, match="grid"):
        make_taus(VP, "cosine", 1e-3, 10)


def test_step_table_coefficients_and_validation():
    frame = time_grid_frame(VP, "uniform", 1e-3, 10)
    assert validate_grid(frame, 1.0) == []
    assert np.allclose(frame["alpha"], 0.5 * frame["gamma"])               # VP: α = β/2, γ = β
    assert np.allclose(frame["h"].sum(), 1 - 1e-3)
    ve = time_grid_frame(VE, "edm", 1e-3, 10)
    assert (ve["alpha"] == 0).all() and validate_grid(ve, 1.0) == []
    broken = frame.copy()
    broken.loc[[3, 4], "tau"] = broken.loc[[4, 3], "tau"].to_numpy()
    problems = validate_grid(broken, 1.0)
    assert any("not strictly decreasing" in p for p in problems)
