"""The results record in git (results/), written from the warehouse and the paper reports.

    python -m jobs.results          # write results/ (make results; make reproduce ends with it)
    python -m jobs.results --diff   # print the claims whose verdict changed against the
                                    # committed record, write nothing (make results-diff)

results/ is the one exception to "no generated data in git": small text files and figures.
- claims.csv: paper, claim, verdict, premise, paper's value, ours, CI, seeds, git sha, params hash;
- runs.csv: every recorded run at the DVC profile — paper, wall s, CPU-s, machine (cores, CPU
  model), load, date — merged with the committed history by run id;
- a paper with no rows in the warehouse (`make reproduce PAPERS=...` ran a subset) keeps its committed
  claims rows, and the scorecard counts the merged record;
- metrics.json: paper → claim → estimate, CI bounds, margin, verdict (DVC metrics: `dvc metrics diff`);
- SCORECARD.md and scorecard.png;
- <slug>.md per paper: its REPORT.md (claims table and explanations) with at most
  MAX_FIGURES of its figures, downscaled, under <slug>/.
Only the DVC profile (cpu) is recorded. No Dagster import.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

from jobs.papers import PAPERS
from resources.profiles import REPO_ROOT, load_all_params

RESULTS = REPO_ROOT / "results"
MAX_FIGURES = 3
FIGURE_WIDTH_PX = 900
CLAIM_COLUMNS = ["paper", "claim_id", "kind", "verdict", "premise", "claim", "paper_value", "measured_value",
                 "estimate", "ci_low", "ci_high", "margin", "ci", "seeds", "git_sha", "params_hash"]
RUN_COLUMNS = ["paper", "run_id", "profile", "status", "wall_seconds", "cpu_seconds", "cores", "cpu_model",
               "load_start", "load_end", "started_at", "git_sha"]


def claims_record(claims: pd.DataFrame, runs: pd.DataFrame, profile: str) -> pd.DataFrame:
    """The claims rows at `profile`, stable (not wall-clock) ones, with the git sha and params hash
    of the run that produced each paper's results; sorted by the registry's order."""
    own = claims[(claims["profile"] == profile) & ~claims["volatile"].fillna(False).astype(bool)].copy()
    produced = runs.dropna(subset=["run_id"]).drop_duplicates("run_id", keep="last").set_index("run_id")
    for column in ("git_sha", "params_hash"):
        own[column] = [produced[column].get(r) if isinstance(r, str) and r in produced.index else None
                       for r in own.get("run_id", pd.Series([None] * len(own), index=own.index))]
    order = {slug: i for i, slug in enumerate(PAPERS)}
    own = own.assign(_order=own["paper"].map(order).fillna(len(order)))
    own = own.sort_values(["_order", "kind", "claim_id"], kind="stable")
    return own.reindex(columns=CLAIM_COLUMNS).reset_index(drop=True)


def runs_record(jobs: pd.DataFrame, committed: pd.DataFrame | None, profile: str) -> pd.DataFrame:
    """Job runs at `profile` (one row per run id), the committed history kept."""
    frames = [f for f in (committed, jobs[jobs["profile"] == profile] if len(jobs) else None) if f is not None]
    if not frames:
        return pd.DataFrame(columns=RUN_COLUMNS)
    merged = pd.concat([f.reindex(columns=RUN_COLUMNS) for f in frames], ignore_index=True)
    merged = merged.drop_duplicates("run_id", keep="last")
    return merged.sort_values(["started_at", "paper"], kind="stable").reset_index(drop=True)


def keep_committed(record: pd.DataFrame, committed: pd.DataFrame | None) -> tuple[pd.DataFrame, list[str]]:
    """`record` plus the committed rows of every registered paper it has no rows for (a
    `make reproduce PAPERS=...` subset leaves the other papers out of the warehouse; their committed
    results stand, with the git sha of the run that produced them). Returns the merged record, in
    the registry's order, and the slugs kept from the committed record."""
    if committed is None or committed.empty:
        return record, []
    kept = [slug for slug in PAPERS if slug not in set(record["paper"]) and slug in set(committed["paper"])]
    if not kept:
        return record, []
    merged = pd.concat([record, committed[committed["paper"].isin(kept)].reindex(columns=CLAIM_COLUMNS)],
                       ignore_index=True)
    order = {slug: i for i, slug in enumerate(PAPERS)}
    merged = merged.assign(_order=merged["paper"].map(order)).sort_values("_order", kind="stable")
    return merged.drop(columns="_order").reset_index(drop=True), kept


