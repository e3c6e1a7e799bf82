"""Why the room stop index collapses to S = 1: retrain one stop-index net on a finished run's data with more
steps (and, for reference, at the run's own budget) and score argmax S on the test views.

Same data, split, seed and recipe as the run (AdamW (0.9, 0.95), cosine lr); only `steps` (and optionally the
batch) changes. Prints pixel accuracy, the majority rate, per-class recall and the unseen F@0.05 that the
predicted S gives the run's own point-map net.

    PAPERLAB_DATA_DIR=/tmp/pnew/lari/data .venv/bin/python -m benchmarks.lari_stop_steps --kind room --seed 0 \
        --steps 300 900
"""
from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import pandas as pd

from assets.common.params import parse
from assets.lari import model as NN
from assets.lari import runs
from assets.lari.params import LariParams
from resources.artifacts import data_root
from resources.compute import ComputeResource
from resources.profiles import load_params


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="room")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, nargs="+", default=[300, 900])
    ap.add_argument("--batch", type=int, default=None)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    p = parse(LariParams, load_params("lari", "cpu"), "lari.cpu")
    root = data_root() / "lari"
    tables = {n: pd.read_parquet(root / f"{n}.parquet") for n in ("splits", "layered_gt", "rgb_renders", "camera_rigs",
                                                                   "gt_surface_points", "pointmap_model",
                                                                   "stop_index_model", "stop_threshold")}
    compute = ComputeResource(profile="cpu")
    seed_for = lambda *k: compute.seed_for("lari", *k)                                    # noqa: E731  the run's seeds
    base = [j for j in runs.training_jobs(p, "stop", tables["splits"], tables["layered_gt"], tables["rgb_renders"],
                                          seed_for, "cpu") if j["kind"] == args.kind and j["seed"] == args.seed][0]
    models = pd.concat([tables["pointmap_model"], tables["stop_index_model"]], ignore_index=True)
    job = [j for j in runs.eval_jobs(p, models, tables["splits"], tables["layered_gt"], tables["rgb_renders"],
                                     tables["camera_rigs"], tables["gt_surface_points"], tables["stop_threshold"])
           if j["kind"] == args.kind and j["seed"] == args.seed][0]
    rgb, z, stop_gt, gts = runs._eval_inputs(job, "test")
    pts = NN.predict_points(runs.load_model(job["pointmap"], "pointmap", p.model.layers), rgb)
    L = p.model.layers
    gt = np.minimum(stop_gt, L)
    rows = []
    for steps in args.steps:
        train = dict(base["train"], steps=steps, **({"batch": args.batch} if args.batch else {}))
        out = runs.train_job(dataclasses.replace(_Job(base), train=train).as_dict())
        net = NN.build(NN.NetConfig(**base["cfg"]))
        net.load_state_dict(out["state"])
        s = NN.stop_argmax(NN.predict_stop_probs(net.eval(), rgb))
        unseen = [runs.score(args.kind, *runs.split_points(runs.align_to_gt(pts[i], z[i], stop_gt[i], job["f"]), s[i]),
                             gts[i], (0.05,)).get("unseen_f@0.05", np.nan) for i in range(len(rgb))]
        rows.append({"steps": steps, "batch": train["batch"], "final_loss": float(np.mean(out["losses"][-30:])),
                     "accuracy": float((s == gt).mean()),
                     "majority": float(np.bincount(gt.ravel()).max() / gt.size),
                     **{f"recall_S{c}": float((s[gt == c] == c).mean()) for c in range(L + 1) if (gt == c).any()},
                     "unseen_f@0.05": float(np.nanmean(unseen)), "seconds": round(out["seconds"], 1)})
        print(rows[-1], flush=True)
    print(pd.DataFrame(rows).round(3).to_string(index=False))


@dataclasses.dataclass
class _Job:
    base: dict
    train: dict | None = None

    def as_dict(self) -> dict:
        return {**self.base, "train": self.train or self.base["train"]}


if __name__ == "__main__":
    main()
