"""ts_layers device check (issue 49): cpu/device parity of the gpu profile's patch transformers and text
LM, then a timed slice of their training on the device and the projected gpu-profile time.

1. parity — at the gpu profile's width (d = 256, 8 heads, patch 16, look-back 96): the deepest TSFM
   (PatchForecaster, 32 layers; model.next_patch_loss on PARITY_WINDOWS random windows, and its
   forward with a keep-τ list: the pruned pass), the LLM4TS (model.from_text_backbone of a 16-layer
   model.text_lm) and that text LM itself (next-character cross-entropy as runs.text_job), each
   seeded on the CPU and copied to `--device`: outputs, loss, gradient, one AdamW step (clip as the
   profile) and the loss after it. TF32 off. Exit 1 past the tolerances below.
2. timed slice — runs.train_steps (the pipeline's loop: RevIN windows sampled from a bundle, AdamW,
   warm-up/cosine, clip) for STEPS steps at the profile's batch (256) after a one-step warm-up, for
   every depth a run trains (4, 8, 16, 32; the pruned models' k = 4 and 8 layers are among them), and
   text-LM steps at its batch (64 × 64 characters). Projection: pretraining (model_grid × seeds ×
   train.steps), the text backbone (seeds × text.steps), realignment (per pruned model × seed: the full
   model continued and keep-τ, bottom-k, bi-top-k, drop-last and the random draws at k layers for
   realign.steps, scratch at k layers for train.steps + realign.steps).

    .venv/bin/python benchmarks/ts_layers_device_check.py --device cuda --out /tmp/ts_layers_device.json
    .venv/bin/python benchmarks/ts_layers_device_check.py --device cpu --tiny    # exercises the code (tests)

--tiny: the smoke profile's sizes (d = 64, depths 2 and 4), one timed step. On `--device cpu` parity is
exact. Every training run (runs.pretrain_job, runs.text_job) trains on the job's device; the projection
costs its steps on the device.
"""
from __future__ import annotations

import sys
from pathlib import Path

FORWARD_TOL = 1e-3      # max |Δ output| / max |output| (32 pre-norm blocks)
GRAD_TOL = 1e-2         # max |Δ g| / max |g|
STEP_TOL = 1e-2         # ‖Δθ_cpu − Δθ_dev‖ / ‖Δθ_cpu‖ of one AdamW step
LOSS_TOL = 1e-4         # relative |Δ loss| before and after the step
STEPS = 5               # timed training steps per depth (gpu sizes)
PARITY_WINDOWS = 16


