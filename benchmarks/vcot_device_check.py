"""vcot device check (issue 49): cpu/device parity of the gpu profile's learned completer (a TinyLM),
then a timed slice of its training on the device and the projected gpu-profile time.

vcot's other stages (Z3 proofs, lifting, the offline completers, scoring) are CPU solver work: no torch.
1. parity — the TinyLM of learned.train at the gpu profile's size (d = 192, 4 layers, 6 heads, context
   512) over a stand-in vocabulary of VOCAB tokens (the real one is built from the lifted corpus), seeded
   on the CPU and copied to `--device`, on PARITY_ROWS random sequences of the full context with a
   padded tail (the key mask as learned.train builds it): logits, the next-token cross-entropy and its
   gradient, one AdamW step (the profile's lr) and the loss after it. TF32 off. Exit 1 past the
   tolerances below.
2. timed slice — STEPS AdamW steps of the same model and loss at the profile's batch (64 × 512 tokens:
   the widest batch learned.train pads to) on the device, after one warm-up step. Projection:
   learned.steps × one model per held-out family (runs.train_learned).

    .venv/bin/python benchmarks/vcot_device_check.py --device cuda --out /tmp/vcot_device.json
    .venv/bin/python benchmarks/vcot_device_check.py --device cpu --tiny     # exercises the code (tests)

--tiny: the smoke profile's learned completer (d = 32, 1 layer, context 64), one timed step. On
`--device cpu` parity is exact. The pipeline trains the completer on the compute device
(learned.train's `device`, one thread); the projection is what its steps cost on the device.
"""
from __future__ import annotations

import sys
from pathlib import Path

FORWARD_TOL = 1e-3      # max |Δ logits| / max |logit|
GRAD_TOL = 1e-2         # max |Δ g| / max |g|
STEP_TOL = 1e-2         # ‖Δθ_cpu − Δθ_dev‖ / ‖Δθ_cpu‖ of one AdamW step
LOSS_TOL = 1e-4         # relative |Δ loss| before and after the step
STEPS = 5               # timed training steps (gpu sizes)
PARITY_ROWS = 4
VOCAB = 512             # stand-in vocabulary size


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[1]
    sys.path[:0] = [str(root), str(root / "benchmarks")]
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    import _torch_parity as T

    from assets.common.params import parse
    from assets.common.tiny_lm import TinyLM, TinyLMConfig
    from assets.vcot import learned as LC
    from assets.vcot.params import VcotParams
    from resources.profiles import load_params

    gpu = parse(VcotParams, load_params("vcot", "gpu"), "vcot.gpu")
    p = parse(VcotParams, load_params("vcot", "smoke"), "vcot.smoke") if args.tiny else gpu
    cfg = p.learned

    def build():
        return TinyLM(TinyLMConfig(vocab_size=VOCAB, d_model=cfg.d_model, n_heads=cfg.n_heads,
                                   n_layers=cfg.n_layers, context=cfg.context))

    g = torch.Generator().manual_seed(0)

    def sequences(n: int):
        x = torch.randint(LC.EOS + 1, VOCAB, (n, cfg.context), generator=g)
        x[n // 2:, 3 * cfg.context // 4:] = LC.PAD                       # padded rows, as a ragged batch
        return x

    def forward(m, x):                                                   # learned.train's call
        w = x.shape[1]
        return m(x[:, :-1], key_mask=(x[:, :-1] != LC.PAD) | (torch.arange(w - 1, device=x.device) == 0)).logits

    def loss(m, x):
        logits = forward(m, x)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))

    def adamw(ps):
        return torch.optim.AdamW(ps, lr=cfg.lr)

    torch.manual_seed(0)
    parity = T.step_parity(torch, build(), args.device, forward, loss, sequences(PARITY_ROWS), T.move, adamw)
    parity["ok"] = T.judged(parity, FORWARD_TOL, GRAD_TOL, STEP_TOL, LOSS_TOL)
    out: dict = {"device": args.device, "tiny": args.tiny,
                 "model": {"d_model": cfg.d_model, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
                           "context": cfg.context, "vocab": VOCAB}, "parity": parity}

    sync = device_check.synchronizer(args.device)
    steps = 1 if args.tiny else STEPS
    model = build().to(args.device)
    opt = adamw(model.parameters())

    def step():
        value = loss(model, sequences(cfg.batch_size).to(args.device))
        opt.zero_grad()
        value.backward()
        opt.step()
        float(value.detach())

    seconds = T.seconds_per_call(step, steps, sync)
    families = len(gpu.families)
    out["timed"] = {"seconds_per_step": seconds, "steps": steps, "batch": cfg.batch_size, "tokens": cfg.context}
    out["projection"] = device_check.projection(
        [(f"learned-completer training step ({gpu.learned.batch_size} × {gpu.learned.context} tokens)", seconds,
          gpu.learned.steps * families)],
        note="measured at --tiny sizes; " * args.tiny
        + "one model per held-out family; leaves out the CPU solver work (Z3 proofs, lifting, the offline "
          "completers, scoring: no torch), greedy completion of the tasks (on the CPU), checkpoint writes")
    out["parity_ok"] = bool(parity["ok"])
    return device_check.finish(out, parity["ok"], args.out)


if __name__ == "__main__":
    sys.exit(main())
