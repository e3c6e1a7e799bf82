"""LaRI (layered ray intersections + ray stopping index) as Dagster assets — wiring only
(data.py, render.py, model.py, metrics.py, runs.py, checks.py, benchmark.py, report.py do the work).

(No `from __future__ import annotations` here: Dagster reads the context annotation at runtime.)

    mesh_catalog ─> camera_rigs ─> layered_gt ─> rgb_renders ─> splits ─> pointmap_model ──┐
         └──────────────────────> gt_surface_points ───────────────┘   stop_index_model ─┴─> stop_threshold
                                                                      ─> predictions ─> benchmark_report
                                                      perf_benchmark (wall clock, run record) ─┘
"""

import dagster as dg
import pandas as pd

from assets.common.paper import Paper
from assets.common.parallel import spawn_imap
from assets.common.progress import Progress
from assets.lari import checks, runs
from assets.lari import report as report_mod
from assets.lari.params import LariParams
from resources.artifacts import ArtifactsResource, save_checkpoint
from resources.compute import ComputeResource

paper = Paper("lari", params=LariParams)


def _seed_for(compute: ComputeResource):
    return lambda *keys: compute.seed_for(paper.slug, *keys)


def _imap(compute: ComputeResource):
    p = paper.params(compute)
    return lambda fn, jobs: spawn_imap(fn, jobs, compute.workers(len(jobs), p.workers))


@paper.asset(kinds={"pandas", "numpy"}, description="Dataset: procedural meshes, unit bbox — objects (tubes, cups, "
             "open boxes, bowls, unions with a hollow part, mugs; trimesh primitives + manifold3d booleans, random "
             "scale / rotation) and rooms (floor, 3 walls, 2–4 furniture pieces). scene_kind column: object / room.")
def mesh_catalog(context: dg.AssetExecutionContext, compute: ComputeResource,
                 artifacts: ArtifactsResource) -> pd.DataFrame:
    frame = runs.mesh_catalog(paper.params(compute), _seed_for(compute), artifacts.paper_dir(paper.slug))
    context.add_output_metadata({"meshes": len(frame), "faces": int(frame["n_faces"].sum())})
    return frame


@paper.asset(kinds={"pandas"}, description="Cameras per view: objects on a sphere r ∈ [1.5, 2.2] facing the origin, "
             "rooms inside near the open side; f = 35/32·W, c = W/2; light direction and checker frequency.")
def camera_rigs(context: dg.AssetExecutionContext, mesh_catalog: pd.DataFrame,
                compute: ComputeResource) -> pd.DataFrame:
    return runs.camera_rigs(paper.params(compute), mesh_catalog, _seed_for(compute))


@paper.asset(kinds={"torch", "numpy"}, description="Annotation: one ray per pixel centre, batched Möller–Trumbore "
             "(box culling), hits t > ε as camera z, sorted, de-duplicated (|Δz| < 1e-6), Lmax layers, layers under "
             "3 % of layer 1 dropped; stop index, raw hit counts (parity), first-hit face.")
