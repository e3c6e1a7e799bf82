"""FlowTracer run parameters (params.yaml `flowtracer`), typed and frozen — no Dagster import.

Methods × seeds are table columns and checkpoint-name parts (no partitions). The SFT step count
is not a parameter: it is calibrated per seed (the first snapshot whose greedy validation
accuracy is in `sft.band`). With ALiBi positions the accuracy jumps from ~0.3 to ~0.9 within
1,000 steps, at a step that differs by seed (NOTES.md), so one seed's count would put the
others outside the band.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# The GRPO credit rules compared (method.CREDIT_RULES): γ = 1.5 on the top 40 % of response
# tokens by the rule's score, 1 elsewhere; "uniform" is plain GRPO.
METHODS = ("flowtracer", "uniform", "random", "attention", "entropy", "bottom")


@dataclass(frozen=True)
class DataParams:
    train: int                      # SFT problems
    val: int                        # calibration (greedy accuracy every snapshot)
    test: int                       # checkpoint gate, masking, AUROC
    rl: int                         # GRPO prompts
    rl_eval: int                    # held-out accuracy during GRPO
    min_ops: int                    # RegTrace: ops per problem; ArithChain: chain depth (of train; see held_out_ops)
    max_ops: int
    task: Literal["regtrace", "arithchain"] = "regtrace"   # tasks.TASKS
    held_out_ops: tuple[int, int] | None = None   # ArithChain: val, test, rl_eval depth (rl spans all); None: train's
    distractors: tuple[int, int] = (1, 3)          # ArithChain: distractor steps per problem


@dataclass(frozen=True)
class ModelParams:
    n_layers: int
    d_model: int
    n_heads: int
    context: int
    tie_embeddings: bool            # False: tied embeddings never learned to read a digit (NOTES.md)
    positional: str                 # "alibi": the only encoding that got past the 0.2–0.34 plateau (NOTES.md)


@dataclass(frozen=True)
class SFTParams:
    max_steps: int                  # calibration gives up (gate red) after this many steps
    snapshot_every: int             # calibration snapshot spacing (the 50)
    batch_size: int
    lr: float
    warmup: int                     # linear lr warm-up steps
    decay: int                      # cosine lr decay to 0.1 × lr over these steps (0: constant)
    curriculum: int                 # the first steps train on min_ops problems only (0: off)
    band: tuple[float, float]       # calibrated validation accuracy band (gate on test accuracy too)
    stable: int                     # the band must hold at this many consecutive snapshots (1: the rule)
    val_prompts: int                # validation prompts decoded at each snapshot
    beta2: float = 0.999            # AdamW β2 (0.98 tried: no budget gain on the pipeline's seeds; NOTES.md)
    answer_weight: float = 1.0      # weight of the answer digit's target in the loss (1: plain mean)
    answer_weight_loss: float = 0.0  # ... from the first snapshot with mean loss under this (0: from the start)


@dataclass(frozen=True)
class FlowParams:
    layers: tuple[int, ...]         # middle layers whose head-mean attention forms W
    all_layer_bands: tuple[tuple[int, ...], ...]   # bands compared in middle_layers
    top_fraction: float             # T_high = top 40 % of response tokens
    gamma: float                    # γ_flow
    drop_bos: bool                  # drop the <bos> sink column from W
    log_space: bool


@dataclass(frozen=True)
class GRPOParams:
    steps: int
    prompts_per_step: int
    group_size: int                 # G
    temperature: float
    clip: float                     # PPO ε
    lr: float
    eval_every: int                 # held-out greedy accuracy every this many steps (and at 0)


@dataclass(frozen=True)
class AnalysisParams:
    mask_fraction: float            # share of trace tokens masked in the causal check
    prompts: int                    # test prompts analysed per seed (masking, AUROC, hubs)


@dataclass(frozen=True)
class RLAblation:
    """One more flowtracer GRPO run per seed with the credit share or the W layers changed: the
    paper's "40 % beats 20 % and 60 %" and "middle layers beat early, late or all" ablations.
    Its runs are named `flowtracer-<name>` in the tables and checkpoints."""

    name: str
    fraction: float | None = None               # top share of response tokens (None: flow.top_fraction)
    layers: tuple[int, ...] | None = None       # layers of W (None: flow.layers)

    @property
    def method(self) -> str:
        return f"flowtracer-{self.name}"

    def credit(self, fraction: float, layers: tuple[int, ...]) -> tuple[float, tuple[int, ...]]:
        """(share, layers) this run uses, given the profile's flow.top_fraction and flow.layers."""
        return (fraction if self.fraction is None else self.fraction,
                tuple(layers if self.layers is None else self.layers))


@dataclass(frozen=True)
class FlowtracerParams:
    data: DataParams
    model: ModelParams
    sft: SFTParams
    flow: FlowParams
    grpo: GRPOParams
    analysis: AnalysisParams
    methods: tuple[str, ...]
    seeds: tuple[int, ...]
    workers: int
    bootstrap: int                  # bootstrap resamples of the claims' CIs
    threads: int = 1                # torch threads per run
    rl_ablations: tuple[RLAblation, ...] = ()   # extra flowtracer runs (gpu profile)

    @property
    def run_methods(self) -> tuple[str, ...]:
        """Every GRPO run name per seed: the compared methods, then the ablations."""
        return (*self.methods, *(a.method for a in self.rl_ablations))

    def __post_init__(self):
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; known: {METHODS}")
        if "flowtracer" not in self.methods or "uniform" not in self.methods:
            raise ValueError("methods must include flowtracer and uniform (the claims compare them)")
        names = [a.name for a in self.rl_ablations]
        if len(set(names)) != len(names) or any(not n or "-" in n or "_" in n for n in names):
            raise ValueError(f"rl_ablations need distinct names without '-' or '_', got {names}")
        for a in self.rl_ablations:
            if a.fraction is not None and not 0 < a.fraction <= 1:
                raise ValueError(f"rl_ablations {a.name}: fraction must be in (0, 1], got {a.fraction}")
            if a.layers is not None and (not a.layers or any(not 0 <= i < self.model.n_layers for i in a.layers)):
                raise ValueError(f"rl_ablations {a.name}: layers must be a non-empty subset of "
                                 f"0..{self.model.n_layers - 1}, got {a.layers}")
        if self.data.task == "regtrace" and self.data.held_out_ops is not None:
            raise ValueError("data.held_out_ops is ArithChain's (task: arithchain); RegTrace draws every split "
                             "from min_ops–max_ops")
        if self.sft.answer_weight <= 0 or self.sft.answer_weight_loss < 0:
            raise ValueError(f"sft.answer_weight must be > 0 and sft.answer_weight_loss ≥ 0, got "
                             f"{self.sft.answer_weight} and {self.sft.answer_weight_loss}")
        low, high = self.sft.band
        if not 0 <= low <= high <= 1:
            raise ValueError(f"sft.band must satisfy 0 ≤ low ≤ high ≤ 1, got {self.sft.band}")
