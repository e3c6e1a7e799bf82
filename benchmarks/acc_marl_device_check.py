"""acc_marl device check (issue 20): cpu/cuda parity of one PPO update, then env steps/s on the device.

One script, under 5 min on a GPU machine:
1. parity — the same network (seeded on the CPU, copied to the device) and the same rollout batch (observations
   of a random-action rollout of the gpu profile's task space, fixed actions / advantages / returns): the forward
   pass (logits, values), the first minibatch's loss and gradient, and one full `ppo._update` (epochs ×
   minibatches with the same numpy permutation stream) are compared between the CPU and `--device`.
   TF32 is switched off so CUDA matmuls and convolutions are float32. Fails (exit 1) past the tolerances below.
2. speed — `ppo.train` for `--iterations` PPO iterations at the gpu profile's rollout size (n_envs × n_steps) on
   the device, and one iteration at the cpu profile's rollout size on one CPU thread: env steps/s of each.

    .venv/bin/python benchmarks/acc_marl_device_check.py --device cuda --out /tmp/acc_marl_device.json
    .venv/bin/python benchmarks/acc_marl_device_check.py --device cpu --tiny      # exercises the code (tests)

On `--device cpu` the parity is exact (both sides are the same CPU kernels): the tests use that.
"""
from __future__ import annotations

import copy
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

FORWARD_TOL = 1e-4      # max |Δ| of logits / values, float32 on both sides
GRAD_TOL = 1e-3         # max |Δ| of the first minibatch's gradient, relative to its max |g|
STATS_TOL = 1e-3        # relative |Δ| of the update's entropy / losses / approx KL


def _rollout_batch(env, layout, T: int, rng: np.random.Generator) -> dict:
    """Observations of T random-action steps (T, B, ...) plus fixed actions, log-probs, advantages, returns."""
    E, n = env.pos.shape[:2]
    B = E * n
    grids = np.zeros((T, B, layout.n_channels, *layout.shape), dtype=np.float32)
    dfas = np.zeros((T, B, n), dtype=np.int64)
    for t in range(T):
        obs = env.observe()
        grids[t], dfas[t] = obs["grid"].reshape(B, *grids.shape[2:]), obs["dfa"].reshape(B, n)
        env.step(rng.integers(0, 5, size=(E, n)), shaping=True)
    return {"grids": grids, "dfas": dfas, "acts": rng.integers(0, 5, size=(T, B)),
            "logps": np.full((T, B), np.log(0.2), dtype=np.float32),
            "adv": rng.standard_normal((T, B)).astype(np.float32),
            "rets": rng.standard_normal((T, B)).astype(np.float32),
            "starts": np.zeros((T, B), dtype=np.float32)}