def realign_runs(p) -> list[tuple[str, int, int, int]]:
    """(what, layers of the trained model, steps, runs) of the realignment jobs (pipeline.pruned_checkpoints)."""
    from assets.ts_layers import method as M

    out = []
    for family, depth in p.prune_models:
        k = M.keep_count(int(depth), p.importance.tau)
        seeds = len(p.seeds)
        out += [(f"{family} L{depth} full_continued", int(depth), p.realign.steps, seeds),
                (f"{family} L{depth} keep_tau + 3 baselines + {p.random_draws} random (k = {k})", k, p.realign.steps,
                 seeds * (4 + p.random_draws)),
                (f"{family} L{depth} scratch (k = {k})", k, p.train.steps + p.realign.steps, seeds)]
    return out


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
    from torch.nn import functional as F

    from assets.common.params import parse
    from assets.ts_layers import method as ME
    from assets.ts_layers import model as MO
    from assets.ts_layers import runs
    from assets.ts_layers.params import TSLayersParams
    from resources.profiles import load_params

    gpu = parse(TSLayersParams, load_params("ts_layers", "gpu"), "ts_layers.gpu")
    p = parse(TSLayersParams, load_params("ts_layers", "smoke"), "ts_layers.smoke") if args.tiny else gpu
    rng = np.random.default_rng(0)
    length = p.lookback + p.patch
    windows = torch.from_numpy(np.cumsum(rng.normal(size=(PARITY_WINDOWS, length)), 1).astype(np.float32))
    vocab, tokens = runs.text_corpus()
    starts = rng.integers(0, len(tokens) - p.text.context - 1, size=PARITY_WINDOWS // 2)
    chars = torch.from_numpy(tokens[starts[:, None] + np.arange(p.text.context + 1)[None]])

    def adamw(ps):
        return torch.optim.AdamW(ps, lr=p.train.lr, weight_decay=p.train.weight_decay)

    def char_loss(m, x):                       # runs.text_job's loss_of
        return F.cross_entropy(m(x[:, :-1]).logits.reshape(-1, len(vocab)), x[:, 1:].reshape(-1))

    deepest = max(p.depths)
    keep = ME.select_layers(np.linspace(1.0, 0.0, deepest), p.importance.tau)
    out: dict = {"device": args.device, "tiny": args.tiny, "d_model": p.d_model, "parity": {}}
    torch.manual_seed(0)
    text = MO.text_lm(len(vocab), p.llm4ts.depth, p.d_model, p.n_heads, p.text.context)
    cases = {f"tsfm_L{deepest}": (MO.PatchForecaster(runs.patch_config(p, "tsfm", deepest)),
                                  lambda m, b: (m(MO.to_patches(b, p.patch)[:, :-1])[0],
                                                m(MO.to_patches(b, p.patch)[:, :-1], keep=keep)[0]),
                                  lambda m, b: MO.next_patch_loss(m, b, p.lookback), windows),
             f"llm4ts_L{p.llm4ts.depth}": (MO.from_text_backbone(text.state_dict(),
                                                                 runs.patch_config(p, "llm4ts", p.llm4ts.depth)),
                                           lambda m, b: m(MO.to_patches(b, p.patch)[:, :-1])[0],
                                           lambda m, b: MO.next_patch_loss(m, b, p.lookback), windows),
             f"text_lm_L{p.llm4ts.depth}": (text, lambda m, b: m(b[:, :-1]).logits, char_loss, chars)}
    ok = True
    for name, (model, forward, loss, batch) in cases.items():
        r = T.step_parity(torch, model, args.device, forward, loss, batch, T.move, adamw, clip=p.train.grad_clip)
        r["ok"] = T.judged(r, FORWARD_TOL, GRAD_TOL, STEP_TOL, LOSS_TOL)
        out["parity"][name] = r
        ok &= r["ok"]

    steps = 1 if args.tiny else STEPS
    sync = device_check.synchronizer(args.device)
    bundle = {"real_train": np.cumsum(rng.normal(size=(512, length)), 1).astype(np.float32),
              "synthetic_train": np.cumsum(rng.normal(size=(256, p.synthetic.length)), 1).astype(np.float32)}
    timed = {}
    depths = sorted({*p.depths, p.llm4ts.depth, *(d for _, d, _, _ in realign_runs(p))})
    for depth in depths:
        model = MO.PatchForecaster(runs.patch_config(p, "tsfm", depth))
        runs.train_steps(model, bundle, p, 1, p.train.lr, 0, 1, args.device)          # warm-up
        seconds = T.seconds_per_call(lambda m=model: runs.train_steps(m, bundle, p, steps, p.train.lr, 1, 1,
                                                                      args.device), 1, sync, warmup=0)
        timed[f"tsfm_L{depth}"] = {"seconds_per_step": seconds / steps, "steps": steps, "batch": p.train.batch_size}
    lm = MO.text_lm(len(vocab), p.llm4ts.depth, p.d_model, p.n_heads, p.text.context).to(args.device)
    opt = torch.optim.AdamW(lm.parameters(), lr=p.text.lr, weight_decay=0.01)
    tok = torch.from_numpy(tokens)

    def text_step():
        s = torch.from_numpy(rng.integers(0, len(tokens) - p.text.context - 1, size=p.text.batch_size))
        loss = char_loss(lm, tok[s[:, None] + torch.arange(p.text.context + 1)[None]].to(args.device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lm.parameters(), 1.0)
        opt.step()
        float(loss.detach())

    timed[f"text_lm_L{p.llm4ts.depth}"] = {"seconds_per_step": T.seconds_per_call(text_step, steps, sync),
                                           "steps": steps, "batch": p.text.batch_size}
    out["timed"] = timed

    def per_step(depth: int) -> float:            # gpu depths, measured at the nearest depth --tiny has
        if not args.tiny:
            return timed[f"tsfm_L{depth}"]["seconds_per_step"]
        near = min(timed, key=lambda k: abs(int(k.rsplit("L", 1)[1]) - depth) if k.startswith("tsfm") else 1e9)
        return timed[near]["seconds_per_step"]

    text_s = timed[f"text_lm_L{p.llm4ts.depth}"]["seconds_per_step"]
    parts = [(f"{fam} L{d} pretraining step", per_step(d), gpu.train.steps * len(gpu.seeds))
             for fam, d in [("tsfm", d) for d in gpu.depths] + [("llm4ts", gpu.llm4ts.depth)]]
    parts.append((f"text LM L{gpu.llm4ts.depth} step (runs.text_job)", text_s,
                  gpu.text.steps * len(gpu.seeds)))
    parts += [(f"realignment step, {what}", per_step(d), n * s) for what, d, s, n in realign_runs(gpu)]
    out["projection"] = device_check.projection(
        parts, note="measured at --tiny sizes (depths mapped to the nearest measured); " * args.tiny
        + "leaves out the synthetic corpus and bundle, evaluation (forecast errors, CKA / attention importance, "
          "removal drops, classical forecasts, latency), checkpoint writes; LLM4TS steps costed as a TSFM of "
          "its depth")
    out["parity_ok"] = bool(ok)
    return device_check.finish(out, ok, args.out)


if __name__ == "__main__":
    sys.exit(main())
