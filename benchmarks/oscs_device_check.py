"""oscs device check (issue 49): no device parity (the gpu profile puts no tensor on a device), then a
timed slice of the gpu profile's dominant phase and its projection.

- parity: n/a. OSCS's statistics (recursive KDE, Storey π̂0, the baselines) are numpy; its only torch
  computation, the MiniLM encoder of the `minilm_maha` detector, is pinned to the CPU by
  assets/common/minilm.py (SentenceTransformer(..., device="cpu")) at every profile, so a GPU changes
  nothing the profile computes.
- timed slice (host CPU): `benchmark.decide_all` (every OSCS variant and baseline B1–B5) and
  `ablation.ablate` (the six oracle swaps) on one Gaussian stream of SLICE_STEPS steps with the gpu
  profile's calibration size and KDE grid (cost per step is independent of T: the recursion is
  online), then seconds per step × steps the profile runs (streams × α × T).

    .venv/bin/python benchmarks/oscs_device_check.py --device cuda --out /tmp/oscs_device.json
    .venv/bin/python benchmarks/oscs_device_check.py --device cpu --tiny     # exercises the code (tests)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

SLICE_STEPS = 2000        # steps of the timed stream at full size (the profile runs T = 20,000)
TINY_STEPS = 300          # --tiny: the smoke profile's sizes, a short stream
PARITY = "n/a: no device path (numpy statistics; the MiniLM encoder is pinned to the CPU at every profile)"


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    args = device_check.arguments(argv)
    if device_check.prepare(args.device) is None:
        return device_check.NO_DEVICE

    from assets.common.params import parse
    from assets.oscs import ablation, benchmark, streams
    from assets.oscs import method as M
    from assets.oscs.checks import oscs_config
    from assets.oscs.params import OSCSParams
    from resources.profiles import load_params

    gpu = parse(OSCSParams, load_params("oscs", "gpu"), "oscs.gpu")
    p = parse(OSCSParams, load_params("oscs", "smoke"), "oscs.smoke") if args.tiny else gpu
    steps = TINY_STEPS if args.tiny else SLICE_STEPS
    config = oscs_config(p)
    mu, alpha = p.gaussian.mus[-1], float(p.alphas[-1])
    scores, labels, calib = M.gaussian_stream(mu, p.gaussian.pi1, steps, p.calibration_size, 0)
    m_true = M.gaussian_true_posterior(scores, mu, p.gaussian.pi1)

    def timed(fn) -> float:
        fn()                                                       # warm-up (allocations, caches)
        started = time.perf_counter()
        fn()
        return (time.perf_counter() - started) / steps

    decide = timed(lambda: benchmark.decide_all(scores, calib, alpha, m_true, config,
                                                M.batch_lfdr_posterior(scores, calib, lam=config.lam)))
    ablate = timed(lambda: ablation.ablate(scores, labels, calib, ablation.gaussian_truth(mu, p.gaussian.pi1),
                                           alpha, config))
    # the units of the gpu profile (always gpu, also under --tiny: the projection is of the gpu profile)
    g, n_alpha = gpu.gaussian, len(gpu.alphas)
    text_streams = len(gpu.detectors) * len(gpu.scenarios) * len(gpu.seeds) * n_alpha
    gauss_streams = len(g.mus) * len(g.seeds) * n_alpha
    stationary = [s for s in gpu.scenarios if s in streams.STATIONARY_SCENARIOS]
    chosen = set(gpu.ablation_seeds)
    n_abl = len(chosen)
    abl_text = len(gpu.detectors) * len(stationary) * len([s for s in gpu.seeds if s in chosen]) * n_alpha
    abl_gauss = len(g.mus) * len([s for s in g.seeds if s in chosen]) * n_alpha
    report = {
        "paper": "oscs", "device": args.device, "tiny": args.tiny, "parity": PARITY,
        "slice": {"steps": steps, "calibration_size": p.calibration_size, "grid_size": p.grid_size,
                  "decide_all_seconds_per_step": decide, "ablate_seconds_per_step": ablate},
        "projection": device_check.projection([
            ("decide_all step (OSCS variants + B1-B5), text streams", decide, text_streams * gpu.stream_length),
            ("decide_all step, Gaussian suite", decide, gauss_streams * g.stream_length),
            ("ablate step (6 oracle swaps), text streams", ablate, abl_text * gpu.stream_length),
            ("ablate step, Gaussian suite", ablate, abl_gauss * g.stream_length),
        ], note=f"host-CPU work, serial; per-step cost measured on a Gaussian stream and applied to the text streams; "
                f"leaves out scoring (KN trigram, MiniLM on the CPU), stream building and the report; "
                f"{n_abl} ablation seeds"),
    }
    return device_check.finish(report, True, args.out)


if __name__ == "__main__":
    sys.exit(main())
