"""diffusion_w2 device check (issue 49): cpu/device parity of the torch chains of the gpu profile, then
a timed slice of them on the device and the projection of the gpu profile's coupled runs.

Nothing is trained: the torch computation is the coupled reverse-time chains
(torch_backend.simulate_coupled_torch, float64 at the gpu profile) and the W2 estimators on its output.
1. parity — per target (the gpu profile's 1-, 2-, 16- and 64-D targets, the gpu-only ones included)
   one configuration (vp, SDE, uniform grid, δ = 0.001, K = PARITY_K) with fixed draws
   (method.ChainDraws, numpy, the same on both sides) on the CPU and on `--device`: the true,
   replica and perturbed chains (all error models of the profile), the path Hessian extremes, and the
   target's W2 estimate (empirical.w2_method's estimator, torch_backend.w2_estimate; OT, a host
   computation, on PARITY_OT particles) between the true and first perturbed chain. n is capped at
   PARITY_ELEMENTS / d particles (the step is elementwise in the particles: n does not change the
   arithmetic). Fails (exit 1) past the tolerances below.
2. speed — per dimension, one chain of the gpu profile's size (n_particles[d], every error model,
   device generator, curvature recorded) with K = TIMED_K steps, and one W2 estimate on its output;
   the projection is particle-steps of every gpu-profile configuration × seed / the measured rate,
   plus W2 estimates × their measured cost.

    .venv/bin/python benchmarks/diffusion_w2_device_check.py --device cuda --out /tmp/diffusion_w2_device.json
    .venv/bin/python benchmarks/diffusion_w2_device_check.py --device cpu --tiny     # exercises the code (tests)

On `--device cpu` both sides are the same CPU kernels: the parity is exact (the tests use that).
"""
from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

