"""What each BREW asset computes, given parameters, seeds and a log function (pure numpy /
pandas; no Dagster).

`seed_for(*keys)` is `compute.seed_for("brew", *keys)` and `rng_for(*keys)` is
`compute.rng("brew", *keys)`; `log` is a logging function. Seeds, schemes, attacks and
methods are columns of the tables, not Dagster partitions.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from assets.brew import benchmark, data
from assets.brew import method as M
from assets.brew.bch import bits_to_message, make_code
from assets.brew.params import BrewParams
from assets.common.ngram import KneserNeyTrigram, tokenize
from resources.versioning import bytes_md5

SCHEMES = ("brew", "kgw", "mpac", "unwatermarked", "wrong_key")
POSITIVE_SCHEMES = ("brew", "kgw", "mpac")
NEGATIVE_ROLE = {"unwatermarked": "unwatermarked", "wrong_key": "wrong_key"}
HUMAN_ROLE = {"calibration": "human_calibration", "evaluation": "human"}
REALISM_ATTACK, REALISM_RATE = "syn10", 0.10
EXAMPLES = 20                   # synonym substitutions shown in the report

SeedFn = Callable[..., int]
RngFn = Callable[..., np.random.Generator]
Log = Callable[[str], Any]


def _quiet(message: str) -> None:
    return None


# ============================================================================ codebook helpers
def text_length(params: BrewParams) -> int:
    """T = n L generated (scored) tokens: one codeword cycle."""
    return make_code(params.code).n * params.block_length


def brew_config(codebook: dict[str, Any]) -> M.BrewConfig:
    """The detector configuration a codebook fixes."""
    return M.BrewConfig(block_length=int(codebook["block_length"]), gamma=float(codebook["gamma"]),
                        delta=float(codebook["delta"]), alpha=float(codebook["alpha"]),
                        max_shift=int(codebook["max_shift"]), vote_mode=codebook["vote_mode"],
                        verify_mode=codebook["verify_mode"], sync=codebook["sync"],
                        min_tokens=int(codebook["min_tokens"]))


def vocab_md5(vocab: list[str]) -> str:
    return bytes_md5("\n".join(vocab).encode())


def key_for(codebook: dict[str, Any], seed: int, which: str = "key", index: int = 0) -> int:
    """The watermark key of a seed ("key", "wrong_key" or "null_keys"[index]); an unknown
    seed or key name is a clear error rather than a silent new key."""
    entry = codebook["keys"].get(str(int(seed)))
    if entry is None:
        raise KeyError(f"unknown key: the codebook has no key for seed {seed} "
                       f"(known seeds {sorted(codebook['keys'])})")
    if which == "null_keys":
        if index >= len(entry["null_keys"]):
            raise KeyError(f"unknown key: seed {seed} has {len(entry['null_keys'])} null keys, asked for #{index}")
        return int(entry["null_keys"][index])
    if which not in entry:
        raise KeyError(f"unknown key {which!r} for seed {seed}")
    return int(entry[which])


def require_same_vocab(lm: KneserNeyTrigram, codebook: dict[str, Any]) -> None:
    """Generator and detector must share the vocabulary the partition is defined over."""
    md5 = vocab_md5(lm.vocab)
    if md5 != codebook["vocab_md5"] or lm.vocab_size != int(codebook["vocab_size"]):
        raise ValueError(f"vocabulary mismatch between generator and detector: LM |V|={lm.vocab_size} "
                         f"md5 {md5} vs codebook |V|={codebook['vocab_size']} md5 {codebook['vocab_md5']}")


def to_ids(lm: KneserNeyTrigram, tokens: str) -> np.ndarray:
    get = lm.word_to_id.get
    return np.array([get(t, 0) for t in tokens.split(" ")], dtype=np.int64)


def _contexts(lm: KneserNeyTrigram, prompts: list[list[str]]) -> np.ndarray:
    """(B, 2) ids of each prompt's last two words (0 = <unk>)."""
    return np.array([[lm.word_to_id.get(w, 0) for w in p[-2:]] for p in prompts])


