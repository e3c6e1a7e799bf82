"""dispat run parameters (params.yaml `dispat`), typed and frozen — no Dagster import.

Units: steps are AdamW steps; batch sizes are rows per step; learning rates per step;
alpha is the target false-positive rate; NLL in nats.
"""
from __future__ import annotations

from dataclasses import dataclass

from assets.common.params import ParamsError
from assets.dispat.data import DATASETS
from assets.dispat.method import F_NAMES


@dataclass(frozen=True)
class Splits:
    """Rows per split (sklearn tables with fewer normal rows are scaled down pro rata); the
    test split holds `anomaly_fraction` anomalies."""

    train: int
    val: int
    test_normal: int
    anomaly_fraction: float


@dataclass(frozen=True)
class Serialisation:
    vocab_size: int                 # BPE target (fewer when the values are few)
    max_words: int                  # text truncation
    significant: int                # numeric precision: significant digits at the column's median scale
    max_decimals: int


@dataclass(frozen=True)
class Model:
    d_model: int
    n_heads: int
    n_layers: int
    context: int                    # ≤ 96 tokens per row at cpu


@dataclass(frozen=True)
class Train:
    """SFT θ0 (AnoLLM): `sft_steps` at `lr`; continuation (self-play and the compute-matched
    control) at `continue_lr`. grad_clip = AnoLLM's max_grad_norm."""

    sft_steps: int
    batch_size: int
    lr: float
    continue_lr: float
    warmup: int
    grad_clip: float
    weight_decay: float


@dataclass(frozen=True)
class SelfPlay:
    """T rounds × K steps of L_f + γ·SFT; each step: `batch_size` data rows + `batch_size`
    samples of θt. n_gen = 0 → |train| samples per round. A round is kept only if the
    validation NLL rises by ≤ max_val_rise (relative). renormalise: the log-ratio r = q_θ/q_θt
    uses log-probabilities renormalised over the constrained decoder's allowed set at each value
    token (the density of the distribution the samples come from); False = the unconstrained
    p_θ/p_θt (an ablation: its sample term is biased, see lm.train_self_play_round)."""

    f: str
    beta: float
    gamma: float
    rounds: int
    steps: int
    n_gen: int
    max_val_rise: float
    renormalise: bool = True


@dataclass(frozen=True)
class Variants:
    """Extra self-play runs with other f (report-only), on these datasets × seeds."""

    fs: tuple[str, ...]
    datasets: tuple[str, ...]
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class RenormAblation:
    """Issue 48's ablation (the report-only asset renorm_ablation): on these datasets × seeds (those
    of the run's cells), the first `rounds` self-play rounds (1 = round 0 only, from θ0 on the run's
    round-0 pseudo-anomalies) with each objective in `arms`, the run's f, β, γ, K, keep rule and
    seeds. Arms: "unconstrained" (r = p_θ/p_θt while the samples come from the constrained decoder),
    "no_contrast" (renormalised, round 0's samples replaced by train rows under fresh column orders:
    the f-term's expected gradient at θt is 0), "renormalised". The run's own objective (renormalised
    unless self_play.renormalise is off) is its policy_dispat rows (the same seeds give the same
    rounds), never recomputed: an arm equal to it is not run again."""

    datasets: tuple[str, ...]
    seeds: tuple[int, ...]
    rounds: int
    arms: tuple[str, ...]


ABLATION_ARMS = ("renormalised", "unconstrained", "no_contrast")


@dataclass(frozen=True)
class Critic:
    """Option B, the explicit critic (assets/dispat/critic.py): the extra method `dispat_critic`
    (default f, every cell), report-only. Off unless `enabled` (only the gpu profile sets it; the
    key is absent from base/smoke/cpu so their params hash, and every file they write, stay as
    they were). Per round: a fresh MLP (`hidden` units, 2 layers) on the frozen θt's hidden
    states, `steps` AdamW steps at `lr` on `batch` real + `batch` generated rows; then K policy
    steps mixing the real-row (importance-weighted, share `real_share`) and generated-row
    (penalty) policy-gradient estimators."""

    enabled: bool = False
    hidden: int = 256
    steps: int = 300
    batch: int = 128
    lr: float = 0.001
    weight_decay: float = 0.01
    real_share: float = 0.5


@dataclass(frozen=True)
class Baselines:
    epochs: int                     # AutoEncoder / DeepSVDD
    text_features: int             # hashed bag-of-words buckets for text columns


@dataclass(frozen=True)
class Gates:
    """The issue's blocking-check thresholds (the same at every profile)."""

    min_parse_rate: float
    max_train_duplicates: float
    fpr_tolerance: float
    anomaly_ratio: tuple[float, float]


@dataclass(frozen=True)
class DispatParams:
    datasets: tuple[str, ...]
    seeds: tuple[int, ...]
    splits: Splits
    serialisation: Serialisation
    model: Model
    train: Train
    self_play: SelfPlay
    variants: Variants
    n_permutations: int             # AnoLLM score: column orders averaged at test
    alpha: float
    c2st_rows: int                  # generated rows per C2ST (≤ |val|)
    baselines: Baselines
    gates: Gates
    bootstrap: int                  # paired bootstrap replicates over test rows
    bench_rows: int                 # rows in the speed benchmark
    workers: int
    torch_threads: int
    renorm_ablation: RenormAblation
    critic: Critic = Critic()

    def __post_init__(self):
        unknown = sorted(set(self.datasets) - set(DATASETS))
        if unknown:
            raise ParamsError(f"unknown datasets {unknown}; known: {list(DATASETS)}")
        for f in (self.self_play.f, *self.variants.fs):
            if f not in F_NAMES:
                raise ParamsError(f"unknown f {f!r}; known: {list(F_NAMES)}")
        if not 0 < self.alpha < 1:
            raise ParamsError(f"alpha must be in (0, 1), got {self.alpha}")
        if not 0 < self.splits.anomaly_fraction < 1:
            raise ParamsError("splits.anomaly_fraction must be in (0, 1)")
        if not 0 <= self.critic.real_share <= 1:
            raise ParamsError(f"critic.real_share must be in [0, 1], got {self.critic.real_share}")
        a = self.renorm_ablation
        unknown_arms = sorted(set(a.arms) - set(ABLATION_ARMS))
        if unknown_arms:
            raise ParamsError(f"unknown renorm_ablation arms {unknown_arms}; known: {list(ABLATION_ARMS)}")
        if not 1 <= a.rounds <= self.self_play.rounds:
            raise ParamsError(f"renorm_ablation.rounds must be in [1, self_play.rounds = {self.self_play.rounds}] "
                              f"(its renormalised arm is the run's rounds), got {a.rounds}")
        if self.model.d_model % self.model.n_heads:
            raise ParamsError("model.d_model must be divisible by model.n_heads")

    @property
    def continuation_steps(self) -> int:
        """T·K: the compute-matched control's extra SFT steps."""
        return self.self_play.rounds * self.self_play.steps
