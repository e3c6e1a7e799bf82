"""Cross-paper assets: the warehouse loader (the only DuckDB writer) and the scorecard."""

from pathlib import Path

import dagster as dg
import pandas as pd

from assets.common.checks import gate
from assets.common.claims import HOLDS, INCONCLUSIVE, OUTCOMES, REFUTED, SYMBOL
from assets.common.plotting import new_figure, save_figure
from assets.common.report import markdown_table, png_markdown
from resources.artifacts import ArtifactsResource, data_root
from resources.warehouse import SCHEMA, WarehouseResource, read_table

PLATFORM_GROUP = "platform"
WAREHOUSE_KEY = dg.AssetKey(["platform", "warehouse"])
SCORECARD_KEY = dg.AssetKey(["platform", "scorecard"])


def build_platform_assets(report_keys: list[dg.AssetKey]) -> tuple[list, list]:
    """The warehouse depends on every paper's report; the scorecard on the warehouse."""

    @dg.asset(key=WAREHOUSE_KEY, group_name=PLATFORM_GROUP, deps=report_keys, pool="duckdb",
              kinds={"duckdb"},
              description="Loads every paper's result Parquet rows into data/results.duckdb "
                          "(idempotent; the only writer).")
    def warehouse(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dict:
        counts = warehouse.load()
        context.log.info(f"warehouse rows: {counts}")
        context.add_output_metadata({**{f"rows_{t}": n for t, n in counts.items()},
                                     "database": str(warehouse.db_path())})
        return {"rows": counts, "database": str(warehouse.db_path())}

    @dg.asset(key=SCORECARD_KEY, group_name=PLATFORM_GROUP, deps=[WAREHOUSE_KEY], kinds={"duckdb"},
              description="One row per paper claim (paper's value, ours, verdict, CI, premise) → "
                          "data/reports/SCORECARD.md and scorecard.png.")
    def scorecard(context: dg.AssetExecutionContext, warehouse: WarehouseResource,
                  artifacts: ArtifactsResource) -> dict:
        claims = warehouse.query("SELECT paper, claim_id, kind, claim, paper_value, measured_value, verdict, "
                                 "ci, premise, seeds, profile FROM claims ORDER BY paper, kind, claim_id")
        out_dir = data_root(artifacts.root) / "reports"
        text = scorecard_markdown(claims)
        (out_dir / "SCORECARD.md").parent.mkdir(parents=True, exist_ok=True)
        (out_dir / "SCORECARD.md").write_text(text, encoding="utf-8")
        png = save_figure(scorecard_figure(claims), out_dir / "scorecard.png")
        context.add_output_metadata({"scorecard": dg.MetadataValue.md(text),
                                     "plot": dg.MetadataValue.md(png_markdown(png, "scorecard")),
                                     "verdicts": totals_line(scorecard_summary(claims)) if len(claims)
                                     else "no claims"})
        return {"claims": claims.to_dict(orient="records")}

    warehouse_tables = gate("platform", WAREHOUSE_KEY, "tables_present",
                            "Every warehouse table exists after the load.",
                            _tables_present, blocking=True)
    return [warehouse, scorecard], [warehouse_tables]


def _tables_present(value: dict) -> list[str]:
    db = Path(value["database"])
    if not db.exists():
        return [f"{db} was not created"]
    names = set(read_table(db, "SELECT table_name FROM information_schema.tables")["table_name"])
    return [f"missing table {name}" for name in sorted(set(SCHEMA) - names)]


def scorecard_summary(claims: pd.DataFrame) -> pd.DataFrame:
    """Per paper: counted claims that hold / are refuted / are inconclusive, the rows not counted
    (report-only observations and sanity rows), profile."""
    rows = []
    for paper, group in claims.groupby("paper", sort=False):
        counted = group.loc[group["kind"] == "claim", "verdict"]
        rows.append({"paper": paper, **{v: int((counted == v).sum()) for v in OUTCOMES},
                     "report-only": int((group["kind"] == "observation").sum()),
                     "sanity": int((group["kind"] == "sanity").sum()),
                     "profile": ", ".join(sorted(set(group["profile"].dropna())))})
    return pd.DataFrame(rows, columns=["paper", *OUTCOMES, "report-only", "sanity", "profile"])


def totals_line(summary: pd.DataFrame) -> str:
    """'12 hold · 30 refuted · 40 inconclusive of 82 claims, across 18 papers'."""
    n = {v: int(summary[v].sum()) for v in OUTCOMES}
    return (f"**{n[HOLDS]} hold · {n[REFUTED]} refuted · {n[INCONCLUSIVE]} inconclusive** of {sum(n.values())} "
            f"claims across {len(summary)} papers ({int(summary['report-only'].sum())} report-only observations and "
            f"{int(summary['sanity'].sum())} sanity rows not counted)")


def scorecard_markdown(claims: pd.DataFrame, note: str = "") -> str:
    if claims.empty:
        return "# paperlab scorecard\n\nNo claims in the warehouse yet.\n"
    summary = scorecard_summary(claims)
    lines = ["# paperlab scorecard", "", totals_line(summary) + ".", "",
             "One rule judges every claim (assets/common/claims.py): it holds when the 90 % CI excludes no effect "
             "and the estimate reaches the paper's margin, is refuted when the CI lies below the margin, and is "
             "inconclusive otherwise or when its premise failed. A refuted or inconclusive claim is a measured result, "
             "explained in the paper's report — never tuned away.", "",
             markdown_table(summary), ""] + ([note, ""] if note else [])
    table = claims.rename(columns={"claim_id": "id", "paper_value": "paper says", "measured_value": "we measured"})
    table = table.assign(verdict=[f"{SYMBOL[v]} {v}" if k == "claim" else v
                                  for v, k in zip(table["verdict"], table["kind"])])
    lines.append(markdown_table(table[["paper", "id", "claim", "paper says", "we measured", "ci", "premise",
                                       "seeds", "verdict", "profile"]]))
    return "\n".join(lines) + "\n"


def scorecard_figure(claims: pd.DataFrame):
    summary = scorecard_summary(claims) if len(claims) else pd.DataFrame()
    fig, ax = new_figure(6.4, 0.6 + 0.5 * max(1, len(summary)))
    if len(summary):
        summary = summary.set_index("paper").sort_index()
        left = pd.Series(0, index=summary.index)
        for outcome, color in ((HOLDS, "#4c9a5b"), (INCONCLUSIVE, "#d9b44a"), (REFUTED, "#c0504d")):
            ax.barh(summary.index, summary[outcome], left=left, color=color, label=outcome)
            left = left + summary[outcome]
        ax.set_xlabel("counted claims (report-only and sanity rows not counted)")
        ax.legend(loc="lower right")
    ax.set_title("paperlab: verdicts at the measured profile")
    return fig
