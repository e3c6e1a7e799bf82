"""FlowTracer on your own model's attention ("bring your own"): no Dagster, no model needed.

    python -m assets.flowtracer.cli --npz attn.npz --tokens tokens.txt [--layers 1 2] [--out DIR]

attn.npz holds `attn` (L, H, T, T) attention probabilities of one sequence (attn[l, h, q, k] = query q on
key k, causal), `question` and `answer` (int index arrays); tokens.txt has one token per line (T lines).
--layers defaults to the middle third of the layers. Writes

    DIR/token_credit.csv   position, token, h, f, tau, one_hop, rollout, in_backbone
    DIR/backbone.csv       i, k, token_i, token_k, flow   (greedy widest-path backbone, ≥ 80 % of the flow)
    DIR/credit.png         the tokens as text, background coloured by throughput τ

Bad input (a missing, empty, non-zip or pickled .npz; a missing key, a wrong shape, NaN / inf or
negative attention; a missing, empty or non-UTF-8 tokens file, or one whose line count is not T;
a layer outside 0..L-1) exits with status 2 and one stderr line naming the file.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

from assets.common.inputs import InputError, read_npz, read_text, run_cli
from assets.flowtracer.flow import Flow, middle_layers, one_hop, rollout, trace_flow

COLUMNS = ["position", "token", "h", "f", "tau", "one_hop", "rollout", "in_backbone"]


def load_inputs(npz_path: Path, tokens_path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(attn (L, H, T, T), question, answer, tokens); InputError naming the file on a missing key, a
    mismatched shape, non-finite or negative attention, or a bad tokens file."""
    data = read_npz(npz_path)
    missing = [key for key in ("attn", "question", "answer") if key not in data]
    if missing:
        raise InputError(f"{npz_path} lacks {', '.join(missing)} (it holds {', '.join(data) or 'nothing'})")
    attn, question, answer = (np.asarray(data[key]) for key in ("attn", "question", "answer"))
    if attn.ndim != 4 or attn.shape[-1] != attn.shape[-2]:
        raise InputError(f"{npz_path}: attn must be (L, H, T, T), got shape {attn.shape}")
    if not np.issubdtype(attn.dtype, np.number) or not np.isfinite(attn).all() or (attn < 0).any():
        raise InputError(f"{npz_path}: attn must hold finite probabilities ≥ 0 (found NaN, inf, negative or "
                         f"non-numeric values, dtype {attn.dtype})")
    for name, positions in (("question", question), ("answer", answer)):
        if positions.ndim != 1 or (positions.size and not np.issubdtype(positions.dtype, np.integer)):
            raise InputError(f"{npz_path}: {name} must be a 1-D integer index array, got {positions.dtype} "
                             f"{positions.shape}")
    tokens = read_text(tokens_path).split("\n")
    if tokens and tokens[-1] == "":
        tokens = tokens[:-1]                                            # the final newline
    T = attn.shape[-1]
    if len(tokens) != T:
        raise InputError(f"{tokens_path} has {len(tokens)} tokens (lines) but the attention covers T={T}")
    return attn, question, answer, tokens


def credit_rows(flow: Flow, attn: np.ndarray, answer: np.ndarray, tokens: list[str]) -> list[dict]:
    """One row per token: the COLUMNS (rollout over all layers; in_backbone = endpoint of a backbone edge)."""
    hop = one_hop(flow.W, answer).numpy()
    roll = rollout(attn, answer).numpy()
    on_backbone = {node for i, k, _ in flow.backbone for node in (i, k)}
    return [{"position": t, "token": token, "h": float(flow.h[t]), "f": float(flow.f[t]),
             "tau": float(flow.tau[t]), "one_hop": float(hop[t]), "rollout": float(roll[t]),
             "in_backbone": int(t in on_backbone)} for t, token in enumerate(tokens)]


def write_csv(path: Path, columns: list[str], rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def plot_credit(path: Path, tokens: list[str], tau: np.ndarray, per_line: int = 16) -> None:
    """The tokens as text, wrapped per_line to a row, each on a background coloured by τ / max τ."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scale = float(tau.max()) or 1.0
    cmap = plt.get_cmap("YlOrRd")
    n_rows = (len(tokens) + per_line - 1) // per_line
    fig, ax = plt.subplots(figsize=(0.7 * per_line, 0.45 * n_rows + 0.8))
    for t, token in enumerate(tokens):
        row, col = divmod(t, per_line)
        level = float(tau[t]) / scale
        ax.text(col + 0.5, n_rows - row - 0.5, token.strip() or "·", ha="center", va="center", family="monospace",
                fontsize=9, parse_math=False, color="white" if level > 0.6 else "black",
                bbox={"facecolor": cmap(level), "edgecolor": "none", "boxstyle": "round,pad=0.25"})
    ax.set_xlim(0, per_line)
    ax.set_ylim(0, n_rows)
    ax.axis("off")
    mappable = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, scale))
    fig.colorbar(mappable, ax=ax, orientation="horizontal", fraction=0.05, pad=0.02, label="throughput τ")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def report(npz_path: Path, tokens_path: Path, layers: list[int] | None, out: Path) -> Flow:
    """Runs trace_flow and writes the three files under out; returns the Flow."""
    attn, question, answer, tokens = load_inputs(npz_path, tokens_path)
    layers = middle_layers(attn.shape[0]) if layers is None else layers
    flow = trace_flow(attn, question, answer, layers)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "token_credit.csv", COLUMNS, credit_rows(flow, attn, answer, tokens))
    write_csv(out / "backbone.csv", ["i", "k", "token_i", "token_k", "flow"],
              [{"i": i, "k": k, "token_i": tokens[i], "token_k": tokens[k], "flow": flow_ik}
               for i, k, flow_ik in flow.backbone])
    plot_credit(out / "credit.png", tokens, flow.tau.numpy())
    return flow


@run_cli
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assets.flowtracer.cli", description=__doc__.split("\n")[0])
    parser.add_argument("--npz", type=Path, required=True, help="attn (L, H, T, T), question, answer")
    parser.add_argument("--tokens", type=Path, required=True, help="one token per line (T lines)")
    parser.add_argument("--layers", type=int, nargs="+", default=None, help="layers averaged (default: middle third)")
    parser.add_argument("--out", type=Path, default=Path("flowtracer_out"), help="output directory")
    args = parser.parse_args(argv)
    try:
        flow = report(args.npz, args.tokens, args.layers, args.out)
    except ValueError as error:          # trace_flow: positions or layers that do not fit the attention
        raise InputError(f"{args.npz}: {error}") from None
    print(f"wrote {args.out}/token_credit.csv, backbone.csv, credit.png: {len(flow.backbone)} backbone edges "
          f"carry {flow.backbone_fraction:.1%} of the flow; conservation error {flow.conservation_error:.1e}, "
          f"absorbed mass {flow.absorbed_mass:.6f}, {flow.n_dead} dead tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
