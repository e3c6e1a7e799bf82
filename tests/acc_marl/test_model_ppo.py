"""Encoder, PPO and assignment: padding-invariant DFA embeddings, deterministic training,
value assignment = brute-force argmax of Σ V, the GRU baseline never sees progression,
and the gpu profile built and exercised at tiny size."""
from __future__ import annotations

import dataclasses
import itertools
import zlib

import numpy as np
import pandas as pd
import pytest
import torch

from assets.acc_marl import dfa as D
from assets.acc_marl import layouts as L
from assets.acc_marl import model as M
from assets.acc_marl import ppo, runs
from assets.acc_marl.env import PoolArrays, TeamEnv
from assets.acc_marl.params import AccMarlParams
from assets.common.params import parse
from resources.profiles import deep_merge, load_params


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    pool = D.Pool()
    roots = np.array([pool.add(*D.sample(D.SamplerSpec("RAD", 3, 3), rng)) for _ in range(20)])
    big = [pool.add(*D.sample(D.SamplerSpec("RA", 5, 5), rng)) for _ in range(3)]
    trivial = pool.add(*D.trivial())
    pool.close()
    arrays = PoolArrays(pool.next_id, np.array([len(t) for t in pool.trans]),
                        np.array([bool(a[0]) for a in pool.accept]), trivial, pool)
    return {"pool": pool, "arrays": arrays, "roots": roots, "big": big, "graphs": M.dfa_graphs(pool)}


def test_embeddings_do_not_depend_on_padding(small):
    torch.manual_seed(0)
    net = M.build(torch, 17, 9, 9, 2)
    enc = ppo.Encoded(torch, small["graphs"], small["arrays"].n_states)
    ids = small["roots"][:5]
    with torch.no_grad():
        alone = enc.embed(net, ids[:, None])                    # padded to ≤ 3 states
        mixed = enc.embed(net, np.concatenate([ids, small["big"]])[:, None])[:5]   # padded to 5
    torch.testing.assert_close(alone, mixed, atol=1e-6, rtol=1e-5)