_TIMED = re.compile(r"Not counted here: \d+ wall-clock claim\(s\) \(([^)]*)\)")


def timed_claim_names(scorecard_md: str) -> list[str]:
    """The paper/claim names of the wall-clock claims listed in a SCORECARD.md's note."""
    found = _TIMED.search(scorecard_md)
    return [n.strip() for n in found.group(1).split(",") if n.strip()] if found else []


def _number(value) -> float | None:
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else float(value)


def metrics_record(record: pd.DataFrame) -> dict:
    """paper → claim_id → {verdict, estimate, ci_low, ci_high, margin} for the counted claims."""
    out: dict[str, dict] = {}
    for row in record[record["kind"] == "claim"].itertuples():
        out.setdefault(row.paper, {})[row.claim_id] = {
            "verdict": row.verdict, "estimate": _number(row.estimate), "ci_low": _number(row.ci_low),
            "ci_high": _number(row.ci_high), "margin": _number(row.margin)}
    return out


def verdict_changes(old: pd.DataFrame | None, new: pd.DataFrame) -> list[str]:
    """One line per claim whose verdict differs between two claims records (added and removed
    claims included), e.g. 'hir/less_budget: holds → inconclusive'."""
    def verdicts(frame: pd.DataFrame | None) -> dict[str, str]:
        if frame is None or frame.empty:
            return {}
        return {f"{r.paper}/{r.claim_id}": str(r.verdict) for r in frame.itertuples()}

    before, after = verdicts(old), verdicts(new)
    lines = []
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key, "absent"), after.get(key, "absent")
        if a != b:
            lines.append(f"{key}: {a} → {b}")
    return lines


def committed_claims() -> pd.DataFrame | None:
    """results/claims.csv as committed at HEAD (None when there is none)."""
    run = subprocess.run(["git", "show", "HEAD:results/claims.csv"], cwd=REPO_ROOT, capture_output=True)
    if run.returncode != 0:
        return None
    from io import BytesIO

    return pd.read_csv(BytesIO(run.stdout), keep_default_na=False, na_values=[""])


def _figure_names(report_md: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(plots/([^)]+\.png)\)", report_md)


def paper_page(slug: str, report_md: str, kept: list[str]) -> str:
    """REPORT.md re-pointed at the record: kept figures link to <slug>/, the others are named."""
    def relink(m: re.Match) -> str:
        name = m.group(2)
        if name in kept:
            return f"![{m.group(1)}]({slug}/{name})"
        return f"(figure `{name}`: in `data/reports/{slug}/plots/` after a run)"

    body = re.sub(r"!\[([^\]]*)\]\(plots/([^)]+\.png)\)", relink, report_md)
    return (f"<!-- GENERATED by `python -m jobs.results` from data/reports/{slug}/REPORT.md — do not edit. -->\n"
            + body)


def shrink_png(src: Path, dst: Path, width: int = FIGURE_WIDTH_PX) -> Path:
    """Copy a PNG, downscaled to at most `width` pixels wide (palette-quantised, small)."""
    from PIL import Image

    dst.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(src) as img:
        img = img.convert("RGB")
        if img.width > width:
            img = img.resize((width, round(img.height * width / img.width)), Image.LANCZOS)
        img.quantize(colors=128).save(dst, optimize=True)
    return dst


