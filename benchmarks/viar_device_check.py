"""viar device check (issue 49): cpu/device parity of the gpu profile's MSVQ tokenizer, VAR and VIAR
transformers, then a timed slice of their training and sampling on the device and the projected
gpu-profile time.

1. parity — every model is built by the paper's code (tokenizer.MultiScaleVQVAE from
   runs.tokenizer_config, model.NextScaleAR from runs.ar_config) at the gpu profile's sizes (viar.gpu
   over base: tokenizer hidden 64 / V = 128 / Cvae 16 on digits 8×8 and shapes 32×32; AR width 256,
   8 heads, VAR at the claims' depth 12, VIAR p2 + implicit + 2 post), seeded on the CPU and copied to
   `--device`, on PARITY_IMAGES real images (data.build_dataset) and their token pyramids
   (tokenizer.token_pyramid of the seeded tokenizer). TF32 off. For each:
   - forward, loss, gradient, one optimizer step and the loss after it (_torch_parity.step_parity):
     the tokenizer's reconstruction and VQ loss under train_tokenizer's loss (MSE + VQ term, Adam);
     VAR's teacher-forced logits and VIAR's at the profile's S-JFB maximum (n = jfb_n detached, m = jfb_m
     with gradient) under train_ar's cross-entropy, AdamW(0.9, 0.95, weight decay), clip; one label is
     the unconditional class (label dropout);
   - the paper's own loops for TRAJ_STEPS steps on both sides (model.train_ar: grouped AdamW, warm-up
     + cosine lr, clip, label dropout and the S-JFB draws from its CPU generators; tokenizer.
     train_tokenizer: OneCycle Adam), warm-up 1 so the second step is at full lr: the losses and the
     L2 difference of the weights' change;
   - the KV-cached sampling pass (model.generate, classifier-free guidance) forced to the teacher
     tokens (teacher_tokens: the device's own sampling stream cannot match the CPU's): the guided
     logits of every scale and the decoded images, VAR and VIAR (the claims' `full` schedule);
   - the tokenizer's token ids (argmin over the codebook: a near tie may flip) agree on ≥ IDS_AGREEMENT.
   Exit 1 past the tolerances below.
2. timed slice — on the device, at the gpu profile's batches: tokenizer.train_tokenizer for STEPS steps
   per dataset; model.train_ar for STEPS steps of VAR at every depth the profile trains (runs.ladder)
   and VIAR_STEPS of VIAR (its S-JFB counts are random: the seconds are rescaled from the measured mean
   (n, m) to their expectation by runs.run_cost's block-pass count); one sampling pass (model.generate,
   sampling.per_class per class of the claims' dataset, cfg, top-p) of VAR at every depth and of VIAR at
   every schedule of the profile plus the converged one (the calibrated schedule is counted at it: an
   upper bound). One untimed warm-up call of each kind first.
   Projection: s/step × gpu steps × the runs runs.var_runs / runs.viar_runs build (VAR at the claims'
   depth × seeds, the ladder depths × ladder_seeds, VIAR × seeds, each dataset), tokenizer steps per
   dataset, and s/image × the images runs.sampling_runs draws (every VAR model once, every VIAR model at
   every schedule and the calibrated one).

    .venv/bin/python benchmarks/viar_device_check.py --device cuda --out /tmp/viar_device.json
    .venv/bin/python benchmarks/viar_device_check.py --device cpu --tiny      # exercises the code (tests)

--tiny: the smoke profile's sizes (widths, tokenizer, images, batches) with the gpu profile's runs
(datasets, seeds, depths 3/6/9/12, schedules, converged iterations), one timed step each. On
`--device cpu` parity is exact. The pipeline trains and samples on compute.resolved_device() (CUDA on
a GPU): nothing of viar's gpu path stays on the CPU.
"""
from __future__ import annotations

import copy
import dataclasses
import sys
import time
from pathlib import Path