# ============================================================================ LM and synonyms
def fit_lm(params: BrewParams, corpus: pd.DataFrame) -> tuple[KneserNeyTrigram, dict[str, Any]]:
    """The Kneser–Ney trigram on the lm split (top-V words) and its held-out perplexity on
    the held-out lee_background documents."""
    train = corpus[corpus["split"] == "lm"]["text"].map(tokenize).tolist()
    heldout = corpus[(corpus["split"] == "heldout") & (corpus["source"] == "lee_bg")]["text"].map(tokenize).tolist()
    model = KneserNeyTrigram().fit(train, max_vocab=params.vocab_size)
    perplexity = float(model.perplexity(heldout)) if heldout else float("nan")
    return model, {"train_documents": len(train), "heldout_perplexity": perplexity,
                   "train_tokens": int(sum(map(len, train)))}


def synonym_table(params: BrewParams, lm: KneserNeyTrigram, human_texts: pd.DataFrame, threads: int,
                  log: Log = _quiet) -> tuple[pd.DataFrame, dict[str, Any]]:
    """SimLex-999 pairs ∪ MiniLM nearest neighbours (when the package is installed), filtered
    to alphabetic in-vocabulary content words without inflections.

    Returns (pairs: word, synonym, source, similarity; info: coverage on human text,
    coverage_by_cosine for the configured and a stricter MiniLM cosine, minilm present)."""
    vocabulary = set(lm.vocab)
    stop = data.stopwords()
    simlex = data.simlex_pairs(params.simlex_min_score)
    words = [w for w in lm.vocab if data.is_content_word(w, stop)][: params.minilm_max_words]
    encoder = data.load_minilm(threads)
    pairs = [simlex]
    coverage_by_cosine = {}
    human_tokens = [t.split(" ") for t in human_texts["tokens"]]
    if encoder is not None:
        start = time.monotonic()
        embeddings = data.embed(encoder, words)
        log(f"MiniLM: embedded {len(words)} words in {time.monotonic() - start:.1f} s")
        for cosine in sorted({params.minilm_min_cosine, 0.75}):
            mined = data.filter_pairs(data.embedding_pairs(words, embeddings, cosine), vocabulary, stop)
            coverage_by_cosine[f"{cosine:g}"] = data.synonym_coverage(
                human_tokens, pd.concat([data.filter_pairs(simlex, vocabulary, stop), mined]), stop)
            if cosine == params.minilm_min_cosine:
                pairs.append(mined)
    table = data.filter_pairs(pd.concat(pairs, ignore_index=True), vocabulary, stop)
    coverage = data.synonym_coverage(human_tokens, table, stop)
    log(f"{len(table)} synonym pairs ({table['source'].value_counts().to_dict()}); coverage {coverage}")
    return table, {"coverage": coverage, "coverage_by_cosine": coverage_by_cosine, "minilm": encoder is not None}


