"""spgcl device check (issue 49): cpu/device parity of SPGCL and the three baseline families on one
gpu-profile graph, then a timed slice of their training on the device and the projection.

1. parity — one CSBM graph of the gpu profile (n = params n_nodes, the bow_hetero generator) with its
   SPGCL annotations (high-energy dims H, EPS keep probabilities) from the assets' own functions, as
   scaling.measure builds them; per family (spgcl with EAP + EPS, grace, dgi, bgrl) one model of the gpu
   profile's sizes (training.build_model, seeded on the CPU, copied to `--device`) and one set of
   augmented views drawn on the CPU (model.py's augmentations with a CPU generator, then copied):
   the evaluation embedding (training.embed), the family's training loss (model.py's losses on those
   views, eval mode so dropout does not draw), its gradient, and one step of the family's optimizer.
   TF32 off, so CUDA matmuls are float32. Fails (exit 1) past the tolerances below.
2. speed — `training.train` for EPOCHS epochs per family at the gpu profile's sizes on the device
   (after a 1-epoch warm-up; SPGCL with EPS from epoch 0, as scaling.measure: the costlier branch),
   then seconds per epoch × epochs × runs of the gpu profile.

    .venv/bin/python benchmarks/spgcl_device_check.py --device cuda --out /tmp/spgcl_device.json
    .venv/bin/python benchmarks/spgcl_device_check.py --device cpu --tiny     # exercises the code (tests)

--tiny uses the smoke profile's graph size and encoder. On `--device cpu` both sides are the same CPU
kernels, so the parity is exact (the tests use that).
"""
from __future__ import annotations

import copy
import sys
import time
from pathlib import Path

EMBED_TOL = 1e-4        # max |Δ| of the evaluation embedding, relative to its max |z|
LOSS_TOL = 1e-4         # relative |Δ| of the training loss
GRAD_TOL = 1e-3         # max |Δ| of the gradient, relative to its max |g|
STEP_TOL = 0.1          # an update element "differs" when |Δθ_cpu − Δθ_dev| > STEP_TOL · lr ...
STEP_MISMATCH = 1e-3    # ... and at most this fraction of the elements may differ (Adam's first step is
                        # ≈ lr·sign(g): a gradient element at round-off level may flip its sign)
GRAPH = "bow_hetero"
FAMILIES = {"spgcl": "spgcl", "grace": "grace", "dgi": "dgi", "bgrl": "bgrl"}    # family → method timed
EPOCHS, TINY_EPOCHS = 5, 1


def _views(torch, M, family: str, g, hp: dict, seed: int) -> dict:
    """The augmented inputs of one training step, drawn on the CPU (then copied to each device)."""
    gen = torch.Generator().manual_seed(seed)
    if family == "spgcl":
        edges = M.sample_kept_edges(g.edge_index, g.keep_prob, gen)
        return {"x": M.mask_high_entries(g.x, float(hp["pf"]), g.high_mask, gen), "edges": edges}
    if family in ("grace", "bgrl"):
        out = {}
        for i, (pe, pf) in enumerate(((hp["drop_edge_1"], hp["drop_feature_1"]),
                                      (hp["drop_edge_2"], hp["drop_feature_2"])), 1):
            out[f"edges{i}"] = M.drop_edges(g.edge_index, float(pe), gen)
            out[f"x{i}"] = M.mask_feature_columns(g.x, float(pf), gen)
        return out
    return {}


def _loss(torch, M, family: str, model, g, views: dict, hp: dict, seed: int):
    """The family's training loss on fixed views (training.py's composition of model.py's pieces)."""
    n, chunk = g.x.shape[0], int(hp.get("chunk", 4096))
    on = lambda t: t.to(g.x.device)                                          # noqa: E731
    if family == "spgcl":
        edges = on(views["edges"])
        z = model.embed(on(views["x"]), M.normalized_adjacency(edges, n), g.high_mask)
        return M.neighbour_infonce(model.project(z), edges, float(hp["tau"]), chunk)
    if family == "grace":
        h = [model.project(model.embed(on(views[f"x{i}"]), M.normalized_adjacency(on(views[f"edges{i}"]), n)))
             for i in (1, 2)]
        return M.grace_loss(h[0], h[1], float(hp["tau"]), True, chunk)
    if family == "dgi":       # the corruption permutation from a CPU generator indexes either device
        return M.dgi_loss(model, g.x, g.adj, torch.Generator().manual_seed(seed))
    inputs = [(on(views[f"x{i}"]), M.normalized_adjacency(on(views[f"edges{i}"]), n)) for i in (1, 2)]
    online = [model.online(x, a) for x, a in inputs]
    with torch.no_grad():
        target = [model.target(x, a) for x, a in inputs]
    q = [model.predictor(o) for o in online]
    return M.bgrl_loss(q[0], target[1]) + M.bgrl_loss(q[1], target[0])


def _optimizer(torch, family: str, model, hp: dict):
    """The family's optimizer, as in training.py."""
    lr = float(hp["lr"])
    if family == "spgcl":
        return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    if family == "grace":
        return torch.optim.Adam(model.parameters(), lr=lr, weight_decay=float(hp["weight_decay"]))
    if family == "dgi":
        return torch.optim.Adam(model.parameters(), lr=lr, weight_decay=0.0)
    return torch.optim.AdamW([*model.online.parameters(), *model.predictor.parameters()], lr=lr,
                             weight_decay=float(hp["weight_decay"]))


