"""Cross-paper assets: the warehouse loader (the only DuckDB writer) and the scorecard."""

from pathlib import Path

import dagster as dg
import pandas as pd

from assets.common.checks import check_result, gate
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
        claims = warehouse.query("SELECT paper, claim_id, claim, paper_value, measured_value, holds, "
                                 "profile FROM claims ORDER BY paper, claim_id")
        out_dir = data_root(artifacts.root) / "reports"
        text = scorecard_markdown(claims)
        (out_dir / "SCORECARD.md").parent.mkdir(parents=True, exist_ok=True)
        (out_dir / "SCORECARD.md").write_text(text, encoding="utf-8")
        png = save_figure(scorecard_figure(claims), out_dir / "scorecard.png")
        context.log.info("\n" + text)
        context.add_output_metadata({"scorecard": dg.MetadataValue.md(text),
                                     "plot": dg.MetadataValue.md(png_markdown(png, "scorecard")),
                                     "claims_holding": f"{int(claims['holds'].sum())}/{len(claims)}"})
        return {"claims": claims.to_dict(orient="records")}

    warehouse_tables = gate("platform", WAREHOUSE_KEY, "tables_present",
                            "Every warehouse table exists after the load.",
                            _tables_present, blocking=True)
    return [warehouse, scorecard], [warehouse_tables]


def _tables_present(value: dict) -> dg.AssetCheckResult:
    db = Path(value["database"])
    if not db.exists():
        return check_result(False, f"{db} was not created")
    names = set(read_table(db, "SELECT table_name FROM information_schema.tables")["table_name"])
    missing = sorted(set(SCHEMA) - names)
    return check_result(not missing, f"missing tables: {missing}" if missing else "all tables present")


def scorecard_markdown(claims: pd.DataFrame) -> str:
    if claims.empty:
        return "# paperlab scorecard\n\nNo claims in the warehouse yet.\n"
    held = int(claims["holds"].sum())
    lines = ["# paperlab scorecard", "",
             f"{held}/{len(claims)} claims hold. A ❌ is a measured result, explained in the "
             "paper's data/reports/<slug>/REPORT.md — never tuned away.", ""]
    table = claims.rename(columns={"claim_id": "id", "paper_value": "paper says",
                                   "measured_value": "we measured"})
    lines.append(markdown_table(table[["paper", "id", "claim", "paper says", "we measured",
                                       "holds", "profile"]]))
    return "\n".join(lines) + "\n"


def scorecard_figure(claims: pd.DataFrame):
    fig, ax = new_figure(6.4, 0.6 + 0.5 * max(1, claims["paper"].nunique() if len(claims) else 1))
    if len(claims):
        per = claims.groupby("paper")["holds"].agg(["sum", "count"]).sort_index()
        ax.barh(per.index, per["count"], color="#e0b4b4", label="claims")
        ax.barh(per.index, per["sum"], color="#4c9a5b", label="hold")
        ax.set_xlabel("claims")
        ax.legend(loc="lower right")
    ax.set_title("paperlab: claims that hold at the measured profile")
    return fig