def test_embedding_memo_is_the_encoder_map_filled_lazily(small):
    """The rollouts' memo returns Encoded.embed's features, whatever order the ids arrive in,
    and encodes an id only once."""
    torch.manual_seed(0)
    net = M.build(torch, 17, 9, 9, 2)
    enc = ppo.Encoded(torch, small["graphs"], small["arrays"].n_states)
    memo = ppo.EmbeddingMemo(enc, net)
    first = np.stack([small["roots"][:4], small["roots"][4:8]], 1)            # (4, n=2)
    later = np.stack([small["roots"][2:6], np.array(small["big"] + [small["roots"][0]])], 1)
    got_first, got_later = memo(first), memo(later)
    assert got_first.shape == (4, 64) and got_later.shape == (4, 64)
    assert memo.have.sum() == len(np.unique(np.concatenate([first.ravel(), later.ravel()])))
    with torch.no_grad():
        torch.testing.assert_close(got_first, enc.embed(net, first), atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(got_later, enc.embed(net, later), atol=1e-6, rtol=1e-5)
    calls = []
    enc_embed = enc.embed
    enc.embed = lambda n, ids: calls.append(len(ids)) or enc_embed(n, ids)
    memo(later[::-1])
    assert calls == []                                                       # all cached: no encoder pass

def test_training_is_deterministic_and_logs_finite(small):
    cfg = ppo.PPOConfig(total_steps=64, n_envs=4, n_steps=16, epochs=1, minibatches=2, max_len=20)
    lay = L.parse(L.ROOMS_2)
    outs = [ppo.train(lay, small["arrays"], small["graphs"], small["roots"], cfg, v, 3) for v in ("pbrs", "pbrs")]
    for k, v in outs[0]["state"].items():
        torch.testing.assert_close(v, outs[1]["state"][k], atol=0, rtol=0)
    assert np.isfinite(pd.DataFrame(outs[0]["log"])[["entropy", "value_loss", "policy_loss"]].to_numpy()).all()
    gru = ppo.train(lay, small["arrays"], small["graphs"], small["roots"], cfg, "gru", 3)
    assert "gru_in.weight" in gru["state"]


def test_bf16_autocast_is_the_fp32_network_to_bfloat16_rounding(small):
    """precision="bf16" runs the same network: logits and values within bf16 rounding of fp32
    (the policy head's logits are ≈ 0.01 at init, values ≈ 1), a different precision is refused,
    and bf16 training is deterministic with a finite log and fp32 weights."""
    torch.manual_seed(0)
    lay = L.parse(L.ROOMS_2)
    net = M.build(torch, lay.n_channels, *lay.shape, lay.n_agents)
    enc = ppo.Encoded(torch, small["graphs"], small["arrays"].n_states)
    env = TeamEnv(lay, small["arrays"], 8, 20, 0.99, np.random.default_rng(1),
                  sample_ids=lambda r, e, n: small["roots"][r.integers(len(small["roots"]), size=(e, n))])
    env.reset()
    for _ in range(5):
        env.step(np.random.default_rng(2).integers(0, 5, size=(8, 2)))
    obs = env.observe()
    grid, agent, feats = ppo._policy_inputs(torch, obs, obs["dfa"], enc, net)
    with torch.no_grad():
        lo, vo = net(grid, agent, feats)
        with ppo.autocast(torch, "cpu", "bf16"):
            lb, vb = net(grid, agent, feats)
        with ppo.autocast(torch, "cpu", "fp32"):
            lf, vf = net(grid, agent, feats)
    assert lb.dtype == torch.bfloat16 and lf.dtype == torch.float32
    torch.testing.assert_close(lf, lo, atol=0, rtol=0)                     # fp32: no autocast at all
    scale = float(vo.abs().max())
    assert 0 < float((vb.float() - vo).abs().max()) <= 0.05 * scale
    assert float((lb.float() - lo).abs().max()) <= 0.05 * float(lo.abs().max())
    with pytest.raises(ValueError, match="precision"):
        ppo.PPOConfig(precision="fp16")
    cfg = ppo.PPOConfig(total_steps=64, n_envs=4, n_steps=16, epochs=1, minibatches=2, max_len=20, precision="bf16")
    for variant in ("pbrs", "gru"):
        a, b = (ppo.train(lay, small["arrays"], small["graphs"], small["roots"], cfg, variant, 3) for _ in range(2))
        for k, v in a["state"].items():
            assert v.dtype in (torch.float32, torch.int64), k
            torch.testing.assert_close(v, b["state"][k], atol=0, rtol=0)
        assert np.isfinite(pd.DataFrame(a["log"])[["entropy", "value_loss", "policy_loss"]].to_numpy()).all()


def test_value_assignment_is_the_argmax_of_the_team_value(small):
    torch.manual_seed(1)
    lay = L.parse(L.ROOMS_2)
    net = ppo.net_for(torch, lay, ppo.PPOConfig(), "pbrs")
    enc = ppo.Encoded(torch, small["graphs"], small["arrays"].n_states)
    tasks = runs.draw_tasks(np.random.default_rng(2), small["roots"], 16, 2, small["arrays"].trivial)
    env = TeamEnv(lay, small["arrays"], 16, 20, 0.99, np.random.default_rng(0))
    chosen, best = ppo.assign(torch, net, env, enc, tasks, False)
    for e in range(16):
        scores = []
        for perm in itertools.permutations(range(2)):
            t = tasks[e, list(perm)]
            obs = env.observe(lay.starts[None].copy(), t[None])
            grid, agent, feats = ppo._policy_inputs(torch, obs, obs["dfa"], enc, net)
            with torch.no_grad():
                scores.append(float(net(grid, agent, feats)[1].sum()))
        best_perm = list(itertools.permutations(range(2)))[int(np.argmax(scores))]
        assert chosen[e].tolist() == tasks[e, list(best_perm)].tolist()


def test_the_gru_baseline_only_sees_the_initial_dfas(small):
    lay = L.parse("@1.@.")
    pool = small["pool"]
    task = pool.add(*runs.reach_any([1]))
    pool.close()
    arrays = PoolArrays(pool.next_id, np.array([len(t) for t in pool.trans]),
                        np.array([bool(a[0]) for a in pool.accept]), small["arrays"].trivial, pool)
    env = TeamEnv(lay, arrays, 1, 10, 0.99, np.random.default_rng(0))
    env.reset(ids=np.array([[task, small["roots"][0]]]))
    env.step(np.array([[1, 4]]))
    assert env.ids[0, 0] != task and env.init_ids[0, 0] == task      # progressed vs initial


def test_gpu_profile_builds_and_trains_at_tiny_size():
    raw = deep_merge(load_params("acc_marl", "gpu"), {"pool": {"train": 5, "test": 2, "ood": 2},
                                                      "train": {"total_steps": 32, "n_envs": 2, "n_steps": 16}})
    p = parse(AccMarlParams, raw, "acc_marl.gpu")
    assert p.pool.max_size == 5 and p.pool.ood_max_size == 10 and p.train.n_steps == 16
    layouts = runs.layouts_table(p)
    p = dataclasses.replace(p, eval=dataclasses.replace(p.eval, samplers=("RAD",)))
    pool = runs.build_pool(p, layouts, lambda *k: np.random.default_rng([zlib.crc32(str(k).encode())]))
    assert pool.loc[pool["role"] == "ood", "n_states"].min() > 5
    job = runs.training_jobs(p, layouts, pool, lambda *k: 0)[0]
    out = runs.train_job(job)
    assert out["log"][-1]["steps"] == 32 and np.isfinite(out["log"][-1]["entropy"])

