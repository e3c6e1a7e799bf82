"""The paper registry: plain data, no Dagster import.

Adding a paper = its folder under assets/ + one line here. `jobs.run` checks its target
against this without building any definition; `jobs.definitions` imports each module's
`PAPER` (built with assets/common/paper.py) to assemble the code location.
"""
from __future__ import annotations

import importlib
from typing import Any

# slug -> the module exporting PAPER, in the order reports and the scorecard list them
PAPERS: dict[str, str] = {
    "oscs": "assets.oscs.definitions",
    "pac_labels": "assets.pac_labels.definitions",
    "brew": "assets.brew.definitions",
    "logit_distill": "assets.logit_distill.definitions",
    "spgcl": "assets.spgcl.definitions",
    "diffusion_w2": "assets.diffusion_w2.definitions",
    "viar": "assets.viar.definitions",
    "dream_mpc": "assets.dream_mpc.definitions",
    "vcot": "assets.vcot.definitions",
    "pfn_causal": "assets.pfn_causal.definitions",
    "hir": "assets.hir.definitions",
    "ts_layers": "assets.ts_layers.definitions",
    "fair_selective": "assets.fair_selective.definitions",
    "skill_recompose": "assets.skill_recompose.definitions",
    "dispat": "assets.dispat.definitions",
    "acc_marl": "assets.acc_marl.definitions",
    "lari": "assets.lari.definitions",
    "flowtracer": "assets.flowtracer.definitions",
    "limix": "assets.limix.definitions",
}

# one line per paper: what its reproduction tests (the README's scorecard)
TESTS: dict[str, str] = {
    "oscs": "OSCS: online selection of safe LLM outputs with FAR control",
    "pac_labels": "PAC labels: cheap labels with a certified error rate",
    "brew": "BREW: multi-bit text watermark with block-wise codewords",
    "logit_distill": "logit distance bounds representational similarity",
    "spgcl": "SPGCL: positive samples for graph contrastive learning",
    "diffusion_w2": "stepwise Wasserstein-2 error bounds for diffusion samplers",
    "viar": "VIAR: implicit (fixed-point) visual autoregressive models vs VAR",
    "dream_mpc": "Dream-MPC: gradient-based MPC in a learned latent world model",
    "vcot": "VCoT-Bench: verification chains of thought for Rust (Verus)",
    "pfn_causal": "PFNs for causal effects: pre-training vs fine-tuning (PWF / MSF)",
    "hir": "HiR: hindsight instruction replay for instruction-following RL",
    "ts_layers": "few-layer dominance in time-series foundation models",
    "fair_selective": "SELLF: long-term fairness under selective labels",
    "skill_recompose": "decompose-and-recompose skills for robot manipulation",
    "dispat": "DiSPaT: f-divergence self-play for tabular anomaly detection",
    "acc_marl": "ACC-MARL: automata-conditioned cooperative multi-agent RL",
    "lari": "LaRI: layered ray intersections from a single view",
    "flowtracer": "FlowTracer: attention information flow to target RL in LLMs",
    "limix": "LimiX-2M: RaBEL tokens and S→N→F blocks for tabular in-context learning",
}

# external inputs a paper reads when present (relative to the repository root, never
# committed); jobs.reproduce fingerprints them so a change of the files reruns the paper
INPUTS: dict[str, list[str]] = {
    "pac_labels": ["../shared/pac_labels"],
}


def load_paper(slug: str) -> Any:
    """The PaperDefinition of one registered paper (imports its module)."""
    if slug not in PAPERS:
        raise KeyError(f"unknown paper {slug!r}; registered: {', '.join(PAPERS)}")
    module = importlib.import_module(PAPERS[slug])
    if not hasattr(module, "PAPER"):
        raise AttributeError(f"{PAPERS[slug]} does not export PAPER (see the README, 'Adding a paper')")
    return module.PAPER


def load_papers() -> dict[str, Any]:
    return {slug: load_paper(slug) for slug in PAPERS}