CHAIN_TOL = 1e-9        # max |Δ| of the chain states, relative to max |y| (float64 on both sides)
LAMBDA_TOL = 1e-9       # max |Δ| of the path Hessian extremes, relative
W2_TOL = 1e-6           # relative |Δ| of the W2 estimate (sorting / sliced / moments; OT runs on the host)
PARITY_K, TINY_K = 50, 8
PARITY_ELEMENTS = 16_000          # particles × dimension of a parity chain (fixed draws are K × n × d × (2 + E))
TIMED_K = 50
PARITY_OT = 500                   # OT runs on the host (copies of the device chains): a small subsample suffices
TINY_N = 256
PARITY_TARGETS = ("gmm1d_mild", "logistic", "gmm2d", "gmm16d", "gmm64d", "gauss64d")
TIMED_TARGETS = {1: "gmm1d_mild", 2: "gmm2d", 16: "gmm16d", 64: "gmm64d"}      # one per dimension


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    from assets.common.params import parse
    from assets.diffusion_w2 import empirical as EMP
    from assets.diffusion_w2 import runs
    from assets.diffusion_w2 import torch_backend as TB
    from assets.diffusion_w2.method import ChainDraws
    from assets.diffusion_w2.params import DiffusionW2Params
    from assets.diffusion_w2.processes import time_grid_frame
    from resources.profiles import load_params

    p = parse(DiffusionW2Params, load_params("diffusion_w2", "gpu"), "diffusion_w2.gpu")
    dtype = TB.resolve_dtype(p.dtype)
    targets = runs.targets_from_frame(runs.target_rows(list(p.targets)))
    processes = runs.build_processes(p.process)
    errors = list(runs.error_models_from_frame(runs.error_model_rows(p.error_models)).values())
    ot_subsample = 64 if args.tiny else p.ot_subsample
    projections = 16 if args.tiny else p.sliced_projections
    report: dict = {"paper": "diffusion_w2", "device": args.device, "tiny": args.tiny, "torch": torch.__version__,
                    "dtype": p.dtype, "error_models": [e.name for e in errors]}

    def estimate(target, x, y, seed: int, ot: int = ot_subsample) -> tuple[str, float]:
        method = EMP.w2_method(target, ot, projections)
        dirs = None
        if method.startswith("sliced"):
            dirs = torch.as_tensor(EMP.sliced_directions(target.dim, projections, seed), dtype=dtype, device=x.device)
        return method, TB.w2_estimate(x, y, method, ot, dirs)

    # 1. parity
    K = TINY_K if args.tiny else PARITY_K
    grid = time_grid_frame(processes["vp"], "uniform", 0.001, K)
    parity, ok = {}, True
    for name in PARITY_TARGETS:
        target = targets[name]
        n = TINY_N if args.tiny else min(int(p.n_particles[target.dim]), PARITY_ELEMENTS // target.dim)
        draws = ChainDraws.draw(target, grid, len(errors), n, seed=1)
        side = {}
        for label, dev in (("cpu", "cpu"), ("dev", args.device)):
            out = TB.simulate_coupled_torch(target, grid, "sde", errors, n, 0, dev, dtype, draws=draws,
                                            T=p.process.T)
            chains = torch.cat([out["true"][None], out["replica"][None], out["perturbed"]]).cpu()
            side[label] = {
                "chains": chains, "lam": np.stack([out["path_lambda_min"], out["path_lambda_max"]]),
                "w2": estimate(target, out["true"], out["perturbed"][0], seed=2, ot=min(ot_subsample, PARITY_OT))}
        a, b = side["cpu"], side["dev"]
        scale = float(a["chains"].abs().max())
        lam_scale = max(float(np.nanmax(np.abs(a["lam"]))), 1e-300)
        row = {"dim": target.dim, "n": n, "K": K,
               "chain_max_rel_diff": float((a["chains"] - b["chains"]).abs().max()) / scale,
               "lambda_max_rel_diff": float(np.nanmax(np.abs(a["lam"] - b["lam"]))) / lam_scale,
               "w2_method": a["w2"][0], "w2": a["w2"][1],
               "w2_rel_diff": abs(a["w2"][1] - b["w2"][1]) / max(abs(a["w2"][1]), 1e-300),
               "finite": bool(torch.isfinite(b["chains"]).all())}
        row["ok"] = bool(row["finite"] and row["chain_max_rel_diff"] <= CHAIN_TOL
                         and row["lambda_max_rel_diff"] <= LAMBDA_TOL and row["w2_rel_diff"] <= W2_TOL)
        ok &= row["ok"]
        parity[name] = row
    parity["ok"] = bool(ok)
    report["parity"] = parity
    print(f"parity: {parity}", file=sys.stderr, flush=True)

    # 2. speed on the device, per dimension, at the gpu profile's n
    K = TINY_K if args.tiny else TIMED_K
    grid = time_grid_frame(processes["vp"], "uniform", 0.001, K)
    rates, w2_cost = {}, {}
    for d, name in TIMED_TARGETS.items():
        target = targets[name]
        n = TINY_N if args.tiny else int(p.n_particles[d])
        steps = TB.TorchSteps(target, grid, args.device, dtype)
        run = partial(TB.simulate_coupled_torch, target, grid, "sde", errors, n, 3, args.device, dtype,
                      steps=steps, T=p.process.T)
        TB.time_chain(run, args.device)                                    # warm-up (allocator, kernels)
        out, wall = TB.time_chain(run, args.device)
        rates[d] = n * (2 + len(errors)) * K / wall
        t0 = time.perf_counter()
        method, _ = estimate(target, out["true"], out["perturbed"][0], seed=4)
        TB.synchronize(args.device)
        w2_cost[d] = {"method": method, "seconds": time.perf_counter() - t0}
    report["slice"] = {"K": K, "particle_steps_per_s": {str(d): r for d, r in rates.items()},
                       "n": {str(d): (TINY_N if args.tiny else int(p.n_particles[d])) for d in TIMED_TARGETS},
                       "w2_estimate": {str(d): v for d, v in w2_cost.items()}}

    # the gpu profile's coupled runs: particle-steps and W2 estimates per dimension
    configs, _ = runs.all_configs(p)
    steps_by_dim: dict[int, float] = {}
    estimates_by_dim: dict[int, float] = {}
    for cfg in configs.itertuples(index=False):
        d = targets[cfg.target].dim
        chains = 2 + len(cfg.errors)
        steps_by_dim[d] = steps_by_dim.get(d, 0.0) + float(p.n_particles[d]) * chains * cfg.K * cfg.seeds
        per_seed = 1 + (len(cfg.errors) if d != 2 else sum(e in p.ot_errors for e in cfg.errors))
        estimates_by_dim[d] = estimates_by_dim.get(d, 0.0) + per_seed * cfg.seeds
    parts = []
    for d in sorted(steps_by_dim):
        parts.append((f"particle-step, d = {d} (rate of {TIMED_TARGETS[d]})", 1.0 / rates[d], steps_by_dim[d]))
        parts.append((f"W2 estimate, d = {d} ({w2_cost[d]['method']})", w2_cost[d]["seconds"], estimates_by_dim[d]))
    report["projection"] = device_check.projection(parts, note=(
        "dsb_coupled_runs only, with one target's rate per dimension (the logistic table and the other mixtures "
        "are assumed to cost the same) and every seed recording curvature (an upper bound); leaves out the "
        "bounds and Hessian checks (numpy), the backend benchmark and the report"))
    return device_check.finish(report, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
