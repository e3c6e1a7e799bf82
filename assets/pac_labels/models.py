"""The "pre-trained AI models" of the generated partitions (pure: numpy + scikit-learn).

Each model is trained with scikit-learn on the train split, then exported as a state of plain
arrays (a torch-loadable state_dict with a JSON sidecar) and *predicted from that state* with
numpy, so the annotations come from the checkpoint and a reload reproduces them exactly.

    logreg        multinomial logistic regression          → softmax(X Wᵀ + b)
    gnb           Gaussian naive Bayes (overconfident)     → softmax(joint log-likelihood)
    mlp           a deliberately weak one-hidden-layer MLP → softmax(relu(X W1 + b1) W2 + b2)
    gb_ensemble   bootstrap ensemble of GradientBoosting regressors → mean, sd across members

Classifier output: (yhat (n,) class codes as float, confidence (n,) = max probability).
Regressor output:  (yhat (n,) ensemble mean, sd (n,) ensemble standard deviation);
confidence = exp(−sd) ∈ (0, 1], so the uncertainty 1 − confidence orders items by sd.
"""
from __future__ import annotations

import numpy as np

CLASSIFIERS = ("logreg", "gnb", "mlp")
REGRESSORS = ("gb_ensemble",)


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    expo = np.exp(shifted)
    return expo / expo.sum(axis=1, keepdims=True)


# ============================================================================ training
def train_model(kind: str, X: np.ndarray, y: np.ndarray, seed: int,
                options: dict | None = None) -> dict[str, np.ndarray]:
    """Fit one model on (X (n, d), y (n,)) and return its state (name → array)."""
    options = dict(options or {})
    if kind == "logreg":
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(C=float(options.get("C", 1.0)), max_iter=2000).fit(X, y)
        return {"classes": model.classes_.astype(float), "coef": model.coef_, "intercept": model.intercept_}
    if kind == "gnb":
        from sklearn.naive_bayes import GaussianNB

        model = GaussianNB().fit(X, y)
        return {"classes": model.classes_.astype(float), "theta": model.theta_, "var": model.var_,
                "class_log_prior": np.log(model.class_prior_)}
    if kind == "mlp":
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)   # the MLP is weak on purpose
            model = MLPClassifier(hidden_layer_sizes=(int(options.get("hidden", 16)),),
                                  max_iter=int(options.get("max_iter", 30)), random_state=seed,
                                  alpha=float(options.get("weight_decay", 1e-4))).fit(X, y)
        return {"classes": model.classes_.astype(float), "w1": model.coefs_[0], "b1": model.intercepts_[0],
                "w2": model.coefs_[1], "b2": model.intercepts_[1]}
    if kind == "gb_ensemble":
        return _train_gb_ensemble(X, y, seed, int(options.get("members", 5)),
                                  int(options.get("n_estimators", 100)), int(options.get("max_depth", 3)),
                                  float(options.get("learning_rate", 0.1)))
    raise ValueError(f"unknown model kind {kind!r}")


def _train_gb_ensemble(X, y, seed, members, n_estimators, max_depth, learning_rate) -> dict[str, np.ndarray]:
    """B GradientBoosting regressors, each on a bootstrap resample; trees packed as arrays.

    State: left/right/feature/threshold/value of shape (B, n_estimators, max_nodes), init (B,),
    learning_rate (1,). Leaves have left = right = −1.
    """
    from sklearn.ensemble import GradientBoostingRegressor

    rng = np.random.default_rng(seed)
    trees, inits = [], []
    for member in range(members):
        rows = rng.integers(0, len(y), size=len(y))
        gb = GradientBoostingRegressor(n_estimators=n_estimators, max_depth=max_depth,
                                       learning_rate=learning_rate, random_state=seed + member)
        gb.fit(X[rows], y[rows])
        inits.append(float(np.asarray(gb.init_.constant_).ravel()[0]))
        trees.append([est.tree_ for est in gb.estimators_[:, 0]])
    max_nodes = max(t.node_count for member in trees for t in member)
    shape = (members, n_estimators, max_nodes)
    left = np.full(shape, -1, dtype=np.int64)
    right = np.full(shape, -1, dtype=np.int64)
    feature = np.zeros(shape, dtype=np.int64)
    threshold = np.zeros(shape)
    value = np.zeros(shape)
    for b, member in enumerate(trees):
        for e, tree in enumerate(member):
            k = tree.node_count
            left[b, e, :k] = tree.children_left
            right[b, e, :k] = tree.children_right
            feature[b, e, :k] = np.maximum(tree.feature, 0)
            threshold[b, e, :k] = tree.threshold
            value[b, e, :k] = tree.value[:, 0, 0]
    return {"left": left, "right": right, "feature": feature, "threshold": threshold, "value": value,
            "init": np.asarray(inits), "learning_rate": np.asarray([learning_rate])}


# ============================================================================ prediction
def class_probabilities(kind: str, state: dict[str, np.ndarray], X: np.ndarray) -> np.ndarray:
    """(n, C) class probabilities of a classifier state; columns follow state["classes"]."""
    if kind == "logreg":
        return _softmax(X @ state["coef"].T + state["intercept"])
    if kind == "gnb":
        # log N(x | θ_c, var_c) summed over features + log prior, per class
        var = state["var"]
        log_det = -0.5 * np.sum(np.log(2.0 * np.pi * var), axis=1)
        diff = X[:, None, :] - state["theta"][None, :, :]
        joint = state["class_log_prior"] + log_det - 0.5 * np.sum(diff * diff / var[None], axis=2)
        return _softmax(joint)
    if kind == "mlp":
        hidden = np.maximum(X @ state["w1"] + state["b1"], 0.0)
        return _softmax(hidden @ state["w2"] + state["b2"])
    raise ValueError(f"{kind!r} is not a classifier")


def classify(kind: str, state: dict[str, np.ndarray], X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(yhat (n,) class codes, confidence (n,) = the top class probability)."""
    proba = class_probabilities(kind, state, X)
    top = proba.argmax(axis=1)
    return np.asarray(state["classes"], dtype=float)[top], proba[np.arange(len(top)), top]


def ensemble_members(state: dict[str, np.ndarray], X: np.ndarray) -> np.ndarray:
    """Each bootstrap member's prediction: (B, n)."""
    left, right, feature = state["left"], state["right"], state["feature"]
    threshold, value = state["threshold"], state["value"]
    B, E, _ = left.shape
    rate = float(np.asarray(state["learning_rate"]).ravel()[0])
    out = np.zeros((B, X.shape[0]))
    rows = np.arange(X.shape[0])
    for b in range(B):
        total = np.full(X.shape[0], float(state["init"][b]))
        for e in range(E):
            node = np.zeros(X.shape[0], dtype=np.int64)
            while True:
                internal = left[b, e, node] >= 0
                if not internal.any():
                    break
                go_left = X[rows, feature[b, e, node]] <= threshold[b, e, node]
                nxt = np.where(go_left, left[b, e, node], right[b, e, node])
                node = np.where(internal, nxt, node)
            total += rate * value[b, e, node]
        out[b] = total
    return out


def regress(state: dict[str, np.ndarray], X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(yhat (n,) ensemble mean, confidence (n,) = exp(−ensemble sd))."""
    members = ensemble_members(state, X)
    return members.mean(axis=0), np.exp(-members.std(axis=0))


def predict(kind: str, state: dict[str, np.ndarray], X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(yhat, confidence) for any model kind."""
    if kind in CLASSIFIERS:
        return classify(kind, state, X)
    if kind in REGRESSORS:
        return regress(state, X)
    raise ValueError(f"unknown model kind {kind!r}")