# ============================================================================ codebook
def codebook(params: BrewParams, lm: KneserNeyTrigram, corpus: pd.DataFrame, seed_for: SeedFn, rng_for: RngFn,
             log: Log = _quiet) -> dict[str, Any]:
    """BCH code, block geometry, keys per seed (+ wrong and null keys), δ calibrated on dev
    prompts (LM-training prompts, never the held-out text) and the analytic thresholds."""
    code = make_code(params.code)
    L, gamma, alpha = params.block_length, params.gamma, params.alpha
    dev_prompts = [tokenize(t)[:data.PROMPT_WORDS] for t in corpus[corpus["split"] == "lm"]["text"]][: params.dev_texts]
    contexts = _contexts(lm, dev_prompts)
    green = M.green_matrix(seed_for("dev_key"), lm.vocab_size, gamma)
    rng = rng_for("dev")
    messages = rng.integers(0, 2, (len(contexts), code.k))
    delta, dev_rates = M.calibrate_delta(M.CachedNextToken(lm), contexts, green, code.encode(messages), L,
                                         params.delta_grid, params.dev_length, params.target_hit_rate, rng, log)
    keys = {str(int(s)): {"key": seed_for("key", s), "wrong_key": seed_for("wrong_key", s),
                          "null_keys": [seed_for("key", s)] + [seed_for("null_key", s, j)
                                                               for j in range(1, params.human_keys_per_seed)]}
            for s in params.seeds}
    return {"code": params.code, "n": code.n, "k": code.k, "t": code.t, "block_length": L,
            "text_length": code.n * L, "gamma": gamma, "delta": delta, "alpha": alpha, "max_shift": params.max_shift,
            "vote_mode": params.vote_mode, "verify_mode": params.verify_mode, "sync": params.sync,
            "min_tokens": params.min_tokens,
            "keys": keys, "vocab_size": lm.vocab_size, "vocab_md5": vocab_md5(lm.vocab), "dev_hit_rates": dev_rates,
            # per-block verification is one test; the global-shift reading corrects for 2S + 1 shifts
            "bonferroni_alpha": {str(S): alpha / M.shift_tests(S, "global") for S in benchmark.SHIFT_RANGES},
            "hard_tau": {"per_block": M.hard_threshold(code.n, alpha, 1),
                         **{f"global_S{S}": M.hard_threshold(code.n, alpha, M.shift_tests(S, "global"))
                            for S in benchmark.SHIFT_RANGES}},
            "ecc_error_threshold": benchmark.analytic_error_threshold(code, alpha),
            "ecc_false_decode": code.false_decode_probability()}


# ============================================================================ texts
def watermarked_texts(params: BrewParams, lm: KneserNeyTrigram, codebook: dict[str, Any], corpus: pd.DataFrame,
                      rng_for: RngFn, log: Log = _quiet) -> pd.DataFrame:
    """Per seed × scheme: BREW, KGW and MPAC-lite watermarked texts with random k-bit
    messages, and unwatermarked / wrong-key negatives; T tokens + 1 context token each."""
    require_same_vocab(lm, codebook)
    code = make_code(codebook["code"])
    T, L, delta = int(codebook["text_length"]), int(codebook["block_length"]), float(codebook["delta"])
    prompts = data.prompt_pool(corpus)
    counts = {"brew": params.texts_per_seed, "kgw": params.baseline_texts_per_seed,
              "mpac": params.baseline_texts_per_seed, "unwatermarked": params.negative_texts_per_seed,
              "wrong_key": params.negative_texts_per_seed}
    next_token = M.CachedNextToken(lm)
    frames, start = [], time.monotonic()
    for seed in params.seeds:
        rng = rng_for("texts", seed)
        greens: dict[int, np.ndarray] = {}  # one partition per key, shared by the schemes
        for scheme in SCHEMES:
            size = counts[scheme]
            if size == 0:
                continue
            chosen = rng.choice(len(prompts), size=size, replace=len(prompts) < size)
            contexts = _contexts(lm, [prompts[i] for i in chosen])
            messages = rng.integers(0, 2, (size, code.k)).astype(np.uint8)
            use_key = key_for(codebook, seed, "wrong_key" if scheme == "wrong_key" else "key")
            if use_key not in greens:
                greens[use_key] = M.green_matrix(use_key, lm.vocab_size, float(codebook["gamma"]))
            green = greens[use_key]
            if scheme in ("brew", "wrong_key"):
                schedule = M.brew_bit_schedule(np.stack([M.codeword_for(code, m) for m in messages]), L)
            elif scheme == "kgw":
                schedule = M.kgw_bit_schedule(size)
            elif scheme == "mpac":
                schedule = M.mpac_bit_schedule(messages, M.allocation_table(use_key, lm.vocab_size, code.k))
            else:
                schedule = None
            out = M.generate_batch(next_token, contexts, T, green, schedule,
                                   0.0 if scheme == "unwatermarked" else delta, rng, entropy_min=params.entropy_min)
            frames.append(pd.DataFrame({
                "seed": int(seed), "scheme": scheme, "text_id": [f"{scheme}:{seed}:{i}" for i in range(size)],
                "message": bits_to_message(messages).astype(np.int64),
                "tokens": [" ".join(lm.vocab[i] for i in row) for row in out["ids"]],
                "n_tokens": out["ids"].shape[1],
                "hit_rate": out["favoured"].mean(axis=1) if schedule is not None else np.nan,
            }))
            log(f"seed {seed} {scheme}: {size} texts of {T} tokens ({time.monotonic() - start:.0f} s so far; "
                f"LM cache hit rate {next_token.hits / max(1, next_token.hits + next_token.misses):.2f})")
    return pd.concat(frames, ignore_index=True)


