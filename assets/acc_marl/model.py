"""Networks of ACC-MARL in plain torch: the GATv2 DFA encoder ("no-RAD", trained end to end),
the shared actor-critic, and the GRU baseline — no Dagster import.

Encoder input (pool arrays, `dfa_graphs`): per DFA id its padded transition table (K, T) and
labels; the graph has one node per state and an edge s → t carrying the multi-hot set of
tokens σ with δ(s, σ) = t. Node s attends over its successors (GATv2 scores
aᵀ LeakyReLU(W_l h_s + W_r h_t + W_e e_st), softmax over t), `iterations` rounds with shared
weights, h ← tanh(U [h₀, m]); the readout is the node of the current state (0 in canonical
form) → 32-d.

Actor-critic input per agent: agent id embedding (32), the egocentric grid (C, H, W) through
Conv 16 → 32 → 64 (2×2, valid, ReLU), flattened, and the DFA features of all agents own-first
(n × 32). task = MLP(256-tanh-256-tanh-32)[id, grid, dfa]; value = MLP(64-64-1)[id, grid,
task]; policy = MLP(64-64-64-5)[id, grid, task]. Orthogonal init.
"""
from __future__ import annotations

import math

import numpy as np


def dfa_graphs(pool, k_max: int | None = None) -> dict:
    """Padded arrays of a Pool: edges (N, K, K, T) float32 multi-hot, nodes (N, K, 3) float32
    [accepting, current, valid], mask (N, K) bool. Pad states have a self-loop (no NaN)."""
    n = len(pool)
    k = k_max or max(len(t) for t in pool.trans)
    T = pool.n_tokens
    edges = np.zeros((n, k, k, T), dtype=np.float32)
    nodes = np.zeros((n, k, 3), dtype=np.float32)
    for i, (t, a) in enumerate(zip(pool.trans, pool.accept)):
        s = len(t)
        edges[i, np.repeat(np.arange(s), T), t.ravel(), np.tile(np.arange(T), s)] = 1.0
        edges[i, np.arange(s, k), np.arange(s, k), 0] = 1.0
        nodes[i, :s, 0] = a
        nodes[i, 0, 1] = 1.0
        nodes[i, :s, 2] = 1.0
    return {"edges": edges, "nodes": nodes}


def build(torch, n_channels: int, height: int, width: int, n_agents: int, n_tokens: int = 10,
          iterations: int = 6, recurrent: bool = False, embed: int = 32, hidden: int = 64, heads: int = 4,
          gru: int = 128, conv: tuple[int, ...] = (16, 32, 64), task_hidden: int = 256):
    """The actor-critic (a torch Module): forward(grid (B, C, H, W), agent (B,), dfa_feats
    (B, n·32)[, h (B, 128)]) → logits (B, 5), value (B,)[, h']; `.encoder(edges, nodes)`
    → (N, 32) DFA embeddings."""
    nn = torch.nn

    def ortho(layer, gain):
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
        return layer

    def mlp(d_in, sizes, last_gain):
        layers = []
        for i, d in enumerate(sizes):
            last = i == len(sizes) - 1
            layers.append(ortho(nn.Linear(d_in, d), last_gain if last else math.sqrt(2)))
            if not last:
                layers.append(nn.Tanh())
            d_in = d
        return nn.Sequential(*layers)

    class GATv2Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads, self.dh = heads, hidden // heads
            self.inp = nn.Linear(3, hidden)
            self.wl = nn.Linear(hidden, hidden)
            self.wr = nn.Linear(hidden, hidden)
            self.we = nn.Linear(n_tokens, hidden, bias=False)
            self.att = nn.Parameter(torch.randn(heads, self.dh) / math.sqrt(self.dh))
            self.upd = nn.Linear(2 * hidden, hidden)
            self.out = nn.Linear(hidden, embed)

        def forward(self, edges, nodes):
            B, K = nodes.shape[:2]
            h0 = torch.tanh(self.inp(nodes))
            h = h0
            exists = edges.sum(-1) > 0                                   # (B, K, K)
            ee = self.we(edges).view(B, K, K, self.heads, self.dh)
            for _ in range(iterations):
                gl = self.wl(h).view(B, K, 1, self.heads, self.dh)
                gr = self.wr(h).view(B, 1, K, self.heads, self.dh)
                z = torch.nn.functional.leaky_relu(gl + gr + ee, 0.2)
                score = (z * self.att).sum(-1).masked_fill(~exists[..., None], float("-inf"))
                alpha = torch.softmax(score, dim=2)                      # over successors t
                msg = (alpha[..., None] * (gr + ee)).sum(2).reshape(B, K, -1)
                h = torch.tanh(self.upd(torch.cat([h0, msg], -1)))
            return self.out(h[:, 0])

    class ActorCritic(nn.Module):
        def __init__(self):
            super().__init__()
            self.recurrent = recurrent
            self.encoder = GATv2Encoder()
            self.agent_emb = nn.Embedding(n_agents, embed)
            chans, layers = n_channels, []
            for c in conv:
                layers += [ortho(nn.Conv2d(chans, c, 2), math.sqrt(2)), nn.ReLU()]
                chans = c
            self.conv = nn.Sequential(*layers, nn.Flatten())
            flat = chans * (height - len(conv)) * (width - len(conv))
            self.task = mlp(embed + flat + n_agents * embed, [task_hidden, task_hidden, embed], math.sqrt(2))
            head_in = embed + flat + embed
            if recurrent:                        # GRU(128): input projection batched over time
                self.gru_in = nn.Linear(head_in, 3 * gru)
                self.gru_h = nn.Linear(gru, 3 * gru)
                head_in = gru
            self.value = mlp(head_in, [hidden, hidden, 1], 1.0)
            self.policy = mlp(head_in, [hidden, hidden, hidden, 5], 0.01)

        def features(self, grid, agent, dfa_feats):
            a = self.agent_emb(agent)
            g = self.conv(grid)
            task = self.task(torch.cat([a, g, dfa_feats], -1))
            return torch.cat([a, g, task], -1)

        def gru_step(self, gi, h):
            """One GRU step from the projected input gi (B, 3·128) and h (B, 128)."""
            ir, iz, inn = gi.chunk(3, -1)
            hr, hz, hn = self.gru_h(h).chunk(3, -1)
            r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
            cand = torch.tanh(inn + r * hn)
            return (1 - z) * cand + z * h

        def forward(self, grid, agent, dfa_feats, h=None):
            x = self.features(grid, agent, dfa_feats)
            if self.recurrent:
                h = self.gru_step(self.gru_in(x), h)
                x = h
            out = self.policy(x), self.value(x).squeeze(-1)
            return (*out, h) if self.recurrent else out

    return ActorCritic()