def parity(torch, device: str, p, graphs: dict, seed: int = 0) -> dict:
    from assets.spgcl import model as M
    from assets.spgcl import training

    out, ok = {}, True
    for family, method in FAMILIES.items():
        hp = p.method_hparams(family)
        torch.manual_seed(seed)
        cpu = training.build_model(method, graphs["cpu"].x.shape[1], hp)
        models = {"cpu": cpu, "dev": copy.deepcopy(cpu).to(device)}
        views = _views(torch, M, family, graphs["cpu"], hp, seed)
        side = {}
        for name, model in models.items():
            g = graphs[name]
            z = training.embed(model, method, g).cpu()                   # eval mode, unmasked X, full graph
            model.eval()                                                 # no dropout draws: same function
            opt = _optimizer(torch, family, model, hp)
            before = [q.detach().clone() for q in model.parameters()]
            opt.zero_grad()
            loss = _loss(torch, M, family, model, g, views, hp, seed)
            loss.backward()
            grad = torch.cat([q.grad.reshape(-1) for q in model.parameters() if q.grad is not None]).cpu()
            opt.step()
            step = torch.cat([(q.detach() - b).reshape(-1) for q, b in zip(model.parameters(), before)]).cpu()
            side[name] = {"z": z, "loss": float(loss.detach()), "grad": grad, "step": step}
        a, b = side["cpu"], side["dev"]
        lr = float(hp["lr"])
        row = {"embed_max_rel_diff": float((a["z"] - b["z"]).abs().max() / a["z"].abs().max().clamp_min(1e-12)),
               "loss": a["loss"], "loss_rel_diff": abs(a["loss"] - b["loss"]) / max(abs(a["loss"]), 1e-12),
               "grad_max_abs": float(a["grad"].abs().max()),
               "grad_max_rel_diff": float((a["grad"] - b["grad"]).abs().max() / a["grad"].abs().max().clamp_min(1e-12)),
               "step_max_abs_diff": float((a["step"] - b["step"]).abs().max()),
               "step_mismatch_fraction": float(((a["step"] - b["step"]).abs() > STEP_TOL * lr).float().mean())}
        row["ok"] = bool(row["embed_max_rel_diff"] <= EMBED_TOL and row["loss_rel_diff"] <= LOSS_TOL
                         and row["grad_max_abs"] > 0 and row["grad_max_rel_diff"] <= GRAD_TOL
                         and row["step_mismatch_fraction"] <= STEP_MISMATCH)
        ok &= row["ok"]
        out[family] = row
    out["ok"] = bool(ok)
    return out


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repo root, from any directory
    from assets.common import device_check

    args = device_check.arguments(argv)
    torch = device_check.prepare(args.device)
    if torch is None:
        return device_check.NO_DEVICE

    from assets.common.params import parse
    from assets.spgcl import data, method, training
    from assets.spgcl.params import SPGCLParams
    from resources.profiles import load_params

    gpu = parse(SPGCLParams, load_params("spgcl", "gpu"), "spgcl.gpu")
    p = parse(SPGCLParams, load_params("spgcl", "smoke"), "spgcl.smoke") if args.tiny else gpu
    started = time.perf_counter()
    g = data.make_csbm(data.graph_config(GRAPH, p.n_nodes), seed=0)
    energy = method.dirichlet_energy_per_feature(g["x"], g["edge_index"])
    high = method.high_energy_mask(energy, p.dim_keep)
    keep = method.edge_keep_probability(g["x"][:, ~high], g["edge_index"], p.alpha)
    graphs = {name: training.GraphTensors.from_numpy(g["x"], g["edge_index"], high, keep, dev)
              for name, dev in (("cpu", "cpu"), ("dev", args.device))}
    report = {"paper": "spgcl", "device": args.device, "tiny": args.tiny, "torch": torch.__version__,
              "graph": {"name": GRAPH, "n": int(g["x"].shape[0]), "features": int(g["x"].shape[1]),
                        "directed_edges": int(g["edge_index"].shape[1]),
                        "build_seconds": time.perf_counter() - started},
              "parity": parity(torch, args.device, p, graphs)}
    print(f"parity: {report['parity']}", file=sys.stderr, flush=True)

    sync = device_check.synchronizer(args.device)
    epochs = TINY_EPOCHS if args.tiny else EPOCHS
    per_epoch = {}
    for family, name in FAMILIES.items():
        hp = {**p.method_hparams(family), "edepoch": 0}
        training.train(name, graphs["dev"], {**hp, "epochs": 1}, 1)             # warm-up (allocator, kernels)
        sync()
        t0 = time.perf_counter()
        training.train(name, graphs["dev"], {**hp, "epochs": epochs, "patience": epochs + 1}, 2)
        sync()
        per_epoch[family] = (time.perf_counter() - t0) / epochs
    report["slice"] = {"epochs": epochs, "seconds_per_epoch": per_epoch}
    runs: dict[str, int] = {}
    for m, _, _ in gpu.planned_runs():
        family = training.METHODS[m][0]
        runs[family] = runs.get(family, 0) + 1
    report["projection"] = device_check.projection(
        [(f"{family} training epoch (n = {gpu.n_nodes}, {runs[family]} runs)", per_epoch[family],
          runs[family] * int(gpu.method_hparams(family)["epochs"])) for family in FAMILIES if family in runs],
        note="grace_mlp / grace_nopos variants at GRACE's (GCN) cost, DGI without early stopping, SPGCL with EPS from "
             "epoch 0 (upper bounds); leaves out graph generation and annotations, node embeddings, the linear "
             "probes (sklearn, CPU), prealignment and the training_scaling asset (n up to 50,000)")
    return device_check.finish(report, report["parity"]["ok"], args.out)


if __name__ == "__main__":
    sys.exit(main())
