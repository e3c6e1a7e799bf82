"""Cross-paper assets: the warehouse loader (the only DuckDB writer) and the scorecard."""

from pathlib import Path

import dagster as dg
import pandas as pd

from assets.common.checks import gate
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
              description="One row per paper claim (paper's value, ours, holds) → "
                          "data/reports/SCORECARD.md and scorecard.png.")
    def scorecard(context: dg.AssetExecutionContext, warehouse: WarehouseResource,
                  artifacts: ArtifactsResource) -> dict:
        claims = warehouse.query("SELECT paper, claim_id, kind, claim, paper_value, measured_value, holds, "
                                 "seeds, profile FROM claims ORDER BY paper, kind, claim_id")
        out_dir = data_root(artifacts.root) / "reports"
        text = scorecard_markdown(claims)
        (out_dir / "SCORECARD.md").parent.mkdir(parents=True, exist_ok=True)
        (out_dir / "SCORECARD.md").write_text(text, encoding="utf-8")
        png = save_figure(scorecard_figure(claims), out_dir / "scorecard.png")
        counted = claims[claims["kind"] == "claim"]
        context.add_output_metadata({"scorecard": dg.MetadataValue.md(text),
                                     "plot": dg.MetadataValue.md(png_markdown(png, "scorecard")),
                                     "claims_holding": f"{int(counted['holds'].fillna(False).sum())}/{len(counted)}"})
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
    """Per paper: claims held / failed, report-only observations, profile."""
    rows = []
    for paper, group in claims.groupby("paper", sort=False):
        counted = group[group["kind"] == "claim"]
        held = int(counted["holds"].fillna(False).astype(bool).sum())
        rows.append({"paper": paper, "held": held, "failed": len(counted) - held,
                     "report-only": int((group["kind"] == "observation").sum()),
                     "profile": ", ".join(sorted(set(group["profile"].dropna())))})
    return pd.DataFrame(rows, columns=["paper", "held", "failed", "report-only", "profile"])


def scorecard_markdown(claims: pd.DataFrame) -> str:
    if claims.empty:
        return "# paperlab scorecard\n\nNo claims in the warehouse yet.\n"
    summary = scorecard_summary(claims)
    held, failed = int(summary["held"].sum()), int(summary["failed"].sum())
    lines = ["# paperlab scorecard", "",
             f"{held}/{held + failed} claims hold ({int(summary['report-only'].sum())} report-only observations "
             "not counted). A ❌ is a measured result, explained in the paper's "
             "data/reports/<slug>/REPORT.md — never tuned away.", "",
             markdown_table(summary), ""]
    table = claims.assign(holds=[h if k == "claim" else "report-only" for h, k in zip(claims["holds"], claims["kind"])])
    table = table.rename(columns={"claim_id": "id", "paper_value": "paper says", "measured_value": "we measured"})
    lines.append(markdown_table(table[["paper", "id", "claim", "paper says", "we measured", "seeds",
                                       "holds", "profile"]]))
    return "\n".join(lines) + "\n"


def scorecard_figure(claims: pd.DataFrame):
    summary = scorecard_summary(claims) if len(claims) else pd.DataFrame()
    fig, ax = new_figure(6.4, 0.6 + 0.5 * max(1, len(summary)))
    if len(summary):
        summary = summary.set_index("paper").sort_index()
        total = summary["held"] + summary["failed"]
        ax.barh(summary.index, total, color="#e0b4b4", label="claims")
        ax.barh(summary.index, summary["held"], color="#4c9a5b", label="hold")
        ax.set_xlabel("claims (report-only observations not counted)")
        ax.legend(loc="lower right")
    ax.set_title("paperlab: claims that hold at the measured profile")
    return fig
