"""Student-training throughput: the asset's loop (model.train) vs a bare torch loop.

Both loops train the same student (the cpu-profile spirals and digits architectures) on the
same inputs and teacher logits with the same objective, batch size and epochs; the bare loop
is the minimal `randperm → slice → forward → loss → backward → step`. Reported: samples/s of
each (median over repeats, alternating which runs first), their ratio (ours / bare; ≈ 1 means
the schedule, logging hooks and loss dispatch cost nothing), and the cost of writing the
checkpoint (save_state_dict: state_dict + md5 + JSON sidecar) relative to one training run.
The KL objective's samples/s, ours vs bare, per dataset is a row of results/bench.csv
(benchmarks/_bench.py); the L2 rows stay in the JSON.

Usage: python benchmarks/logit_distill_throughput.py [--out data/reports/logit_distill/throughput.json]
       [--repeats 3] [--epochs 20] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from assets.logit_distill import data  # noqa: E402
from assets.logit_distill import model as net  # noqa: E402
from benchmarks._bench import record  # noqa: E402
from resources.artifacts import save_state_dict  # noqa: E402
from resources.profiles import load_params  # noqa: E402


def _setup(dataset: str, p: dict):
    frame = data.make_spirals(points_per_arm=int(p["points_per_arm"])) if dataset == "spirals" \
        else data.make_digits_concept(shifts=data.SHIFTS[:int(p["shifts"])])
    train = frame[frame["split"] == "train"]
    x = torch.from_numpy(train[data.input_columns(frame)].to_numpy(np.float32, copy=True))
    y = torch.from_numpy(train["label"].to_numpy(np.int64))
    n_classes = int(frame["label"].nunique())
    config = net.ModelConfig(input_dim=x.shape[1], rep_dim=int(p["rep_dim"]), n_classes=n_classes,
                             hidden=int(p["hidden"]), depth=int(p["depth"]), dropout=float(p["dropout"]))
    torch.manual_seed(0)
    teacher = net.EmbeddingNet(config).eval()
    with torch.no_grad():
        z = teacher(x)[1] * 10.0                                  # a confident random teacher
    return x, y, z, config


def ours(x, y, z, config, train_config, objective) -> float:
    torch.manual_seed(1)
    model = net.EmbeddingNet(config)
    result = net.train(model, x, lambda m, i: net.distillation_loss(objective, m(x[i])[1], z[i], y[i]),
                       train_config, seed=1)
    return result.samples_per_second


def bare(x, y, z, config, train_config, objective) -> float:
    torch.manual_seed(1)
    model = net.EmbeddingNet(config)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=train_config.lr)
    generator = torch.Generator().manual_seed(1)
    n, bs = x.shape[0], train_config.batch_size
    start = time.perf_counter()
    for _ in range(train_config.epochs):
        order = torch.randperm(n, generator=generator)
        for i in range(0, n, bs):
            index = order[i:i + bs]
            logits = model(x[index])[1]
            loss = ((logits - z[index]) ** 2).sum() / logits.shape[0] if objective == "l2" else \
                torch.nn.functional.kl_div(torch.log_softmax(logits, 1), torch.log_softmax(z[index], 1),
                                           reduction="batchmean", log_target=True)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return train_config.epochs * n / (time.perf_counter() - start)


def save_seconds(config) -> float:
    model = net.EmbeddingNet(config)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        save_state_dict(Path(tmp) / "student.pt", model.state_dict(), {"model_config": config.as_dict()})
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="data/reports/logit_distill/throughput.json")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    params = load_params("logit_distill", "cpu")
    rows = []
    for dataset in ("spirals", "digits"):
        p = params[dataset]
        x, y, z, config = _setup(dataset, p)
        s = p["student"]
        train_config = net.TrainConfig(epochs=args.epochs, batch_size=int(s["batch_size"]), lr=float(s["lr"]),
                                       gamma=float(s["gamma"]), warmup_epochs=0)
        for objective in ("kl", "l2"):
            ours_runs, bare_runs = [], []
            for repeat in range(args.repeats):
                order = (ours, bare) if repeat % 2 == 0 else (bare, ours)
                for fn in order:
                    (ours_runs if fn is ours else bare_runs).append(fn(x, y, z, config, train_config, objective))
            train_seconds = args.epochs * x.shape[0] / float(np.median(ours_runs))
            rows.append({"dataset": dataset, "objective": objective, "batch_size": train_config.batch_size,
                         "train_rows": int(x.shape[0]), "epochs": args.epochs,
                         "ours_samples_per_s": float(np.median(ours_runs)),
                         "bare_samples_per_s": float(np.median(bare_runs)),
                         "ratio_ours_over_bare": float(np.median(ours_runs) / np.median(bare_runs)),
                         "checkpoint_save_s": save_seconds(config),
                         "checkpoint_share_of_a_run": save_seconds(config) / train_seconds})
            print(json.dumps(rows[-1]))
    payload = {"rows": rows, "threads": args.threads, "torch": torch.__version__,
               "machine": platform.machine(), "python": platform.python_version()}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2))
    for row in rows:
        if row["objective"] == "kl":
            record("logit_distill_throughput", f"samples_per_s@{row['dataset']}/kl", row["ours_samples_per_s"],
                   row["bare_samples_per_s"], "samples/s", "higher")


if __name__ == "__main__":
    main()
