"""pac_labels device check (issue 49): no device parity (nothing of the gpu profile runs on a device),
then a timed slice of its dominant phase, the PAC calibration trials, and the projection.

- parity: n/a. The AI models are scikit-learn / numpy (models.py); the only torch, the router
  (router.py), builds its tensors on the CPU and reads them back with .numpy() at every profile.
- timed slice (host CPU): the gpu profile's generated partitions digits/logreg (WSR, K = 300) and
  synthetic_cls/mlp (CLT and WSR, K = 10,000 on n = 100,000 pool items): the data and the model are
  built with the assets' own functions (data.*, models.train_model / predict,
  method.uncertainty_from_confidence), then TRIALS trials of `benchmark.run_trial` (PAC and the
  paired plug-in, as `runs.calibrate`) per partition; seconds per trial × trials × partitions.

    .venv/bin/python benchmarks/pac_labels_device_check.py --device cuda --out /tmp/pac_labels_device.json
    .venv/bin/python benchmarks/pac_labels_device_check.py --device cpu --tiny     # exercises the code (tests)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

TRIALS = 2                # timed trials per partition (PAC + plug-in each); --tiny: 1
TINY_DRAWS = 200          # --tiny: K capped so the smoke pool (n = 2000) stays ≫ K
PARITY = "n/a: no device path (sklearn/numpy models; the torch router runs on the CPU at every profile)"


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    args = device_check.arguments(argv)
    if device_check.prepare(args.device) is None:
        return device_check.NO_DEVICE

    from assets.common.params import parse
    from assets.pac_labels import benchmark as B
    from assets.pac_labels import data, models
    from assets.pac_labels import method as M
    from assets.pac_labels.params import PACLabelsParams
    from resources.profiles import load_params

    gpu = parse(PACLabelsParams, load_params("pac_labels", "gpu"), "pac_labels.gpu")
    p = parse(PACLabelsParams, load_params("pac_labels", "smoke"), "pac_labels.smoke") if args.tiny else gpu
    trials = 1 if args.tiny else TRIALS
    cls = p.synthetic_cls
    sources = {"digits": data.digits_source(p.digits.train_frac, p.digits.split_seed),
               "synthetic_cls": data.synthetic_classification(cls.n_pool, cls.n_train, cls.n_classes, cls.n_features,
                                                              cls.n_informative, cls.label_noise, cls.class_sep,
                                                              cls.seed)}
    fitted: dict[tuple[str, str], tuple] = {}
    timed, setup = [], {}
    for spec in gpu.partitions:
        if spec.dataset not in sources or spec.model not in models.CLASSIFIERS:
            continue                                            # router / regression: see the note
        key = (spec.dataset, spec.model)
        if key not in fitted:
            started = time.perf_counter()
            frame = sources[spec.dataset]
            train, pool = frame[frame["split"] == "train"], frame[frame["split"] == "pool"].sort_values("item_id")
            state = models.train_model(spec.model, data.features(train), train["y"].to_numpy(), 0,
                                       p.models[spec.dataset][spec.model].as_dict())
            yhat, conf = models.predict(spec.model, state, data.features(pool))
            conf = np.clip(conf, 0.0, 1.0)
            fitted[key] = (yhat, conf, pool["y"].to_numpy(dtype=float))
            setup[f"{spec.dataset}/{spec.model}_fit_predict_seconds"] = time.perf_counter() - started
        yhat, conf, hidden = fitted[key]
        draws = min(spec.num_draws, TINY_DRAWS) if args.tiny else spec.num_draws
        part = B.Partition(dataset_id=spec.dataset, model=spec.model, ci=spec.ci, num_draws=draws, loss="zero_one",
                           yhat=yhat, confidence=conf, uncertainty=M.uncertainty_from_confidence(conf, seed=0),
                           model_cost=np.zeros(len(yhat)))
        started = time.perf_counter()
        for trial in range(trials):
            for method in ("pac", "plugin"):
                B.run_trial(part, hidden, p.epsilon, p.alpha, trial, method, p.wsr_grid_size)
        timed.append({"partition": part.key, "n": part.n, "num_draws": draws,
                      "seconds_per_trial": (time.perf_counter() - started) / trials})
    by_key = {t["partition"]: t["seconds_per_trial"] for t in timed}
    digits = by_key.get("digits/logreg/wsr", 0.0)
    routers = [s for s in gpu.partitions if s.dataset == "digits" and s.model == "router"]
    n_router = len(routers) * (1 + len(gpu.router.ablations))          # + the ablations' partitions
    parts = [(f"{t['partition']} trial (PAC + plug-in)", t["seconds_per_trial"], gpu.trials) for t in timed]
    parts.append((f"digits/router (+ {len(gpu.router.ablations)} ablations)/wsr trial, at digits/logreg's cost",
                  digits, gpu.trials * n_router))
    report = {
        "paper": "pac_labels", "device": args.device, "tiny": args.tiny, "parity": PARITY,
        "slice": {"trials_per_partition": trials, "partitions": timed, **setup},
        "projection": device_check.projection(parts, note=(
            "host-CPU work, serial; leaves out synthetic_reg/gb_ensemble (n = 50,000, K = 5,000, CLT), the paper "
            "CSV partitions (present only when ../shared/pac_labels exists), model and router training, trial 0's "
            "UCB curve, label_first_trials / score_trials re-labelling, and the naive split study")),
    }
    return device_check.finish(report, True, args.out)


if __name__ == "__main__":
    sys.exit(main())
