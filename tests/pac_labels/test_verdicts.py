"""Each counted claim's verdict from constructed measurements (no pipeline run): a holds case and a
refuted or inconclusive case per claim; an absent input and a failed premise give inconclusive."""
import numpy as np
import pandas as pd
import pytest

from assets.pac_labels import benchmark as B

EPS = ALPHA = 0.05
N = 200


def _trials(dataset, model, ci="wsr", method="pac", *, violations=0, save=0.5, cost=0.5, sd=0.01, seed=0, n=N):
    rng = np.random.default_rng(seed)
    error = np.full(n, 0.02)
    error[:violations] = 0.08
    return pd.DataFrame({"dataset_id": dataset, "model": model, "ci": ci, "method": method, "trial": np.arange(n),
                         "error": error, "save": save + sd * rng.standard_normal(n),
                         "cost": cost + sd * rng.standard_normal(n), "n_bought": 0.0})


def _fixed(dataset, model, ci="wsr", ai_error=0.2):
    return pd.concat([_trials(dataset, model, ci, "ai_only", n=1).assign(error=ai_error),
                      _trials(dataset, model, ci, "naive", n=1)])


def _outcomes(**over):
    """digits/logreg, synthetic_cls/mlp and the router's dataset with two single models; keyword
    overrides replace a partition's PAC rows: name → kwargs of _trials."""
    spec = {"logreg": ("digits", "logreg", {"save": 0.6, "cost": 0.40}),
            "gnb": ("digits", "gnb", {"save": 0.3, "cost": 0.70}),
            "router": ("digits", "router", {"save": 0.6, "cost": 0.30}),
            "mlp": ("synthetic_cls", "mlp", {"save": 0.3}),
            "plugin_logreg": ("digits", "logreg", {"violations": 60}),
            "plugin_mlp": ("synthetic_cls", "mlp", {"violations": 60})}
    frames = []
    for name, (dataset, model, kw) in spec.items():
        kw = {**kw, **over.get(name, {})}
        method = "plugin" if name.startswith("plugin_") else "pac"
        frames.append(_trials(dataset, model, method=method, seed=len(frames), **kw))
    frames += [_fixed("digits", "logreg"), _fixed("synthetic_cls", "mlp")]
    return pd.concat(frames, ignore_index=True)


def _split(errors):
    return pd.DataFrame({"dataset_id": "digits", "model": "gnb", "split_seed": np.arange(len(errors)),
                         "naive_error": errors, "naive_save": 0.5, "ai_only_error": 0.2})


def _claims(outcomes=None, split=None, status=None):
    outcomes = _outcomes() if outcomes is None else outcomes
    summary = B.summarize(outcomes, EPS, ALPHA)
    split = _split(np.full(10, 0.13)) if split is None else split
    claims = B.evaluate_claims(summary, split, EPS, ALPHA, status or {}, outcomes=outcomes)
    return {c.claim_id: c for c in claims}


def test_the_constructed_good_run_holds_every_measured_claim():
    c = _claims()
    for cid in ("violation_control", "naive_fails_overconfident", "plugin_violates", "budget_save", "router_cost"):
        assert c[cid].verdict == "holds", (cid, c[cid].detail)
    assert c["router_ablation"].kind == "observation"


@pytest.mark.parametrize("violations, expected", [(40, "refuted"), (14, "inconclusive"), (3, "holds")])
def test_violation_control_is_a_clopper_pearson_interval_against_alpha(violations, expected):
    # 14/200 = 0.07 passed the old point rule (≤ 0.08); its interval [0.043, 0.107] decides nothing
    c = _claims(_outcomes(gnb={"violations": violations}))["violation_control"]
    assert c.verdict == expected, c.detail


def test_absent_paper_csv_is_not_evaluated_never_refuted(tmp_path):
    from types import SimpleNamespace

    from assets.pac_labels import data

    files = {name: SimpleNamespace(file=f"{name}.csv") for name in B.PAPER_ANCHORS}
    status = data.paper_status(tmp_path / "absent", files)     # a clone without ../shared
    c = _claims(status=status)
    for name in B.PAPER_ANCHORS:
        claim = c[f"paper_{name}"]
        assert claim.verdict == "inconclusive" and claim.measured_value.startswith("not evaluated")
        assert "input present" in claim.premise and "FAILED" in claim.premise
        assert f"{name}.csv not found" in claim.measured_value


def _with_stance(**kw):
    out = _outcomes()
    return pd.concat([out, _trials("stance", "gpt4o", **kw)], ignore_index=True)


def test_paper_csv_claim_judges_the_violation_rate_and_the_save_band():
    assert _claims(_with_stance(save=0.279, sd=0.03))["paper_stance"].verdict == "holds"
    # the save's CI lies above 27.9 % + 5 points
    assert _claims(_with_stance(save=0.40))["paper_stance"].verdict == "refuted"
    # the save straddles the band's edge: neither inside nor outside
    assert _claims(_with_stance(save=0.329, sd=0.03))["paper_stance"].verdict == "inconclusive"
    # the guarantee fails on the CSV
    assert _claims(_with_stance(save=0.279, violations=40))["paper_stance"].verdict == "refuted"


@pytest.mark.parametrize("errors, expected", [([0.13] * 10, "holds"), ([0.13] * 2 + [0.01] * 8, "inconclusive"),
                                              ([0.01] * 10, "refuted")])
def test_naive_claim_is_a_proportion_interval_over_split_seeds(errors, expected):
    assert _claims(split=_split(np.array(errors)))["naive_fails_overconfident"].verdict == expected


@pytest.mark.parametrize("violations, expected", [(60, "holds"), (20, "refuted"), (40, "inconclusive")])
def test_plugin_claim_is_a_proportion_interval_of_the_pooled_count(violations, expected):
    out = _outcomes(plugin_logreg={"violations": violations}, plugin_mlp={"violations": violations})
    assert _claims(out)["plugin_violates"].verdict == expected


def test_plugin_claim_without_non_trivial_partitions_is_not_evaluated():
    out = _outcomes()
    out.loc[out["method"] == "ai_only", "error"] = 0.01
    c = _claims(out)["plugin_violates"]
    assert c.verdict == "inconclusive" and "FAILED" in c.premise


@pytest.mark.parametrize("save, sd, expected", [(0.3, 0.01, "holds"), (0.05, 0.01, "refuted"),
                                                 (0.10, 0.05, "inconclusive")])
def test_budget_save_is_a_bound_on_the_mean_save(save, sd, expected):
    assert _claims(_outcomes(mlp={"save": save, "sd": sd}))["budget_save"].verdict == expected


def test_router_cost_refuted_when_dearer_and_inconclusive_when_its_guarantee_fails():
    assert _claims(_outcomes(router={"cost": 0.5}))["router_cost"].verdict == "refuted"
    c = _claims(_outcomes(router={"violations": 60}))["router_cost"]
    assert c.verdict == "inconclusive" and "guarantee is not refuted" in c.premise and "FAILED" in c.premise