def layered_gt(context: dg.AssetExecutionContext, mesh_catalog: pd.DataFrame, camera_rigs: pd.DataFrame,
               compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    frame = runs.layered_gt(paper.params(compute), mesh_catalog, camera_rigs, artifacts.paper_dir(paper.slug),
                            _imap(compute))
    context.add_output_metadata({"views": len(frame)})
    return frame


@paper.asset(kinds={"numpy"}, description="Lambert + ambient RGB of the first hit (random albedo per part, checker "
             "texture, light direction), black background, no depth in colour; layer-1 / foreground mismatch per view "
             "(> 1.9 % rejected).")
def rgb_renders(context: dg.AssetExecutionContext, mesh_catalog: pd.DataFrame, camera_rigs: pd.DataFrame,
                layered_gt: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    return runs.rgb_renders(paper.params(compute), mesh_catalog, camera_rigs, layered_gt, _seed_for(compute),
                            artifacts.paper_dir(paper.slug))


@paper.asset(kinds={"numpy"}, description="Object evaluation GT: 10k area-uniform surface samples per mesh "
             "(world frame; moved into each view's camera frame at evaluation).")
def gt_surface_points(context: dg.AssetExecutionContext, mesh_catalog: pd.DataFrame, compute: ComputeResource,
                      artifacts: ArtifactsResource) -> pd.DataFrame:
    return runs.gt_surface_points(paper.params(compute), mesh_catalog, _seed_for(compute),
                                  artifacts.paper_dir(paper.slug))


@paper.asset(kinds={"pandas"}, description="Mesh-id-level train / val / test per kind; val / test keep their first "
             "eval_views views; rejected views dropped.")
def splits(context: dg.AssetExecutionContext, mesh_catalog: pd.DataFrame, rgb_renders: pd.DataFrame,
           compute: ComputeResource) -> pd.DataFrame:
    return runs.make_splits(paper.params(compute), mesh_catalog, rgb_renders, _seed_for(compute))


def _train(context, net: str, splits, layered_gt, rgb_renders, compute, artifacts) -> pd.DataFrame:
    p = paper.params(compute)
    jobs = runs.training_jobs(p, net, splits, layered_gt, rgb_renders, _seed_for(compute), compute.resolved_device())
    progress = Progress(context.log.info, len(jobs), f"{net} training")
    rows, timings = [], []
    for job, out in zip(jobs, spawn_imap(runs.train_job, jobs, compute.workers(len(jobs), p.workers))):
        ref = save_checkpoint(artifacts.checkpoint_path(paper.slug, job["name"]), out["state"],
                              provenance=compute.provenance(paper.slug), config=job["cfg"], seed=job["train_seed"],
                              device=job["device"], scene_kind=job["kind"])
        rows.append(runs.model_row(job, out, ref))
        timings.append({"asset": f"{net}_model", "partition": "", "seed": job["seed"], "dataset": job["kind"],
                        "method": f"L{job['layers']}", "metric": "train_seconds", "value": float(out["seconds"])})
        progress.step(f"{job['name']}: loss {rows[-1]['loss_first']:.4f} → {rows[-1]['loss_last']:.4f} "
                      f"({out['seconds']:.0f} s)")
    artifacts.record_timings(paper.slug, f"{net}_training", pd.DataFrame(timings))
    return pd.DataFrame(rows)


@paper.asset(gpu=True, kinds={"torch"}, description="Point-map UNets (UV channels, L exp-remapped heads) per kind × "
             "seed × L (L and 1 = visible-only; the ablation L at the first seed): SSI-aligned mean L2 on valid GT.")
def pointmap_model(context: dg.AssetExecutionContext, splits: pd.DataFrame, layered_gt: pd.DataFrame,
                   rgb_renders: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    return _train(context, "pointmap", splits, layered_gt, rgb_renders, compute, artifacts)


@paper.asset(gpu=True, kinds={"torch"}, description="Stop-index UNets per kind × seed: L + 1 logits, cross-entropy "
             "on Σ mask.")
def stop_index_model(context: dg.AssetExecutionContext, splits: pd.DataFrame, layered_gt: pd.DataFrame,
                     rgb_renders: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    return _train(context, "stop", splits, layered_gt, rgb_renders, compute, artifacts)


def _models(pointmap_model: pd.DataFrame, stop_index_model: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([pointmap_model, stop_index_model], ignore_index=True)


@paper.asset(kinds={"pandas"}, description="Decision rule: τ on P(S ≥ l) maximising validation F@0.05 per kind × "
             "seed (argmax's validation F beside it).")
def stop_threshold(context: dg.AssetExecutionContext, pointmap_model: pd.DataFrame, stop_index_model: pd.DataFrame,
                   splits: pd.DataFrame, layered_gt: pd.DataFrame, rgb_renders: pd.DataFrame, camera_rigs: pd.DataFrame,
                   gt_surface_points: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    p = paper.params(compute)
    jobs = runs.eval_jobs(p, _models(pointmap_model, stop_index_model), splits, layered_gt, rgb_renders, camera_rigs,
                          gt_surface_points)
    return pd.DataFrame(list(_imap(compute)(runs.threshold_job, jobs)))


@paper.asset(kinds={"pandas"}, description="Every method on the held-out test views (per-view CD / F rows): LaRI "
             "(argmax S, τ rule, GT mask, all valid, z rule), visible-only, heuristic mirror, the L ablation; "
             "stop-index accuracy, confusion, layer-order violations.")
def predictions(context: dg.AssetExecutionContext, pointmap_model: pd.DataFrame, stop_index_model: pd.DataFrame,
                stop_threshold: pd.DataFrame, splits: pd.DataFrame, layered_gt: pd.DataFrame,
                rgb_renders: pd.DataFrame, camera_rigs: pd.DataFrame, gt_surface_points: pd.DataFrame,
                compute: ComputeResource, artifacts: ArtifactsResource) -> pd.DataFrame:
    p = paper.params(compute)
    jobs = runs.eval_jobs(p, _models(pointmap_model, stop_index_model), splits, layered_gt, rgb_renders, camera_rigs,
                          gt_surface_points, stop_threshold)
    rows, examples = [], {}
    for job, out in zip(jobs, _imap(compute)(runs.predict_job, jobs)):
        rows += out["rows"] + runs.stop_rows(job["kind"], job["seed"], out["confusion"], out["violations"],
                                             out["pairs"])
        if out["examples"]:
            examples[job["kind"]] = out["examples"]
    runs.save_examples(artifacts.paper_dir(paper.slug) / "examples.npz", examples)
    return pd.DataFrame(rows)


@paper.asset(volatile=True, kinds={"pandas"}, description="Wall clock (run record): views/s of our caster vs "
             "trimesh's multi-hit intersector (same hits asserted); ms/image of LaRI (both nets) vs visible-only.")
def perf_benchmark(context: dg.AssetExecutionContext, mesh_catalog: pd.DataFrame, camera_rigs: pd.DataFrame,
                   splits: pd.DataFrame, rgb_renders: pd.DataFrame, pointmap_model: pd.DataFrame,
                   stop_index_model: pd.DataFrame, compute: ComputeResource) -> pd.DataFrame:
    return runs.perf_benchmark(paper.params(compute), mesh_catalog, camera_rigs, splits, rgb_renders,
                               _models(pointmap_model, stop_index_model))


@paper.asset(kinds={"duckdb", "markdown"}, description="CD / F@{0.1, 0.05, 0.02} (objects; rooms visible / unseen / "
             "all), stop-index accuracy, τ, renders of GT and predictions; claims → warehouse rows, REPORT.md.")
def benchmark_report(context: dg.AssetExecutionContext, mesh_catalog: pd.DataFrame, layered_gt: pd.DataFrame,
                     rgb_renders: pd.DataFrame, splits: pd.DataFrame, pointmap_model: pd.DataFrame,
                     stop_index_model: pd.DataFrame, stop_threshold: pd.DataFrame, predictions: pd.DataFrame,
                     perf_benchmark: pd.DataFrame, compute: ComputeResource, artifacts: ArtifactsResource) -> dict:
    examples = runs.load_examples(artifacts.paper_dir(paper.slug) / "examples.npz")
    built = report_mod.build_report(mesh_catalog, layered_gt, rgb_renders, splits,
                                    _models(pointmap_model, stop_index_model), stop_threshold, predictions,
                                    perf_benchmark, examples, paper.params(compute))
    recorded = [artifacts.recorded_timings(paper.slug, f"{n}_training") for n in ("pointmap", "stop")]
    perf = perf_benchmark.assign(asset="perf_benchmark", partition="", seed=-1, dataset="object",
                                 method=perf_benchmark["metric"])
    timings = pd.concat([t for t in recorded if t is not None] + [perf[["asset", "partition", "seed", "dataset",
                                                                        "method", "metric", "value"]]],
                        ignore_index=True)
    built.timings = timings
    built.timing_body = report_mod.timing_body(timings)
    return paper.publish(context, compute, artifacts, built)


PAPER = paper.define(
    assets=[mesh_catalog, camera_rigs, layered_gt, rgb_renders, gt_surface_points, splits, pointmap_model,
            stop_index_model, stop_threshold, predictions, perf_benchmark, benchmark_report],
    checks=[
        paper.gate(mesh_catalog, "meshes_valid", "Non-empty, finite, non-degenerate meshes, unit bbox; objects "
                   "watertight; counts as configured.", checks.catalog_valid, uses_params=True),
        paper.gate(layered_gt, "layers_consistent", "z strictly increasing over valid layers, prefix mask, S = Σ mask, "
                   "finite, z > near plane, re-projection ≤ 1e-3 px.", checks.layers_consistent, uses_params=True),
        paper.gate(layered_gt, "parity", "Odd-hit pixels ≤ 1 % of hit pixels on watertight objects.", checks.parity),
        paper.gate(layered_gt, "has_occlusions", "≥ 30 % of object hit pixels with > 2 layers.",
                   checks.has_occlusions),
        paper.gate(rgb_renders, "matches_layer1", "RGB foreground / layer-1 disagreement ≤ 1 %; kept views under the "
                   "rejection threshold; uint8 images of the annotation size.", checks.rgb_matches_layer1,
                   additional={"layered": layered_gt}, uses_params=True),
        paper.gate(splits, "disjoint", "No mesh id in two splits; no empty split.", checks.splits_disjoint),
        paper.gate(pointmap_model, "finite_and_falling", "Checkpoints load, finite weights, declared L; training "
                   "loss finite and falling.", checks.models_valid, uses_params=True),
        paper.gate(stop_index_model, "finite_and_falling", "Checkpoints load, finite weights, declared L; training "
                   "loss finite and falling.", checks.models_valid, uses_params=True),
        paper.gate(stop_threshold, "tau_valid", "τ finite in (0, 1) for every kind × seed.", checks.threshold_valid,
                   uses_params=True),
        paper.gate(predictions, "complete", "Finite F in [0, 1]; every kind × seed × method scored every test view.",
                   checks.predictions_complete, additional={"splits": splits}, uses_params=True),
    ],
    claims=["completeness", "unseen_geometry", "stop_index_needed"],
    observations=["argmax_stop", "f_vs_layers", "baselines", "gt_mask_protocol", "layer_order_violations", "parameters",
                  "caster_speed", "inference_latency"],
)