def parity(device: str, p, layout, arrays, graphs, roots, T: int, n_envs: int, seed: int = 0) -> dict:
    """Max differences between the CPU and `device` on the same net and batch (see the module docstring)."""
    import torch

    from assets.acc_marl import ppo
    from assets.acc_marl.env import TeamEnv
    from assets.acc_marl.runs import ppo_config

    cfg = dataclasses.replace(ppo_config(p), n_envs=n_envs, n_steps=T)
    rng = np.random.default_rng([seed, 11])
    env = TeamEnv(layout, arrays, n_envs, cfg.max_len, cfg.gamma, rng,
                  sample_ids=lambda r, e, n: roots[r.integers(len(roots), size=(e, n))])
    env.reset()
    batch = _rollout_batch(env, layout, T, rng)
    torch.manual_seed(seed)
    nets = {"cpu": ppo.net_for(torch, layout, cfg, "pbrs")}
    nets[device] = copy.deepcopy(nets["cpu"]).to(device)
    encs = {d: ppo.Encoded(torch, graphs, arrays.n_states, d) for d in nets}
    out = {}
    first = {}
    for d, net in nets.items():
        enc = encs[d]
        B = n_envs * layout.n_agents
        k = min(B, 256)
        feats = enc.embed(net, batch["dfas"][0, :k])
        agent = enc.tensor(np.tile(np.arange(layout.n_agents), B // layout.n_agents)[:k])
        logits, value = net(enc.tensor(batch["grids"][0, :k]), agent, feats)
        loss = torch.distributions.Categorical(logits=logits).entropy().mean() + (value ** 2).mean()
        net.zero_grad()
        loss.backward()
        grad = torch.cat([q.grad.reshape(-1) for q in net.parameters() if q.grad is not None]).cpu()
        first[d] = {"logits": logits.detach().cpu(), "value": value.detach().cpu(), "grad": grad}
        net.zero_grad()
    for d, net in nets.items():
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, eps=1e-5)
        first[d]["stats"] = ppo._update(torch, net, opt, encs[d], cfg, np.random.default_rng([seed, 12]),
                                        batch["grids"], batch["dfas"], batch["acts"], batch["logps"], batch["adv"],
                                        batch["rets"], batch["starts"], None, False, layout.n_agents)
        first[d]["params"] = torch.cat([q.detach().reshape(-1) for q in net.parameters()]).cpu()
    a, b = first["cpu"], first[device]
    out["forward_max_abs"] = float(max((a["logits"] - b["logits"]).abs().max(), (a["value"] - b["value"]).abs().max()))
    out["grad_max_rel"] = float((a["grad"] - b["grad"]).abs().max() / a["grad"].abs().max().clamp_min(1e-12))
    out["stats_max_rel"] = float(max(abs(a["stats"][k] - b["stats"][k]) / max(abs(a["stats"][k]), 1e-12)
                                     for k in a["stats"]))
    out["params_max_abs_after_update"] = float((a["params"] - b["params"]).abs().max())     # reported, not judged
    out["ok"] = bool(out["forward_max_abs"] <= FORWARD_TOL and out["grad_max_rel"] <= GRAD_TOL
                     and out["stats_max_rel"] <= STATS_TOL)
    return out


def steps_per_second(device: str, p, layout, arrays, graphs, roots, n_envs: int, n_steps: int,
                     iterations: int) -> float:
    """Env steps/s of `ppo.train` (rollout + update) for `iterations` iterations on `device`."""
    from assets.acc_marl import ppo
    from assets.acc_marl.runs import ppo_config

    cfg = dataclasses.replace(ppo_config(p), n_envs=n_envs, n_steps=n_steps, total_steps=iterations * n_envs * n_steps)
    start = time.perf_counter()
    ppo.train(layout, arrays, graphs, roots, cfg, "pbrs", seed=0, threads=1, device=device)
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
    return cfg.total_steps / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    def extra(ap):
        ap.add_argument("--layout", default="rooms2")
        ap.add_argument("--iterations", type=int, default=3, help="PPO iterations timed on the device (gpu sizes)")

    args = device_check.arguments(argv, "/tmp/acc_marl_device_check.json", extra)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    from assets.acc_marl import layouts as lay_mod
    from assets.acc_marl import model as model_mod
    from assets.acc_marl import runs
    from assets.acc_marl.params import AccMarlParams
    from assets.common.params import parse
    from resources.profiles import deep_merge, load_params

    raw = load_params("acc_marl", "gpu")
    if args.tiny:
        raw = deep_merge(raw, {"pool": {"train": 5, "test": 2, "ood": 2}})
    p = parse(AccMarlParams, raw, "acc_marl.gpu")
    cpu_p = parse(AccMarlParams, load_params("acc_marl", "cpu"), "acc_marl.cpu")
    layouts = runs.layouts_table(p)
    pool = runs.build_pool(p, layouts, lambda *k: np.random.default_rng([7, len(k), *map(len, map(str, k))]))
    arrays, dpool = runs.pool_from_table(pool)
    graphs = model_mod.dfa_graphs(dpool)
    layout = lay_mod.parse(lay_mod.LAYOUTS[args.layout], args.layout)
    roots = runs.roots(pool, "train", "RAD")
    T, E = (8, 2) if args.tiny else (128, 32)
    report = {"device": args.device, "layout": args.layout, "torch": torch.__version__,
              "parity": parity(args.device, p, layout, arrays, graphs, roots, T, E)}
    print(f"parity: {report['parity']}", flush=True)
    big = (2, 8, 1) if args.tiny else (p.train.n_envs, p.train.n_steps, args.iterations)
    small = (2, 8, 1) if args.tiny else (cpu_p.train.n_envs, cpu_p.train.n_steps, 1)
    report["device_env_steps_per_s"] = steps_per_second(args.device, p, layout, arrays, graphs, roots, *big)
    report["device_rollout"] = {"n_envs": big[0], "n_steps": big[1], "iterations": big[2]}
    report["cpu_env_steps_per_s"] = steps_per_second("cpu", p, layout, arrays, graphs, roots, *small)
    report["cpu_rollout"] = {"n_envs": small[0], "n_steps": small[1], "iterations": small[2], "threads": 1}
    report["speedup"] = report["device_env_steps_per_s"] / report["cpu_env_steps_per_s"]
    gpu = parse(AccMarlParams, load_params("acc_marl", "gpu"), "acc_marl.gpu")
    runs_n = len(gpu.layouts) * len(gpu.variants) * len(gpu.seeds)
    report["projection"] = device_check.projection(
        [(f"env step of ppo.train ({args.layout}, rollout {big[0]}×{big[1]}, update included)",
          1 / report["device_env_steps_per_s"], gpu.train.total_steps * runs_n)],
        note="measured at --tiny sizes; " * args.tiny
        + "leaves out the task pool, evaluation episodes (R / RA / RAD, OOD), assignment and trace studies, "
          "checkpoint writes; every layout and variant (gru included) costed at the pbrs network's step")
    return device_check.finish(report, report["parity"]["ok"], args.out)


if __name__ == "__main__":
    sys.exit(main())