def attacked_texts(params: BrewParams, lm: KneserNeyTrigram, watermarked: pd.DataFrame, synonyms: pd.DataFrame,
                   human_texts: pd.DataFrame, corpus: pd.DataFrame, rng_for: RngFn) -> pd.DataFrame:
    """Every positive text after each configured attack (negatives unattacked), with the
    realized edit rate over its scored tokens. Synonym attacks named in
    data.ATTACK_MIN_COSINE draw from the stricter sub-table (SimLex + MiniLM pairs at that cosine)."""
    synonym_maps = {attack: data.synonym_map(data.synonym_subtable(synonyms, data.ATTACK_MIN_COSINE.get(attack)))
                    for attack in params.attacks if attack.startswith("syn")}
    words, probs = data.unigram_distribution(corpus[corpus["split"] == "lm"]["text"], lm.vocab[3:])
    human = [t.split(" ") for t in human_texts["tokens"]]
    rows = []
    for row in watermarked.itertuples(index=False):
        tokens = row.tokens.split(" ")
        attacks = params.attacks if row.scheme in POSITIVE_SCHEMES else ("none",)
        for attack in attacks:
            rng = rng_for("attack", row.text_id, attack)
            rate = data.ATTACK_RATES[attack]
            scored = len(tokens) - 1
            if attack == "none":
                out, edits = tokens, 0
            elif attack.startswith("syn"):
                out, edits, _ = data.synonym_attack(tokens, rate, synonym_maps[attack], rng)
            elif attack == "ins5":
                out, edits = data.insertion_attack(tokens, rate, words, probs, rng)
            elif attack == "ins5_burst":
                out, edits = data.burst_insertion_attack(tokens, rate, words, probs, rng)
            elif attack == "del5":
                out, edits = data.deletion_attack(tokens, rate, rng)
            else:
                out, edits = data.copy_paste_attack(tokens, rate, human, rng)
            rows.append({"seed": row.seed, "scheme": row.scheme, "text_id": row.text_id, "attack": attack,
                         "message": row.message, "tokens": " ".join(out), "n_tokens": len(out),
                         "target_rate": rate, "realized_rate": edits / scored})
    return pd.DataFrame(rows)


def attack_realism(params: BrewParams, watermarked: pd.DataFrame, synonyms: pd.DataFrame, threads: int,
                   rng_for: RngFn) -> dict[str, Any]:
    """MiniLM cosine between original and syn10-attacked sentences of the first BREW texts
    (the same attack draws as attacked_texts), example substitutions, and the same cosine for
    every other configured 10% synonym attack (the stricter synonym cut) under "by_attack"."""
    similarity = {(a, b): float(s) for a, b, s in zip(synonyms["word"], synonyms["synonym"], synonyms["similarity"])}
    sample = watermarked[watermarked["scheme"] == "brew"].head(params.realism_texts)
    encoder = data.load_minilm(threads)
    attacks = [REALISM_ATTACK] + [a for a in params.attacks if a.startswith("syn") and a != REALISM_ATTACK
                                  and data.ATTACK_RATES[a] == REALISM_RATE]
    by_attack, examples = {}, []
    for attack in attacks:
        synonym_map = data.synonym_map(data.synonym_subtable(synonyms, data.ATTACK_MIN_COSINE.get(attack)))
        pairs = []
        for row in sample.itertuples(index=False):
            tokens = row.tokens.split(" ")
            out, _, edits = data.synonym_attack(tokens, REALISM_RATE, synonym_map,
                                                rng_for("attack", row.text_id, attack))
            pairs += [(a, b) for a, b in zip(data.sentences(tokens), data.sentences(out)) if a != b]
            for i, old, new in edits:
                if attack == REALISM_ATTACK and len(examples) < EXAMPLES:
                    examples.append({"context": " ".join(tokens[max(0, i - 5):i]), "original": old,
                                     "substitute": new,
                                     "word_similarity": round(similarity.get((old, new), float("nan")), 3)})
        cosines = []
        if encoder is not None and pairs:
            a = data.embed(encoder, [p[0] for p in pairs])
            b = data.embed(encoder, [p[1] for p in pairs])
            cosines = (a * b).sum(axis=1).tolist()
        by_attack[attack] = {"mean_sentence_cosine": float(np.mean(cosines)) if cosines else float("nan"),
                             "min_sentence_cosine": float(np.min(cosines)) if cosines else float("nan"),
                             "changed_sentences": len(cosines)}
    return {**by_attack[REALISM_ATTACK], "examples": examples, "by_attack": by_attack}


