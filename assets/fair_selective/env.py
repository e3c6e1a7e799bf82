"""Environments of SELLF: specs, applicant pools and the resampling env — no Dagster import.

An environment is a finite state space: a state is (group g ∈ {0,1}, feature tuple) and the
success probability P(y = 1 | state) is a fixed table. The observation of a state is
[one-hot features, one-hot group] (float32, d = Σ feature cardinalities + 2), so a policy is
evaluated once per rollout on every state (one batched pass) and looked up per step.

- `lending`: the ml-fairness-gym DelayedImpact constants, 7 credit buckets; group 1 uses the
  yu2022_hard success probabilities; shares 0.7 / 0.3; cost c = 0.5; repay → bucket + 1,
  default → bucket − 1.
- `hiring` (our design): education (4 levels) × experience (5 levels) with group-dependent
  distributions and P(y | x, g) = σ(logit) with a group × experience term (so the additive
  logistic predictor is misspecified); success → experience + 1.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

LENDING_BUCKET_PROBS = ((0.0, 0.1, 0.1, 0.2, 0.3, 0.3, 0.0),     # group 0 (DelayedImpact)
                        (0.1, 0.1, 0.2, 0.3, 0.3, 0.0, 0.0))     # group 1
LENDING_REPAY = ((0.1, 0.2, 0.45, 0.6, 0.65, 0.7, 0.7),          # group 0 (DelayedImpact)
                 (0.1, 0.1, 0.25, 0.4, 0.75, 0.8, 0.8))          # group 1 (yu2022_hard)

# hiring: P(education | g), P(experience | g) and the logit of P(y | e, x, g). The group main
# effect is −1.4 (it was −0.6): at −0.6 the exact myopic TPR gap was only 0.183 and plain PPO's
# gap fell to 0.03–0.11 over seeds, so the env failed the premise; −1.4 is the one-knob
# change that brings the exact myopic gap (0.368) to lending's (0.348). Nothing else moved.
HIRING_EDUCATION = ((0.10, 0.30, 0.40, 0.20), (0.30, 0.35, 0.25, 0.10))
HIRING_EXPERIENCE = ((0.10, 0.20, 0.30, 0.25, 0.15), (0.30, 0.30, 0.20, 0.15, 0.05))
HIRING_LOGIT = {"intercept": -2.0, "education": 0.7, "experience": 0.35, "group": -1.4,
                "group_x_experience": 0.45}


@dataclass(frozen=True)
class EnvSpec:
    """A finite applicant environment.

    states: (S, 1 + F) int array — column 0 the group, then F feature levels.
    p_state: (S,) P(state | group) (sums to 1 within each group).
    p_success: (S,) P(y = 1 | state).
    shares: (2,) group shares of the pool. cardinalities: levels per feature.
    dynamic_feature / up_on / down_on: which feature moves after an accepted decision
    (+1 on success, −1 on failure when down_on_failure), clipped to its range.
    """

    name: str
    feature_names: tuple[str, ...]
    cardinalities: tuple[int, ...]
    states: np.ndarray
    p_state: np.ndarray
    p_success: np.ndarray
    shares: tuple[float, float]
    cost: float
    dynamic_feature: int
    down_on_failure: bool
    index: dict = field(default_factory=dict, compare=False)

    @property
    def n_states(self) -> int:
        return len(self.states)

    @property
    def obs_dim(self) -> int:
        return int(sum(self.cardinalities)) + 2

    def state_id(self, group: int, features: tuple[int, ...]) -> int:
        return self.index[(int(group), *map(int, features))]

    def observations(self) -> np.ndarray:
        """(S, obs_dim) float32: one-hot features then one-hot group, for every state."""
        return one_hot(self.states, self.cardinalities)

    def moved(self) -> tuple[np.ndarray, np.ndarray]:
        """(S,) state ids after success and after failure of an accepted applicant."""
        up, down = np.arange(self.n_states), np.arange(self.n_states)
        top = self.cardinalities[self.dynamic_feature] - 1
        for s, row in enumerate(self.states):
            g, feats = int(row[0]), list(row[1:])
            f = self.dynamic_feature
            hi = feats.copy()
            hi[f] = min(top, hi[f] + 1)
            up[s] = self.state_id(g, tuple(hi))
            if self.down_on_failure:
                lo = feats.copy()
                lo[f] = max(0, lo[f] - 1)
                down[s] = self.state_id(g, tuple(lo))
        return up, down

    def table(self) -> list[dict]:
        """Rows (group, state, features..., p_state, p_success) for the env_spec asset."""
        rows = []
        for s, row in enumerate(self.states):
            rows.append({"env": self.name, "state": s, "group": int(row[0]),
                         **{n: int(v) for n, v in zip(self.feature_names, row[1:])},
                         "p_state": float(self.p_state[s]), "p_success": float(self.p_success[s])})
        return rows


def one_hot(states: np.ndarray, cardinalities: tuple[int, ...]) -> np.ndarray:
    """(n, 1 + F) int states → (n, Σ cardinalities + 2) float32 [one-hot features, one-hot group]."""
    states = np.asarray(states)
    blocks = [np.eye(k, dtype=np.float32)[states[:, 1 + j]] for j, k in enumerate(cardinalities)]
    blocks.append(np.eye(2, dtype=np.float32)[states[:, 0]])
    return np.concatenate(blocks, axis=1)


def _build(name, feature_names, cardinalities, p_features, success, shares, cost, dynamic_feature, down):
    states, p_state, p_success = [], [], []
    for g in (0, 1):
        for feats in itertools.product(*[range(k) for k in cardinalities]):
            states.append((g, *feats))
            p_state.append(float(np.prod([p_features[j][g][v] for j, v in enumerate(feats)])))
            p_success.append(float(success(g, feats)))
    states = np.asarray(states, dtype=np.int64)
    index = {tuple(int(v) for v in row): i for i, row in enumerate(states)}
    return EnvSpec(name, tuple(feature_names), tuple(cardinalities), states, np.asarray(p_state),
                   np.asarray(p_success), (float(shares[0]), float(shares[1])), float(cost), dynamic_feature,
                   down, index)


def lending_spec(cost: float = 0.5, shares: tuple[float, float] = (0.7, 0.3)) -> EnvSpec:
    """DelayedImpact lending with the yu2022_hard group-1 success rates (7 buckets)."""
    return _build("lending", ("bucket",), (7,), [LENDING_BUCKET_PROBS],
                  lambda g, f: LENDING_REPAY[g][f[0]], shares, cost, 0, True)


def hiring_spec(cost: float = 0.5, shares: tuple[float, float] = (0.7, 0.3)) -> EnvSpec:
    """Our hiring design: education × experience, logistic P(y | x, g) with a g × experience term."""
    c = HIRING_LOGIT

    def success(g, f):
        e, x = f
        z = (c["intercept"] + c["education"] * e + c["experience"] * x + c["group"] * g
             + c["group_x_experience"] * g * x)
        return 1.0 / (1.0 + np.exp(-z))

    return _build("hiring", ("education", "experience"), (4, 5), [HIRING_EDUCATION, HIRING_EXPERIENCE],
                  success, shares, cost, 1, False)


SPECS = {"lending": lending_spec, "hiring": hiring_spec}


def env_spec(name: str, cost: float, shares: tuple[float, float]) -> EnvSpec:
    if name not in SPECS:
        raise ValueError(f"unknown env {name!r}; known: {sorted(SPECS)}")
    return SPECS[name](cost, shares)


def myopic_tpr_gap(spec: EnvSpec) -> float:
    """Exact TPR gap U_1 − U_0 of the myopic policy 1[p > c] at the spec's distribution."""
    tpr = []
    for g in (0, 1):
        m = spec.states[:, 0] == g
        pos = spec.p_state[m] * spec.p_success[m]
        tpr.append(float((pos * (spec.p_success[m] > spec.cost)).sum() / pos.sum()))
    return tpr[1] - tpr[0]