def write_record(out: Path, claims: pd.DataFrame, jobs: pd.DataFrame, runs: pd.DataFrame, data: Path,
                 profile: str) -> dict[str, Path]:
    """Write every file of results/ (module docstring). Returns the main paths."""
    from assets.common.plotting import save_figure
    from jobs.platform import scorecard_figure, scorecard_markdown

    out.mkdir(parents=True, exist_ok=True)
    committed = (pd.read_csv(out / "claims.csv", keep_default_na=False, na_values=[""])
                 if (out / "claims.csv").exists() else None)
    record, kept = keep_committed(claims_record(claims, runs, profile), committed)
    if kept:
        print(f"not in this warehouse, kept from the committed record: {', '.join(kept)}")
    record.to_csv(out / "claims.csv", index=False)
    committed_runs = pd.read_csv(out / "runs.csv") if (out / "runs.csv").exists() else None
    shas = runs.dropna(subset=["run_id"]).drop_duplicates("run_id", keep="last").set_index("run_id")["git_sha"]
    jobs = jobs.assign(git_sha=[shas.get(r) for r in jobs["run_id"]]) if len(jobs) else jobs
    runs_record(jobs, committed_runs, profile).to_csv(out / "runs.csv", index=False)
    (out / "metrics.json").write_text(json.dumps(metrics_record(record), indent=1, sort_keys=True) + "\n",
                                      encoding="utf-8")
    # The record's scorecard counts exactly the rows of claims.csv (the README's count): wall-clock
    # claims vary with the machine, so they stay in the per-paper run records, named here.
    # A paper kept from the committed record keeps its wall-clock names from the committed note.
    own = claims[claims["profile"] == profile]
    timed = own["volatile"].fillna(False).astype(bool)
    names = set(own.loc[timed, "paper"] + "/" + own.loc[timed, "claim_id"])
    if kept and (out / "SCORECARD.md").exists():
        names |= {n for n in timed_claim_names((out / "SCORECARD.md").read_text(encoding="utf-8"))
                  if n.split("/")[0] in kept}
    names = sorted(names)
    note = (f"Not counted here: {len(names)} wall-clock claim(s) ({', '.join(names)}), judged in each run's "
            "record under data/runs/<paper>/: they depend on the machine." if names else "")
    counted = record.assign(profile=profile)
    (out / "SCORECARD.md").write_text(scorecard_markdown(counted, note=note), encoding="utf-8")
    save_figure(scorecard_figure(counted), out / "scorecard.png")
    for slug in dict.fromkeys(record["paper"]):
        report = data / "reports" / slug / "REPORT.md"
        if not report.exists():
            continue
        text = report.read_text(encoding="utf-8")
        kept = [n for n in _figure_names(text) if (report.parent / "plots" / n).exists()][:MAX_FIGURES]
        figures = out / slug
        for stale in figures.glob("*.png") if figures.exists() else []:
            if stale.name not in kept:
                stale.unlink()
        for name in kept:
            shrink_png(report.parent / "plots" / name, figures / name)
        (out / f"{slug}.md").write_text(paper_page(slug, text, kept), encoding="utf-8")
    return {"claims": out / "claims.csv", "runs": out / "runs.csv", "metrics": out / "metrics.json",
            "scorecard": out / "SCORECARD.md"}


def job_frame(data: Path) -> pd.DataFrame:
    """Every paper's data/runs/<slug>/jobs.jsonl as one frame (RUN_COLUMNS)."""
    from resources.warehouse import job_records

    rows = [{**r, "paper": slug} for slug in PAPERS for r in job_records(slug, data)]
    return pd.DataFrame(rows).reindex(columns=RUN_COLUMNS)


def main(argv: list[str] | None = None) -> int:
    from resources.artifacts import data_root
    from resources.warehouse import read_table

    parser = argparse.ArgumentParser(prog="python -m jobs.results", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--diff", action="store_true",
                        help="print the verdicts that changed against the committed record; write nothing")
    args = parser.parse_args(argv)
    data = data_root()
    db = data / "results.duckdb"
    if not db.exists():
        print(f"no warehouse at {db}: run `make reproduce` first", file=sys.stderr)
        return 2
    profile = str(load_all_params().get("dvc_profile", "cpu"))
    claims = read_table(db, "SELECT * FROM claims")
    runs = read_table(db, "SELECT * FROM runs")
    committed = committed_claims()
    new, _ = keep_committed(claims_record(claims, runs, profile), committed)
    changes = verdict_changes(committed, new)
    print(f"verdicts changed against the committed results/claims.csv: {len(changes)}")
    for line in changes:
        print(f"  {line}")
    if args.diff:
        return 0
    paths = write_record(RESULTS, claims, job_frame(data), runs, data, profile)
    print(f"results record written: {', '.join(str(p.relative_to(REPO_ROOT)) for p in paths.values())}")
    from jobs import readme_results

    return readme_results.main([])


if __name__ == "__main__":
    sys.exit(main())