FORWARD_TOL = 1e-3      # max |Δ output| / max |output| (float32; 12 blocks / 22 implicit iterations)
GRAD_TOL = 1e-2         # max |Δ g| / max |g|
STEP_TOL = 1e-2         # ‖Δθ_cpu − Δθ_dev‖ / ‖Δθ_cpu‖ of one optimizer step
LOSS_TOL = 1e-4         # relative |Δ loss| before and after the step
TRAJ_TOL = 1e-3         # relative |Δ loss| of every step of the paper's loops (their steps: STEP_TOL, L2)
SAMPLE_TOL = 1e-3       # max |Δ guided logits| / max |logit|, and of the decoded images
IDS_AGREEMENT = 0.99    # share of equal token ids (codebook argmin) cpu vs device
STEPS = 3               # timed steps (tokenizer, VAR)
VIAR_STEPS = 8          # timed VIAR steps (random S-JFB counts: more steps)
TRAJ_STEPS = 2          # steps of train_ar / train_tokenizer compared cpu vs device
PARITY_IMAGES = 4


def profile(tiny: bool):
    """(the gpu profile, the profile this run uses): --tiny keeps the smoke profile's sizes and takes the gpu
    profile's runs (datasets, seeds, depths, schedules, converged iterations)."""
    from assets.common.params import parse
    from assets.viar.params import VIARRunParams
    from resources.profiles import load_params

    gpu = parse(VIARRunParams, load_params("viar", "gpu"), "viar.gpu")
    if not tiny:
        return gpu, gpu
    smoke = parse(VIARRunParams, load_params("viar", "smoke"), "viar.smoke")
    return gpu, dataclasses.replace(
        smoke, datasets=gpu.datasets, seeds=gpu.seeds, ladder_seeds=gpu.ladder_seeds, claim_depth=gpu.claim_depth,
        ladder_depths=gpu.ladder_depths, schedules=gpu.schedules,
        calibration=dataclasses.replace(smoke.calibration, converged=gpu.calibration.converged))


def sampling_schedules(p) -> list[str]:
    """The VIAR schedules timed: the profile's, then the converged one (what the calibrated schedule is
    counted at) when it is not among them."""
    converged = f"con{p.calibration.converged}"
    return list(p.schedules) + ([converged] if converged not in p.schedules else [])


