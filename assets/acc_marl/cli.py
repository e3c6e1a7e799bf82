"""Bring your own layout and tasks:

    python -m assets.acc_marl.cli --layout my.txt --dfas tasks.json --checkpoint PATH [--episodes 100]

my.txt: a layout in the text format of assets/acc_marl/layouts.py (rows split by `|` or newlines).
tasks.json: one DFA per agent, a list of {"states": k, "accepting": [state, ...], "transitions":
{"state": {"token": next}}} (start state 0; a missing transition is a self-loop) or the string
"trivial". Prints JSON: the value-based assignment (which agent gets which DFA), success and mean
length over the episodes under random (given order) and value assignment. Bad input (--episodes
or --max-len < 1; a missing, empty, non-UTF-8 or malformed layout, tasks or checkpoint file; NaN,
duplicated keys; tasks that cannot be played on the layout) exits with status 2 and one stderr
line naming the file.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

from assets.acc_marl import dfa as dfa_mod
from assets.acc_marl import layouts as lay_mod
from assets.common.inputs import InputError, check_range, read_bytes, read_json, read_text, run_cli


class TaskError(ValueError):
    """Tasks that cannot be played on the layout."""


def parse_dfa(spec, layout: lay_mod.Layout, index: int) -> tuple[np.ndarray, np.ndarray]:
    if spec == "trivial":
        return dfa_mod.trivial()
    try:
        k = int(spec["states"])
        trans = np.tile(np.arange(k)[:, None], (1, dfa_mod.N_TOKENS))
        accept = np.zeros(k, dtype=bool)
        accept[[int(s) for s in spec.get("accepting", [])]] = True
        moves = spec.get("transitions", {})
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise TaskError(f"DFA {index}: malformed ({err!r}); expected states, accepting, transitions") from err
    present = layout.tokens_present()
    for s, row in moves.items():
        for tok, nxt in row.items():
            tok, s_i, nxt = int(tok), int(s), int(nxt)
            if not 0 <= tok < dfa_mod.N_TOKENS:
                raise TaskError(f"DFA {index}: token {tok} is outside 0..{dfa_mod.N_TOKENS - 1}")
            if tok not in present:
                raise TaskError(f"DFA {index}: token {tok} is absent from the layout (present: {sorted(present)})")
            if not (0 <= s_i < k and 0 <= nxt < k):
                raise TaskError(f"DFA {index}: transition {s_i} --{tok}--> {nxt} leaves states 0..{k - 1}")
            trans[s_i, tok] = nxt
    t, a = dfa_mod.minimize(trans, accept)
    if dfa_mod.accepting_word(t, a, present) is None:
        raise TaskError(f"DFA {index}: unsatisfiable in the layout (no accepting word over its tokens)")
    return t, a


def load_tasks(path: Path, layout: lay_mod.Layout) -> list[tuple[np.ndarray, np.ndarray]]:
    specs = read_json(path)
    if not isinstance(specs, list) or len(specs) != layout.n_agents:
        got = len(specs) if isinstance(specs, list) else "not a list"
        raise TaskError(f"{layout.n_agents} agents need {layout.n_agents} DFAs, the tasks file has {got}")
    out = []
    for i, spec in enumerate(specs):
        try:
            out.append(parse_dfa(spec, layout, i))
        except TaskError:
            raise
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as err:
            raise TaskError(f"DFA {i}: malformed ({err!r}); expected states, accepting, transitions") from err
    return out


def run(layout_path: Path, tasks_path: Path, checkpoint: Path, episodes: int = 100, max_len: int = 100,
        seed: int = 0) -> dict:
    import torch

    from assets.acc_marl import model as model_mod
    from assets.acc_marl import ppo, runs
    from assets.acc_marl.env import PoolArrays, TeamEnv
    from resources.artifacts import load_state_dict

    try:
        layout = lay_mod.parse(read_text(layout_path), str(layout_path))
    except lay_mod.LayoutError as err:
        raise InputError(str(err)) from None
    try:
        tasks = load_tasks(tasks_path, layout)
    except TaskError as err:
        raise InputError(f"{tasks_path}: {err}") from None
    read_bytes(checkpoint)
    try:
        state, sidecar = load_state_dict(Path(checkpoint))
    except Exception as err:
        raise InputError(f"{checkpoint}: not a readable checkpoint ({type(err).__name__})") from None
    cfg = ppo.PPOConfig(**{k: v for k, v in (sidecar.get("config") or {}).items()
                           if k in ppo.PPOConfig.__dataclass_fields__})
    variant = sidecar.get("variant", "pbrs")
    torch.set_num_threads(1)
    net = runs.net_from_state(torch, state, layout, cfg, variant, sidecar.get("layout"))
    pool = dfa_mod.Pool()
    ids = np.array([pool.add(*t) for t in tasks], dtype=np.int64)
    trivial = pool.add(*dfa_mod.trivial())
    pool.close()
    arrays = PoolArrays(pool.next_id, np.array([len(t) for t in pool.trans]),
                        np.array([bool(a[0]) for a in pool.accept]), trivial, pool)
    enc = ppo.Encoded(torch, model_mod.dfa_graphs(pool), arrays.n_states)
    given = np.tile(ids, (episodes, 1))
    env = TeamEnv(layout, arrays, 1, max_len, 0.99, np.random.default_rng(seed))
    chosen, perm = ppo.assign(torch, net, env, enc, ids[None], variant == "gru")
    order = list(itertools.permutations(range(layout.n_agents)))[int(perm[0])]
    out = {"agents": layout.n_agents, "assignment": {f"agent {i}": f"DFA {order[i]}" for i in range(layout.n_agents)}}
    for name, batch in (("given", given), ("value", np.tile(chosen[0], (episodes, 1)))):
        res = ppo.rollout(torch, net, layout, arrays, enc, batch, max_len, seed, recurrent=variant == "gru")
        out[name] = {"success": float(res["success"].mean()), "mean_length": float(res["length"].mean()),
                     "episodes": episodes}
    return out


@run_cli
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m assets.acc_marl.cli", description=__doc__.split("\n\n")[0])
    ap.add_argument("--layout", required=True, type=Path)
    ap.add_argument("--dfas", required=True, type=Path)
    ap.add_argument("--checkpoint", required=True, type=Path)
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--max-len", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    check_range("--episodes", args.episodes, 1)
    check_range("--max-len", args.max_len, 1)
    try:
        result = run(args.layout, args.dfas, args.checkpoint, args.episodes, args.max_len, args.seed)
    except ValueError as err:      # e.g. a checkpoint of another layout size
        raise InputError(f"{args.checkpoint}: {err}") from None
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