def sample_pool(spec: EnvSpec, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) state ids: group ~ shares, then the state ~ P(state | group)."""
    groups = rng.random(n) < spec.shares[1]
    out = np.empty(n, dtype=np.int64)
    for g in (0, 1):
        ids = np.flatnonzero(spec.states[:, 0] == g)
        m = groups == bool(g)
        out[m] = rng.choice(ids, size=int(m.sum()), p=spec.p_state[ids] / spec.p_state[ids].sum())
    return out


class ResamplingEnv:
    """A pool of N applicants; each step one is drawn uniformly, the agent accepts (1) or
    rejects (0); accept reveals y, adds a(y − c) to the resource and moves the applicant's
    state. Episodes end at T steps or when the resource ≤ 0.

    Labels come from a dedicated generator, drawn for every step whatever the action, so a
    run's random stream does not depend on what is revealed. `reveal(a, y)` is the only way
    agent code sees a label: None when a = 0. `poison_hidden=True` rewrites the hidden
    labels (a = 0) as 1 − y before anything else sees them (the leakage test: an agent that
    never reads hidden labels trains bit-identically).
    """

    def __init__(self, spec: EnvSpec, pool: np.ndarray, horizon: int, resource0: float, seed: int,
                 poison_hidden: bool = False):
        self.spec, self.pool0 = spec, np.asarray(pool, dtype=np.int64).copy()
        self.horizon, self.resource0 = int(horizon), float(resource0)
        self.rng_draw = np.random.default_rng([seed, 1])
        self.rng_label = np.random.default_rng([seed, 2])
        self.up, self.down = spec.moved()
        self.poison_hidden = poison_hidden
        self.reset()

    def reset(self) -> None:
        self.pool = self.pool0.copy()
        self.resource, self.t = self.resource0, 0

    def draw(self) -> tuple[int, int]:
        """(pool index, state id) of the next applicant."""
        i = int(self.rng_draw.integers(len(self.pool)))
        return i, int(self.pool[i])

    def step(self, i: int, action: int) -> tuple[float, int, bool]:
        """Apply `action` to pool member i: (reward, true label, episode done).

        The true label is for the evaluator and the oracle only; learners call `reveal`."""
        s = int(self.pool[i])
        y = int(self.rng_label.random() < self.spec.p_success[s])
        if action == 0 and self.poison_hidden:
            y = 1 - y
        reward = float(action) * (y - self.spec.cost)
        if action == 1:
            self.resource += reward
            self.pool[i] = self.up[s] if y == 1 else self.down[s]
        self.t += 1
        done = self.t >= self.horizon or self.resource <= 0
        return reward, y, done

    @staticmethod
    def reveal(action: int, y: int) -> int | None:
        """The selective label: y when accepted, None when rejected."""
        return int(y) if action == 1 else None

    def prefill_labels(self, states: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """True labels for a window prefill of (states, actions) (same label generator;
        hidden ones poisoned like `step`'s)."""
        y = (self.rng_label.random(len(states)) < self.spec.p_success[states]).astype(np.int64)
        if self.poison_hidden:
            y = np.where(np.asarray(actions) == 0, 1 - y, y)
        return y