def projection(device_check, gpu, tok_s: dict, ar_s: dict, sample_s: dict, tiny: bool) -> dict:
    """Σ s/step × steps × runs (runs.var_runs / runs.viar_runs), tokenizer steps per dataset, and s/image ×
    the images sampled (every VAR model once, every VIAR model at every schedule + the calibrated one)."""
    from assets.viar import data, runs

    var, viar = runs.var_runs(gpu), runs.viar_runs(gpu)
    images = {ds: gpu.sampling.per_class * data.N_CLASSES[ds] for ds in gpu.datasets}
    t, a = gpu.tokenizer, gpu.ar
    parts = [(f"{ds} tokenizer training step (batch {t.batch})", tok_s[ds], t.steps) for ds in gpu.datasets]
    for depth in runs.ladder(gpu):
        n = sum(1 for _, _, d, _ in var if d == depth)
        parts.append((f"VAR-d{depth} training step (batch {a.batch}; {n} runs)", ar_s[f"var_d{depth}"], a.steps * n))
    parts.append((f"VIAR training step (batch {a.batch}, S-JFB at its expected n, m; {len(viar)} runs)",
                  ar_s["viar"], a.steps * len(viar)))
    for depth in runs.ladder(gpu):
        n_images = sum(images[ds] for ds, _, d, _ in var if d == depth)
        parts.append((f"VAR-d{depth} sampling, per image", sample_s[f"var_d{depth}"], n_images))
    converged = f"con{gpu.calibration.converged}"
    for name in [*gpu.schedules, "calibrated"]:
        timed = converged if name == "calibrated" else name
        parts.append((f"VIAR sampling {name}{' (at ' + converged + ')' if name == 'calibrated' else ''}, per image",
                      sample_s[f"viar_{timed}"], sum(images[ds] for ds, _, _, _ in viar)))
    return device_check.projection(
        parts, note="measured at --tiny sizes; " * tiny
        + "leaves out image rendering and the evaluation CNN (30 epochs), reference features, token pyramids of "
          "every image, the schedule calibration (per-scale NLL search and its two FCD sample sets per VIAR run), "
          "the convergence and memory profiles, the throughput benchmark, FCD / KID scoring and checkpoint "
          "writes; AR steps and sampling are timed on the claims' dataset (both datasets have L = 130 tokens at "
          "the gpu profile; sampling is counted per image); tokenizer seconds include building the model; the "
          "pipeline trains and samples on the device (compute.resolved_device())")


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root), str(root / "benchmarks")]
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    import _torch_parity as T
    import numpy as np
    import torch.nn.functional as F

    from assets.common.params import thaw
    from assets.viar import data, runs
    from assets.viar import model as Mo
    from assets.viar import tokenizer as TK

    gpu, p = profile(args.tiny)
    dev = args.device
    t, a, v, s = p.tokenizer, p.ar, p.viar, p.sampling
    n_images = 32 if args.tiny else 256
    frames = {ds: data.build_dataset(ds, {**thaw(p.dataset(ds)), "split_sizes": (n_images, 8, 8)}, 0)
              for ds in p.datasets}
    claims = p.datasets[0]
    out: dict = {"device": dev, "tiny": args.tiny, "claims_dataset": claims,
                 "tokenizer": {ds: runs.tokenizer_config(p, ds).to_dict() for ds in p.datasets},
                 "ar": dataclasses.asdict(a), "viar": dataclasses.asdict(v), "claim_depth": p.claim_depth}

    def rel(x, y) -> float:
        return float((x - y).abs().max()) / max(float(x.abs().max()), 1e-30)

    def step_l2(initial, cpu_final, dev_final) -> float:
        """‖Δθ_cpu − Δθ_dev‖ / ‖Δθ_cpu‖ over every float tensor (L2: a near-zero gradient entry may flip Adam's
        sign and move by 2·lr; the norm is not fooled by it)."""
        flat = [torch.cat([q.detach().float().reshape(-1).cpu() for q in ts if q.is_floating_point()])
                for ts in (initial, cpu_final, dev_final)]
        return float((flat[1] - flat[2]).norm()) / max(float((flat[1] - flat[0]).norm()), 1e-30)

    def tokenizer(ds: str):
        torch.manual_seed(0)
        return TK.MultiScaleVQVAE(runs.tokenizer_config(p, ds))

    def ar(kind: str, depth: int = 0):
        torch.manual_seed(0)
        tok_cfg = runs.tokenizer_config(p, claims).to_dict()
        return Mo.NextScaleAR(runs.ar_config(p, tok_cfg, claims, kind, depth))

    # ---------------------------------------------------------------- 1. parity
    parity: dict = {}
    ok = True

    def tok_loss(m, x):                                  # train_tokenizer's loss: MSE(recon, x) + VQ term
        recon, vq_loss, _, _ = m(x)
        return F.mse_loss(recon, x) + vq_loss

    for ds in p.datasets:
        x = torch.from_numpy(data.to_arrays(frames[ds], "train")[0][:PARITY_IMAGES])
        model = tokenizer(ds)
        r = T.step_parity(torch, model, dev, lambda m, b: m(b)[:2], tok_loss, x, T.move,
                          lambda ps: torch.optim.Adam(ps, lr=t.lr))
        ids = [tokenizer(ds).to(d).eval().encode_tokens(x.to(d)).cpu() for d in ("cpu", dev)]
        r["ids_agreement"] = float((ids[0] == ids[1]).float().mean())
        xs = data.to_arrays(frames[ds], "train")[0]
        traj = [TK.train_tokenizer(xs, runs.tokenizer_config(p, ds), TRAJ_STEPS, PARITY_IMAGES, t.lr, 0,
                                   t.restart_every, t.restart_fraction, device=d) for d in ("cpu", dev)]
        r["train_loop_loss_max_rel_diff"] = float(np.max(np.abs(np.subtract(traj[0][1], traj[1][1]))
                                                         / np.abs(traj[0][1])))
        r["train_loop_step_l2_rel_diff"] = step_l2(tokenizer(ds).state_dict().values(),
                                                   *(tr[0].state_dict().values() for tr in traj))
        r["ok"] = bool(T.judged(r, FORWARD_TOL, GRAD_TOL, STEP_TOL, LOSS_TOL) and r["ids_agreement"] >= IDS_AGREEMENT
                       and r["train_loop_loss_max_rel_diff"] <= TRAJ_TOL
                       and r["train_loop_step_l2_rel_diff"] <= STEP_TOL)
        parity[f"tokenizer_{ds}"] = r
        ok &= r["ok"]

    tok = tokenizer(claims).eval()
    x_all, y_all = data.to_arrays(frames[claims], "train")
    y_all = np.array(y_all)                                # writable (train_ar wraps it with torch.from_numpy)
    tokens_all, tf_all = TK.token_pyramid(tok, torch.from_numpy(x_all))
    n_classes = data.N_CLASSES[claims]
    labels = torch.tensor(y_all[:PARITY_IMAGES])
    labels[0] = n_classes                                 # a dropped label: the unconditional class
    batch = (tf_all[:PARITY_IMAGES], tokens_all[:PARITY_IMAGES], labels)

    def adamw(ps):
        return torch.optim.AdamW(ps, lr=a.lr, betas=(0.9, 0.95), weight_decay=a.weight_decay)

    jfb = (int(v.jfb_n), int(v.jfb_m))
    for key, kind, depth in ((f"var_d{p.claim_depth}", "var", p.claim_depth), ("viar", "viar", 0)):
        n, m = jfb if kind == "viar" else (0, 1)

        def forward(mod, b, n=n, m=m):
            return mod(b[0], b[2], n_nograd=n, m_grad=m)

        def ce(mod, b, forward=forward):                  # train_ar's loss
            logits = forward(mod, b)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[1].reshape(-1))

        model = ar(kind, depth)
        r = T.step_parity(torch, model, dev, forward, ce, batch, T.move, adamw, clip=a.clip)
        losses, weights = [], []
        for d in ("cpu", dev):
            mod = copy.deepcopy(model)
            rec = Mo.train_ar(mod, tf_all.numpy(), tokens_all.numpy(), y_all, TRAJ_STEPS, PARITY_IMAGES, a.lr,
                              a.weight_decay, 1, a.clip, a.label_drop, 0, jfb=jfb if kind == "viar" else None,
                              device=d)
            losses.append(rec["losses"])
            weights.append([q.detach().cpu() for q in mod.parameters()])
        r["train_loop_loss_max_rel_diff"] = float(np.max(np.abs(np.subtract(*losses)) / np.abs(losses[0])))
        r["train_loop_step_l2_rel_diff"] = step_l2(list(model.parameters()), *weights)
        schedule = Mo.parse_schedule(p.claim_schedules.full, len(model.cfg.scales)) if kind == "viar" else None
        sampled = []
        for d in ("cpu", dev):
            mod, tk = copy.deepcopy(model).to(d).eval(), copy.deepcopy(tok).to(d).eval()
            res = Mo.generate(mod, tk, torch.tensor(y_all[:PARITY_IMAGES]).to(d), schedule, s.cfg, s.top_p,
                              s.top_k, torch.Generator(device=d).manual_seed(0),
                              teacher_tokens=tokens_all[:PARITY_IMAGES].to(d))
            sampled.append((res["logits"].cpu(), res["images"].cpu()))
        r["sampling_logits_max_rel"] = rel(sampled[0][0], sampled[1][0])
        r["sampling_images_max_rel"] = rel(sampled[0][1], sampled[1][1])
        r["ok"] = bool(T.judged(r, FORWARD_TOL, GRAD_TOL, STEP_TOL, LOSS_TOL)
                       and r["train_loop_loss_max_rel_diff"] <= TRAJ_TOL
                       and r["train_loop_step_l2_rel_diff"] <= STEP_TOL
                       and r["sampling_logits_max_rel"] <= SAMPLE_TOL and r["sampling_images_max_rel"] <= SAMPLE_TOL)
        parity[key] = r
        ok &= r["ok"]
    out["parity"] = parity
    out["parity_ok"] = bool(ok)

    # ---------------------------------------------------------------- 2. timed slice (the device)
    sync = device_check.synchronizer(dev)
    steps, viar_steps = (1, 1) if args.tiny else (STEPS, VIAR_STEPS)

    def timed(fn):
        sync()
        start = time.perf_counter()
        result = fn()
        sync()
        return time.perf_counter() - start, result

    tok_s = {}
    for ds in p.datasets:
        xs = data.to_arrays(frames[ds], "train")[0]
        cfg = runs.tokenizer_config(p, ds)

        def train_tok(k, xs=xs, cfg=cfg):
            return TK.train_tokenizer(xs, cfg, k, t.batch, t.lr, 0, t.restart_every, t.restart_fraction, device=dev)

        train_tok(1)                                      # warm-up
        tok_s[ds] = timed(lambda: train_tok(steps))[0] / steps

    tf_np, tok_np = tf_all.numpy(), tokens_all.numpy()

    def train(model, k, kind):
        return Mo.train_ar(model, tf_np, tok_np, y_all, k, a.batch, a.lr, a.weight_decay, a.warmup, a.clip,
                           a.label_drop, 0, jfb=jfb if kind == "viar" else None, device=dev)

    train(ar("var", 1), 1, "var")                          # warm-ups
    train(ar("viar"), 1, "viar")
    ar_s, timing = {}, {}
    for depth in runs.ladder(p):
        rec = train(ar("var", depth), steps, "var")
        ar_s[f"var_d{depth}"] = rec["seconds"] / steps
    rec = train(ar("viar"), viar_steps, "viar")
    expected = runs.run_cost("viar", 0, p)                 # block passes per step at E[n], E[m]
    measured = v.pre + v.post + float(np.mean(rec["n_iters"])) / 3 + float(np.mean(rec["m_iters"]))
    ar_s["viar"] = rec["seconds"] / viar_steps * expected / measured
    timing["viar"] = {"seconds_per_step_measured": rec["seconds"] / viar_steps, "steps": viar_steps,
                      "mean_n": float(np.mean(rec["n_iters"])), "mean_m": float(np.mean(rec["m_iters"])),
                      "block_passes_measured": measured, "block_passes_expected": expected}

    tok_dev = copy.deepcopy(tok).to(dev).eval()
    gen_labels = torch.from_numpy(runs.gen_labels(claims, s.per_class)).to(dev)

    def sample(model, schedule, labels_):
        return Mo.generate(model, tok_dev, labels_, schedule, s.cfg, s.top_p, s.top_k,
                           torch.Generator(device=dev).manual_seed(0))

    K = len(p.dataset(claims).scales)
    sample(ar("var", 1).to(dev).eval(), None, gen_labels[:2])                  # warm-ups
    sample(ar("viar").to(dev).eval(), [1] * K, gen_labels[:2])
    sample_s = {}
    for depth in runs.ladder(p):
        sample_s[f"var_d{depth}"] = timed(lambda d=depth: sample(ar("var", d).to(dev).eval(), None,
                                                                 gen_labels))[0] / len(gen_labels)
    viar_model = ar("viar").to(dev).eval()
    for name in sampling_schedules(p):
        sample_s[f"viar_{name}"] = timed(lambda n=name: sample(viar_model, Mo.parse_schedule(n, K),
                                                               gen_labels))[0] / len(gen_labels)
    out["timed"] = {**{f"tokenizer_{ds}_seconds_per_step": x for ds, x in tok_s.items()},
                    **{f"{k}_seconds_per_step": x for k, x in ar_s.items()},
                    **{f"sampling_{k}_seconds_per_image": x for k, x in sample_s.items()},
                    "sampling_images": int(len(gen_labels)), "tokenizer_batch": t.batch, "ar_batch": a.batch,
                    "steps": steps, **timing}
    out["projection"] = projection(device_check, gpu, tok_s, ar_s, sample_s, args.tiny)
    return device_check.finish(out, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