# ============================================================================ detections
def detections(lm: KneserNeyTrigram, codebook: dict[str, Any], attacked: pd.DataFrame, human_texts: pd.DataFrame,
               log: Log = _quiet) -> tuple[pd.DataFrame, int]:
    """Every detector on every text: positives with their scheme's methods, negatives and
    human windows (under each of the seed's null keys) with all methods. Human windows of the
    calibration half get role "human_calibration" (thresholds are fitted there), those of the
    evaluation half role "human" (every FPR is scored there).

    Returns (rows: seed, key_index, text_id, role, scheme, attack, message_true, method,
    accepted, score, message, shift; texts screened)."""
    require_same_vocab(lm, codebook)
    code = make_code(codebook["code"])
    config = brew_config(codebook)
    rows, start, done = [], time.monotonic(), 0
    human_ids = [to_ids(lm, t) for t in human_texts["tokens"]]
    human_roles = [HUMAN_ROLE[split] for split in human_texts["split"]]
    for seed_key in sorted(codebook["keys"], key=int):
        seed = int(seed_key)
        main_key = key_for(codebook, seed)
        green = M.green_matrix(main_key, lm.vocab_size, config.gamma)
        allocation = M.allocation_table(main_key, lm.vocab_size, code.k)
        for row in attacked[attacked["seed"] == seed].itertuples(index=False):
            role = "positive" if row.scheme in POSITIVE_SCHEMES else NEGATIVE_ROLE[row.scheme]
            methods = benchmark.SCHEME_METHODS[row.scheme] if role == "positive" else benchmark.METHODS
            for result in benchmark.detect_text(to_ids(lm, row.tokens), methods, green, code, config,
                                                main_key, allocation):
                rows.append({"seed": seed, "key_index": 0, "text_id": row.text_id, "role": role, "scheme": row.scheme,
                             "attack": row.attack, "message_true": int(row.message), **result})
            done += 1
        for index in range(len(codebook["keys"][seed_key]["null_keys"])):
            null_key = key_for(codebook, seed, "null_keys", index)
            if null_key != main_key:
                green = M.green_matrix(null_key, lm.vocab_size, config.gamma)
                allocation = M.allocation_table(null_key, lm.vocab_size, code.k)
            for text_id, role, ids in zip(human_texts["text_id"], human_roles, human_ids):
                for result in benchmark.detect_text(ids, benchmark.METHODS, green, code, config, null_key, allocation):
                    rows.append({"seed": seed, "key_index": index, "text_id": text_id, "role": role,
                                 "scheme": "human", "attack": "none", "message_true": -2, **result})
                done += 1
        elapsed = time.monotonic() - start
        log(f"seed {seed}: {done} texts screened in {elapsed:.0f} s ({done / max(elapsed, 1e-9):.1f} texts/s)")
    return pd.DataFrame(rows), done
