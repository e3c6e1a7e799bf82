"""assets.flowtracer.cli: the "bring your own attention" command writes the credit table, the backbone and
the picture, with the values of trace_flow, and refuses mismatched inputs with a clear message."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from assets.flowtracer.cli import COLUMNS, main
from assets.flowtracer.flow import one_hop, rollout, trace_flow

TOKENS = ["<bos>", "a", "=", "3", ";", "?", "a", "#", "3", "<eos>"]


def causal_attention(rng: np.random.Generator, L: int, H: int, T: int) -> np.ndarray:
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), rng.normal(size=(L, H, T, T)), -np.inf)
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (probs / probs.sum(axis=-1, keepdims=True)).astype(np.float32)


@pytest.fixture
def inputs(tmp_path):
    attn = causal_attention(np.random.default_rng(0), L=4, H=2, T=len(TOKENS))
    npz = tmp_path / "attn.npz"
    np.savez(npz, attn=attn, question=np.arange(6), answer=np.array([8]))
    tokens = tmp_path / "tokens.txt"
    tokens.write_text("\n".join(TOKENS) + "\n", encoding="utf-8")
    return attn, npz, tokens


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_cli_writes_credit_backbone_and_picture(inputs, tmp_path, capsys):
    attn, npz, tokens = inputs
    out = tmp_path / "out"
    assert main(["--npz", str(npz), "--tokens", str(tokens), "--layers", "1", "2", "--out", str(out)]) == 0
    assert "backbone edges" in capsys.readouterr().out
    flow = trace_flow(attn, np.arange(6), [8], [1, 2])

    rows = read_csv(out / "token_credit.csv")
    assert list(rows[0]) == COLUMNS and [r["token"] for r in rows] == TOKENS
    assert [int(r["position"]) for r in rows] == list(range(len(TOKENS)))
    for name, expected in (("h", flow.h), ("f", flow.f), ("tau", flow.tau), ("one_hop", one_hop(flow.W, [8])),
                           ("rollout", rollout(attn, [8]))):
        assert np.allclose([float(r[name]) for r in rows], expected.numpy(), rtol=1e-12, atol=1e-15), name
    assert float(rows[9]["tau"]) == 0 and float(rows[9]["h"]) == 0             # after the answer: dead
    assert sum(float(r["f"]) for r in rows if r["position"] == "8") == pytest.approx(1.0)

    edges = read_csv(out / "backbone.csv")
    assert [(int(e["i"]), int(e["k"])) for e in edges] == [(i, k) for i, k, _ in flow.backbone]
    assert all(e["token_i"] == TOKENS[int(e["i"])] and e["token_k"] == TOKENS[int(e["k"])] for e in edges)
    assert np.allclose([float(e["flow"]) for e in edges], [w for _, _, w in flow.backbone], rtol=1e-12)
    on_backbone = {node for i, k, _ in flow.backbone for node in (i, k)}
    assert {int(r["position"]) for r in rows if r["in_backbone"] == "1"} == on_backbone
    assert 8 in on_backbone

    png = (out / "credit.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000


def test_cli_defaults_to_the_middle_layers(inputs, tmp_path):
    attn, npz, tokens = inputs
    main(["--npz", str(npz), "--tokens", str(tokens), "--out", str(tmp_path / "d")])
    tau = [float(r["tau"]) for r in read_csv(tmp_path / "d" / "token_credit.csv")]
    assert np.allclose(tau, trace_flow(attn, np.arange(6), [8], [1, 2]).tau.numpy(), rtol=1e-12)


def test_cli_rejects_mismatched_inputs(inputs, tmp_path, capsys):
    attn, npz, tokens = inputs
    short = tmp_path / "short.txt"
    short.write_text("\n".join(TOKENS[:-1]), encoding="utf-8")
    assert main(["--npz", str(npz), "--tokens", str(short), "--out", str(tmp_path / "x")]) == 2
    assert "9 tokens (lines) but the attention covers T=10" in capsys.readouterr().err

    partial = tmp_path / "partial.npz"
    np.savez(partial, attn=attn, question=np.arange(6))
    assert main(["--npz", str(partial), "--tokens", str(tokens), "--out", str(tmp_path / "x")]) == 2
    assert "lacks answer" in capsys.readouterr().err

    backwards = tmp_path / "backwards.npz"
    np.savez(backwards, attn=attn, question=np.arange(6), answer=np.array([3]))
    assert main(["--npz", str(backwards), "--tokens", str(tokens), "--out", str(tmp_path / "x")]) == 2
    assert "answer before question" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
