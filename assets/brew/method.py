"""BREW (reconstructed) and the baselines it is compared with — pure numpy, no Dagster.

Shapes and units
----------------
V       vocabulary size of the generating LM (ids 0..V-1; 0 = <unk>, 1 = </s>, 2 = <s>)
text    int64 ids (T+1,): index 0 is the one-token left context, indices 1..T the scored
        tokens. Scored position i (0-based) is text index i+1, its "previous token" is text[i].
key     a 64-bit integer watermark key.

Vocabulary partition (KGW-style, keyed by the previous token)
    green[p, w] = 1 iff w is among the first floor(gamma V) tokens of the permutation of V
    obtained by sorting splitmix64(key, p, w).  G1_t = {w: green[x_{t-1}, w]}, G0_t = complement.

Embedding (BREW): codeword c = BCH.encode(m); position i is in block b(i) = (i // L) mod n and
delta is added to the logits of G^{c_b(i)}_t. KGW favours G1 always; MPAC-lite favours
G^{m_j} with j = hash(key, prev) mod k.

Detection (BREW, the *inferred* rule of the spec; every knob is configurable):
  sync="per_block" (the method): window shifting re-synchronises every block. The scored
  tokens are split by received position: E = even positions (estimation), W = odd
  (verification), so the split does not depend on the alignment being estimated.
  Tokens map to codeword positions as the generator wrote them: block j (L tokens) carries
  bit j mod n at any length; a text need not span whole cycles.
  (i)  blind estimation on E: for each candidate original length T0 (the received length T'
       itself, an unedited text; then whole-cycle lengths c·nL within net edits
       |T' - T0| <= max_length_change · T0, an edited text of the generator's default length)
       the text is cut into J = ceil(T0/L) windows, window j carrying codeword bit j mod n and
       anchored at a_j = round(j L T'/T0) (= jL when T0 = T'; the last window is the partial
       trailing block when L does not divide T0, used like the others); block votes
       v_b = sum_{E, window = b mod n} (1[g=1] - 1[g=0]), r_b = 1[v_b > 0], ties erased; BCH
       errors-and-erasures decoding, nearest codeword if it fails → c1. Window shifting:
       every boundary moves to u_j = a_j + o_j, |o_j| <= S, to agree best with c1 on E (a
       dynamic programme; ties keep o_j = 0); the votes over the shifted windows give m_hat,
       c* = Enc(m_hat). The reading whose c* agrees best with E is kept (T0 = T' on a tie).
       An edited text of another original length is read on the grid jL with the ±S shifts
       only. Until issue 46 the anchors always assumed whole cycles (J = n · round(T'/nL)),
       so a clean 520-token text was read as a stretched 496-token one and misread.
  (ii) designated verification on W (restricted to (prev, token) pairs that occur in neither
       E nor earlier in W, so their partition bits are fresh coins under H0), each W token
       carrying c* of its shifted window:
       soft: H = #hits of G^{c*_b}; under H0 H ~ Bin(N1, gamma) + Bin(N0, 1 - gamma)
       (N1/N0 = verified tokens whose designated bit is 1/0; = Bin(N, 1/2) at gamma = 1/2);
       hard: d = #bits whose W-vote disagrees with c* (ties count as disagreement), d is
       stochastically >= Bin(n, 1/2) under H0 (gamma = 1/2).
       The windows and c* are functions of E alone, so the null holds conditionally on them:
       one test, no correction for the shifts searched. Accept iff p <= alpha (soft) or
       d <= tau with P(Bin(n,1/2) <= tau) <= alpha (hard), and (payload_check) the W block
       votes contradict c* strictly in at most floor((2t - u)/2) bits, u = bits no verified
       token carries (none when u > 2t: the message is then not identifiable). The null is
       H0 = unwatermarked, so p alone cannot reject a watermarked text read with a wrong
       codeword: its W tokens still favour the true bits, which the wrong c* shares on most
       blocks. The payload check rejects it: another codeword differs from c* in >= 2t + 1
       bits, and W votes that follow it contradict c* there. It only shrinks the acceptance
       region, so the FPR bound stands.
  sync="global" (the earlier reading, kept for comparison): one shift s in [-S, S] for the
  whole text, blocks b_s(i) = ((i - s) // L) mod n, E = even offsets within a block
  (vote_mode="split_half") or even codeword copies ("per_copy"); stage (ii) at every shift,
  accept iff min_s p_s <= alpha / (2S + 1) (Bonferroni over shifts; soft) or min_s d_s <= tau
  with (2S+1) P(Bin(n,1/2) <= tau) <= alpha (hard).
  For a text of unchanged length (T' = nL) both readings at S = 0 are the same detector
  (fixed grid, E = even positions, L even).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from assets.brew.bch import BCHCode, bits_to_message

UNK_ID, EOS_ID, BOS_ID = 0, 1, 2
BANNED_IDS = (UNK_ID, EOS_ID, BOS_ID)
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


# ----------------------------------------------------------------------------- hashing
def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser on uint64 arrays (wrapping arithmetic), a fast keyed PRF."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def keyed_hash(key: int, *parts: np.ndarray) -> np.ndarray:
    """splitmix64 chained over key and integer arrays (broadcast)."""
    h = splitmix64(np.uint64(key & 0xFFFFFFFFFFFFFFFF))
    for part in parts:
        h = splitmix64(h ^ splitmix64(np.asarray(part, dtype=np.uint64)))
    return h


def green_matrix(key: int, vocab_size: int, gamma: float = 0.5, chunk: int = 512) -> np.ndarray:
    """(V, V) bool: green[p, w] = w in G1 after previous token p; every row has exactly
    floor(gamma V) True entries (the first tokens of a keyed pseudo-random permutation)."""
    if not 0.0 < gamma < 1.0:
        raise ValueError("gamma must be in (0, 1)")
    size = int(np.floor(gamma * vocab_size))
    green = np.zeros((vocab_size, vocab_size), dtype=bool)
    words = np.arange(vocab_size, dtype=np.uint64)
    for start in range(0, vocab_size, chunk):
        prev = np.arange(start, min(start + chunk, vocab_size), dtype=np.uint64)
        h = keyed_hash(key, prev[:, None], words[None, :])
        chosen = np.argpartition(h, size - 1, axis=1)[:, :size]
        np.put_along_axis(green[start:start + len(prev)], chosen, True, axis=1)
    return green


def allocation_table(key: int, vocab_size: int, k: int) -> np.ndarray:
    """MPAC-lite position allocation: message bit index j(p) = hash(key, p) mod k, (V,) int."""
    return (keyed_hash(key ^ 0x5A5A5A5A, np.arange(vocab_size)) % np.uint64(k)).astype(np.int64)


# ----------------------------------------------------------------------------- configs
@dataclass(frozen=True)
class BrewConfig:
    """Watermark geometry and detector rule. Units: tokens; alpha is a probability."""

    block_length: int = 16          # L
    gamma: float = 0.5
    delta: float = 2.5
    alpha: float = 0.02             # target FPR of the designated verification
    max_shift: int = 4              # S
    vote_mode: str = "split_half"   # or "per_copy"
    verify_mode: str = "soft"       # or "hard"
    sync: str = "per_block"         # window shifting per block, or one "global" shift
    min_tokens: int = 64            # fewer scoreable tokens → "not watermarked" (too short)
    max_length_change: float = 0.25  # per-block anchors: net edits of at most this fraction of a whole-cycle original
    payload_check: bool = True      # reject when the W block votes contradict c* beyond the code's radius

    def __post_init__(self):
        if self.vote_mode not in ("split_half", "per_copy"):
            raise ValueError(f"vote_mode must be split_half or per_copy, got {self.vote_mode!r}")
        if self.verify_mode not in ("soft", "hard"):
            raise ValueError(f"verify_mode must be soft or hard, got {self.verify_mode!r}")
        if self.sync not in ("per_block", "global"):
            raise ValueError(f"sync must be per_block or global, got {self.sync!r}")
        if self.sync == "per_block" and self.vote_mode != "split_half":
            raise ValueError("per-block re-synchronisation needs vote_mode split_half (the E/W split "
                             "must not depend on the alignment); use sync='global' for per_copy")
        if self.sync == "per_block" and self.block_length % 2:
            raise ValueError("per-block re-synchronisation splits by position parity: block_length must be even")
        if self.verify_mode == "hard" and self.gamma != 0.5:
            raise ValueError("hard verification's Bin(n, 1/2) null needs gamma = 0.5")
        if not 0.0 <= self.max_length_change < 1.0:
            raise ValueError("max_length_change must be in [0, 1)")
        if self.block_length < 2 or self.max_shift < 0:
            raise ValueError("block_length must be >= 2 and max_shift >= 0")


def codeword_for(code: BCHCode, message_bits: np.ndarray) -> np.ndarray:
    """Codeword of a k-bit message; a longer (or shorter) message is a clear error."""
    message_bits = np.asarray(message_bits)
    if message_bits.ndim != 1 or message_bits.size != code.k:
        raise ValueError(f"message has {message_bits.size} bits but {code.name} carries exactly k={code.k}")
    return code.encode(message_bits)


# ----------------------------------------------------------------------------- generation
def brew_bit_schedule(codewords: np.ndarray, block_length: int) -> Callable[[int, np.ndarray], np.ndarray]:
    """Favoured bit per text at generated position i: c[(i // L) mod n]. codewords (B, n)."""
    codewords = np.asarray(codewords)
    n = codewords.shape[1]

    def bits(position: int, prev_ids: np.ndarray) -> np.ndarray:
        return codewords[:, (position // block_length) % n]

    return bits


def kgw_bit_schedule(batch: int) -> Callable[[int, np.ndarray], np.ndarray]:
    """Zero-bit KGW: always favour G1."""
    return lambda position, prev_ids: np.ones(batch, dtype=np.uint8)


def mpac_bit_schedule(messages: np.ndarray, allocation: np.ndarray) -> Callable[[int, np.ndarray], np.ndarray]:
    """MPAC-lite (radix 2): favour G^{m_j}, j = allocation[prev]. messages (B, k)."""
    messages = np.asarray(messages)
    rows = np.arange(len(messages))
    return lambda position, prev_ids: messages[rows, allocation[prev_ids]]


class CachedNextToken:
    """Dense next-token distributions of a KneserNeyTrigram by context id pair, with a small
    FIFO cache (contexts repeat: "of the", ". the" ...). Returns float64 (V,) arrays."""

    def __init__(self, lm, max_entries: int = 2048):
        self.lm = lm
        self.vocab = lm.vocab
        self.max_entries = max_entries
        self._cache: dict[tuple[int, int], np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    def __call__(self, u: int, v: int) -> np.ndarray:
        key = (int(u), int(v))
        probs = self._cache.get(key)
        if probs is not None:
            self.hits += 1
            return probs
        self.misses += 1
        probs = self.lm.next_token_distribution((self.vocab[key[0]], self.vocab[key[1]]))
        if len(self._cache) >= self.max_entries:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = probs
        return probs


def generate_batch(next_token: Callable[[int, int], np.ndarray], contexts: np.ndarray, length: int,
                   green: np.ndarray | None, bit_schedule: Callable | None, delta: float,
                   rng: np.random.Generator, entropy_min: float = 0.0,
                   log: Callable[[str], None] | None = None) -> dict[str, np.ndarray]:
    """Sample `length` tokens for B texts in lockstep (vectorised over the vocabulary).

    contexts: (B, 2) ids of the two prompt tokens preceding generation. green: (V, V) bool
    partition (None or delta = 0: unwatermarked). Positions whose LM entropy (nats) is below
    entropy_min get no bias. Returns {"ids": (B, length+1) with the context token first,
    "favoured": (B, length) bool (token in the favoured half), "entropy": (B, length)}.
    """
    contexts = np.asarray(contexts, dtype=np.int64)
    batch = len(contexts)
    ids = np.zeros((batch, length + 2), dtype=np.int64)
    ids[:, :2] = contexts
    favoured = np.zeros((batch, length), dtype=bool)
    entropy = np.zeros((batch, length))
    watermark = green is not None and bit_schedule is not None and delta != 0.0
    for position in range(length):
        u, v = ids[:, position], ids[:, position + 1]
        probs = np.stack([next_token(a, b) for a, b in zip(u, v)])
        probs[:, list(BANNED_IDS)] = 0.0
        probs /= probs.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            logp = np.log(probs)
        entropy[:, position] = -(probs * np.where(probs > 0, logp, 0.0)).sum(axis=1)
        if watermark:
            rows = green[v]                                   # (B, V) G1 after prev token v
            bits = np.asarray(bit_schedule(position, v), dtype=bool)
            target = rows == bits[:, None]                    # G^{bit}
            bias = delta * target * (entropy[:, position] >= entropy_min)[:, None]
            logits = logp + bias
            logits -= logits.max(axis=1, keepdims=True)
            probs = np.exp(logits)
            probs /= probs.sum(axis=1, keepdims=True)
        cumulative = np.cumsum(probs, axis=1)
        draws = rng.random(batch)[:, None] * cumulative[:, -1:]
        chosen = np.minimum((cumulative < draws).sum(axis=1), probs.shape[1] - 1)
        ids[:, position + 2] = chosen
        if watermark:
            favoured[:, position] = target[np.arange(batch), chosen]
        if log is not None and (position + 1) % 100 == 0:
            log(f"generated {position + 1}/{length} tokens for {batch} texts")
    return {"ids": ids[:, 1:], "favoured": favoured, "entropy": entropy}


def calibrate_delta(next_token: Callable[[int, int], np.ndarray], contexts: np.ndarray, green: np.ndarray,
                    codewords: np.ndarray, block_length: int, delta_grid: tuple[float, ...], length: int,
                    target_hit_rate: float, rng: np.random.Generator,
                    log: Callable[[str], None] | None = None) -> tuple[float, dict[str, float]]:
    """The smallest δ of `delta_grid` (ascending) whose unattacked BREW hit rate on dev texts
    reaches `target_hit_rate` (the largest δ when none does).

    contexts: (B, 2) dev prompt ids; codewords: (B, n) the texts' codewords; every candidate
    generates `length` tokens per text with the same rng stream. Returns (δ, {"δ": hit rate}
    of every candidate tried, keyed by f"{δ:g}").
    """
    rates: dict[str, float] = {}
    delta = float(delta_grid[-1])
    for candidate in delta_grid:
        out = generate_batch(next_token, contexts, length, green, brew_bit_schedule(codewords, block_length),
                             float(candidate), rng)
        name = f"{float(candidate):g}"
        rates[name] = hit_rate(out["favoured"])
        if log is not None:
            log(f"dev δ={candidate}: hit rate {rates[name]:.3f}")
        if rates[name] >= target_hit_rate:
            delta = float(candidate)
            break
    return delta, rates


# ----------------------------------------------------------------------------- detection helpers
@dataclass
class ScoredText:
    """Per-position detection inputs of one text: green bits, pair ids, scoreable mask."""

    green_bit: np.ndarray   # (T,) uint8, 1 iff token in G1 after its previous token
    pair: np.ndarray        # (T,) int64 prev * V + token
    scoreable: np.ndarray   # (T,) bool

    @property
    def length(self) -> int:
        return int(self.green_bit.size)


def score_text(ids: np.ndarray, green: np.ndarray, scoreable_extra: np.ndarray | None = None) -> ScoredText:
    """Look up partition bits of a text. ids (T+1,) with the context token first; positions
    whose token or previous token is <unk> (or a special) are not scoreable."""
    ids = np.asarray(ids, dtype=np.int64)
    vocab_size = green.shape[0]
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"token ids outside the detector's vocabulary of {vocab_size}: vocabulary mismatch")
    prev, token = ids[:-1], ids[1:]
    scoreable = ~np.isin(token, BANNED_IDS) & ~np.isin(prev, BANNED_IDS)
    if scoreable_extra is not None:
        scoreable &= np.asarray(scoreable_extra, dtype=bool)
    return ScoredText(green[prev, token].astype(np.uint8), prev * vocab_size + token, scoreable)


def first_occurrence(pairs: np.ndarray, exclude: np.ndarray | None = None) -> np.ndarray:
    """Bool mask: True at the first occurrence of each pair id not in `exclude`."""
    pairs = np.asarray(pairs)
    keep = np.zeros(pairs.size, dtype=bool)
    if pairs.size:
        _, first = np.unique(pairs, return_index=True)
        keep[first] = True
    if exclude is not None and exclude.size:
        keep &= ~np.isin(pairs, exclude)
    return keep


def soft_null_sf(hits: int, designated_ones: int, designated_zeros: int, gamma: float) -> float:
    """P(X >= hits) for X = Bin(N1, gamma) + Bin(N0, 1 - gamma) (exact, by convolution)."""
    from scipy import stats  # lazy: scipy.stats costs ~0.5 s at import

    if designated_ones + designated_zeros == 0:
        return 1.0
    if gamma == 0.5:
        return float(stats.binom.sf(hits - 1, designated_ones + designated_zeros, 0.5))
    pmf = np.convolve(stats.binom.pmf(np.arange(designated_ones + 1), designated_ones, gamma),
                      stats.binom.pmf(np.arange(designated_zeros + 1), designated_zeros, 1 - gamma))
    return float(min(1.0, pmf[hits:].sum()))


def hard_threshold(n: int, alpha: float, tests: int) -> int:
    """Largest tau with tests * P(Bin(n, 1/2) <= tau) <= alpha (−1 if none)."""
    from scipy import stats

    cdf = stats.binom.cdf(np.arange(n + 1), n, 0.5)
    ok = np.nonzero(tests * cdf <= alpha)[0]
    return int(ok.max()) if ok.size else -1


def shift_tests(max_shift: int, sync: str = "global") -> int:
    """The Bonferroni factor of the verification: 2S + 1 shifts tried on W for a global shift;
    1 for per-block re-synchronisation (the cut is chosen on E, W is tested once)."""
    return 2 * max_shift + 1 if sync == "global" else 1


def _block_votes(green_bit: np.ndarray, mask: np.ndarray, blocks: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Signed votes sum(2g - 1) and token counts per block over positions in mask."""
    signed = 2.0 * green_bit.astype(np.float64) - 1.0
    votes = np.bincount(blocks[mask], weights=signed[mask], minlength=n)
    counts = np.bincount(blocks[mask], minlength=n)
    return votes, counts


def payload_counts(codeword: np.ndarray, w_votes: np.ndarray, w_counts: np.ndarray) -> tuple[int, int]:
    """(contradictions, unobserved) of the verification half against the designated codeword:
    bits whose W vote is strictly against c* (ties are neither for nor against), and bits that
    no verified token carries (a text shorter than one cycle leaves some blocks unwritten)."""
    against = np.where(codeword == 1, w_votes < 0, w_votes > 0)
    return int(against.sum()), int((w_counts == 0).sum())


def payload_radius(code: BCHCode, unobserved: int) -> int:
    """Largest number of contradicting W blocks that still identifies c*: floor((2t - u) / 2)
    with u unobserved bits. Any other codeword differs from c* in >= 2t + 1 bits, >= 2t + 1 - u
    of them observed, so a W word within this radius of c* (on the observed bits) is nearer c*
    than any other codeword. -1 when u > 2t: then two codewords can agree on every observed bit
    and the message is not identifiable from the text."""
    return (2 * code.t - int(unobserved)) // 2 if unobserved <= 2 * code.t else -1


def payload_consistent(contradictions, unobserved, code: BCHCode) -> np.ndarray:
    """Bool (array): the W votes lie in c*'s bounded-distance region (payload_radius)."""
    radius = np.vectorize(lambda u: payload_radius(code, int(u)))(np.asarray(unobserved))
    return np.asarray(contradictions) <= radius


# ----------------------------------------------------------------------------- BREW detector
def brew_shift_statistics(scored: ScoredText, code: BCHCode, config: BrewConfig,
                          shifts: np.ndarray) -> dict[str, np.ndarray]:
    """Global-shift reading (sync="global"): stage (i) + (ii) at every shift. Returns
    per-shift arrays: message (int), p_value (soft), disagreements (hard), verified (N), hits,
    decoded (BCH success)."""
    n, L = code.n, config.block_length
    positions = np.arange(scored.length)
    words, erasures, masks = [], [], []
    for s in shifts:
        rel = positions - int(s)
        blocks = (rel // L) % n
        if config.vote_mode == "split_half":
            estimation = (rel % L) % 2 == 0
        else:
            estimation = (rel // (n * L)) % 2 == 0
        estimation &= scored.scoreable
        verification = ~estimation & scored.scoreable
        if config.vote_mode == "split_half":
            votes, _ = _block_votes(scored.green_bit, estimation, blocks, n)
        else:  # each codeword copy votes per block; copies combine by majority of signs
            copies = rel // (n * L)
            votes = np.zeros(n)
            for copy in np.unique(copies[estimation]):
                in_copy = estimation & (copies == copy)
                v, _ = _block_votes(scored.green_bit, in_copy, blocks, n)
                votes += np.sign(v)
        words.append((votes > 0).astype(np.uint8))
        erasures.append(votes == 0)
        fresh = first_occurrence(scored.pair[verification], exclude=np.unique(scored.pair[estimation]))
        idx = np.nonzero(verification)[0][fresh]
        masks.append((blocks, idx))
    words, erasures = np.array(words), np.array(erasures)
    decoded = code.decode_with_erasures(words, erasures)
    codewords = decoded["codeword"].copy()
    failed = np.nonzero(~decoded["success"])[0]
    if failed.size:
        codewords[failed] = code.nearest_codeword(words[failed], erasures[failed])["codeword"]
    p_values, disagreements, verified, hits, contradictions, unobserved = [], [], [], [], [], []
    for j, (blocks, idx) in enumerate(masks):
        designated = codewords[j][blocks[idx]]
        hit = scored.green_bit[idx] == designated
        ones = int(designated.sum())
        p_values.append(soft_null_sf(int(hit.sum()), ones, int(idx.size - ones), config.gamma))
        signed = 2.0 * scored.green_bit[idx] - 1.0
        w_votes = np.bincount(blocks[idx], weights=signed, minlength=n)
        agree = np.where(codewords[j] == 1, w_votes > 0, w_votes < 0)
        disagreements.append(int(n - agree.sum()))
        against, missing = payload_counts(codewords[j], w_votes, np.bincount(blocks[idx], minlength=n))
        contradictions.append(against)
        unobserved.append(missing)
        verified.append(int(idx.size))
        hits.append(int(hit.sum()))
    return {"shift": np.asarray(shifts), "message": bits_to_message(codewords[:, : code.k]),
            "p_value": np.array(p_values), "disagreements": np.array(disagreements),
            "contradictions": np.array(contradictions), "unobserved": np.array(unobserved),
            "verified": np.array(verified), "hits": np.array(hits), "decoded": decoded["success"]}


def brew_decide(statistics: dict[str, np.ndarray], code: BCHCode, config: BrewConfig,
                max_shift: int | None = None) -> dict:
    """Decision for shift range S (default config.max_shift) from per-shift statistics that
    cover at least [-S, S]. Returns accepted, message, score (higher = more watermarked:
    -log10 of the Bonferroni-adjusted p-value, or -disagreements), best shift.

    With config.payload_check a shift counts only when its W votes also lie in the designated
    codeword's bounded-distance region (payload_consistent); the best such shift decides, its
    score is that of a p-value of 1 (or n disagreements) when there is none. Dropping shifts
    only shrinks the acceptance region, so the Bonferroni bound still holds."""
    S = config.max_shift if max_shift is None else max_shift
    tests = shift_tests(S, "global")
    within = np.abs(statistics["shift"]) <= S
    idx = np.nonzero(within)[0]
    consistent = (payload_consistent(statistics["contradictions"][idx], statistics["unobserved"][idx], code)
                  if config.payload_check else np.ones(idx.size, dtype=bool))
    if config.verify_mode == "soft":
        adjusted = np.minimum(1.0, statistics["p_value"][idx] * tests)
        ranked = np.where(consistent, adjusted, np.inf)
        best = idx[int(np.argmin(ranked if consistent.any() else adjusted))]
        adjusted_best = float(ranked.min()) if consistent.any() else 1.0
        accepted = adjusted_best <= config.alpha
        score = float(-np.log10(max(adjusted_best, 1e-300)))
    else:
        tau = hard_threshold(code.n, config.alpha, tests)
        d = statistics["disagreements"][idx]
        ranked = np.where(consistent, d, code.n + 1)
        best = idx[int(np.argmin(ranked if consistent.any() else d))]
        d_best = int(ranked.min()) if consistent.any() else code.n
        accepted = d_best <= tau
        score = float(-d_best)
    return {"accepted": bool(accepted), "message": int(statistics["message"][best]), "score": score,
            "shift": int(statistics["shift"][best])}


def shift_order(max_shift: int) -> list[int]:
    """Window shifts 0, -1, +1, -2, +2, ... up to ±S: the tie-breaking preference (closest to 0)."""
    out = [0]
    for d in range(1, max_shift + 1):
        out += [-d, d]
    return out


def window_count(original_length: int, block_length: int) -> int:
    """J = ceil(T0 / L), at least one: the blocks of an original text of T0 tokens. Block j
    carries codeword bit j mod n (the generator's b(i) = (i // L) mod n); when L does not divide
    T0 the last block is partial (T0 - (J - 1) L tokens) and is used like any other."""
    return max(1, -(-int(original_length) // int(block_length)))


def anchor_bounds(length: int, original_length: int, block_length: int) -> np.ndarray:
    """Expected window boundaries of a received text of T' = `length` tokens read as an original
    of T0 = `original_length` tokens with its net T' - T0 edits spread evenly: a_j = round(j L T'/T0)
    (halves up, exact integers) for j = 0..J-1, J = window_count(T0, L), and a_J = T' (int64, J + 1
    entries). With T0 = T' (no length change) this is the generator's grid jL, the last window
    [(J-1)L, T') partial when L does not divide T'."""
    T, T0, L = int(length), int(original_length), int(block_length)
    if T0 < 1:
        raise ValueError("original_length must be >= 1")
    j = np.arange(window_count(T0, L) + 1, dtype=np.int64)
    return np.minimum((2 * j * L * T + T0) // (2 * T0), T)


def length_hypotheses(length: int, n: int, block_length: int, max_change: float) -> np.ndarray:
    """Candidate original lengths T0 of a received text of T' tokens, in order of preference:
    T0 = T' (an unedited text, of any length) first, then the whole-cycle lengths c·n·L (c >= 1,
    the generator's default T = nL and its multiples) within net edits |T' - T0| <= max_change·T0,
    nearest first. A whole-cycle text edited by insertions/deletions is read on anchors
    stretched by T'/T0; an edited text of another original length keeps the grid jL and only the
    ±S window shifting (its drift beyond S is not followed)."""
    T, cycle = int(length), int(n) * int(block_length)
    candidates = [T]
    for c in range(max(1, int(T / (cycle * (1.0 + max_change)))), int(T / (cycle * (1.0 - max_change))) + 2):
        T0 = c * cycle
        if T0 != T and abs(T - T0) <= max_change * T0 + 1e-9:
            candidates.append(T0)
    return np.array([candidates[0]] + sorted(candidates[1:], key=lambda T0: (abs(T0 - T), T0)), dtype=np.int64)


def resync_windows(signed: np.ndarray, signs: np.ndarray, anchors: np.ndarray, max_shift: int) -> np.ndarray:
    """Per-block window shifting: boundaries u_j = a_j + o_j, |o_j| <= S (u_0 = 0 and u_J = T'
    stay), maximising the designated agreement sum_j signs_j · v_j, v_j = sum of `signed` over
    window j = [u_j, u_{j+1}) (dynamic programme over the boundaries; windows may not cross).

    signed: (T',) estimation votes (+1 / -1 on E tokens, 0 elsewhere); signs: (J,) +1 / -1,
    the designated bit of every window; anchors: (J + 1,) from anchor_bounds. Ties keep the
    shift closest to 0 (so a boundary between two windows of the same bit stays at its
    anchor). Returns u (J + 1,) int64.
    """
    signed = np.asarray(signed, dtype=np.float64)
    total = int(signed.size)
    anchors = np.asarray(anchors, dtype=np.int64)
    J = len(anchors) - 1
    if max_shift == 0 or J < 2:
        return anchors.copy()
    prefix = np.concatenate([[0.0], np.cumsum(signed)])
    offsets = np.array(shift_order(max_shift))
    candidates = [np.array([0])] + [np.clip(anchors[j] + offsets, 0, total) for j in range(1, J)] + [np.array([total])]
    best = np.zeros(1)
    back = []
    for j in range(1, J + 1):
        here, before = candidates[j], candidates[j - 1]
        gain = float(signs[j - 1]) * (prefix[here][:, None] - prefix[before][None, :])
        value = np.where(here[:, None] >= before[None, :], best[None, :] + gain, -np.inf)
        arg = np.argmax(value, axis=1)                        # first maximum: offset closest to 0
        best = value[np.arange(len(here)), arg]
        back.append(arg)
    bounds = np.zeros(J + 1, dtype=np.int64)
    bounds[J] = total
    state = 0
    for j in range(J, 0, -1):
        state = int(back[j - 1][state])
        bounds[j - 1] = candidates[j - 1][state]
    return bounds


def window_index(bounds: np.ndarray, length: int) -> np.ndarray:
    """(T',) int: window of every position under the cut `bounds` (-1 outside [u_0, u_J))."""
    positions = np.arange(length)
    index = np.searchsorted(bounds, positions, side="right") - 1
    return np.where((positions >= bounds[0]) & (positions < bounds[-1]), index, -1)


def _estimate(code: BCHCode, signed: np.ndarray, estimation: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, bool]:
    """Block votes on E over the windows `bounds` (window j votes for bit j mod n), BCH
    errors-and-erasures decoding, nearest codeword when it fails → (codeword (n,), decoded)."""
    n = code.n
    window = window_index(bounds, signed.size)
    covered = estimation & (window >= 0)
    votes = np.bincount(window[covered] % n, weights=signed[covered], minlength=n)
    word, erased = (votes > 0).astype(np.uint8)[None], (votes == 0)[None]
    decoded = code.decode_with_erasures(word, erased)
    if decoded["success"][0]:
        return decoded["codeword"][0], True
    return code.nearest_codeword(word, erased)["codeword"][0], False


def _read(code: BCHCode, signed: np.ndarray, estimation: np.ndarray, anchors: np.ndarray,
          max_shift: int) -> tuple[np.ndarray, np.ndarray, bool, float]:
    """Stage (i) on E for one set of anchors: votes over the anchored windows → c1; window
    shifting towards c1 (resync_windows); votes over the shifted windows → c*. Returns (c*,
    bounds, decoded, agreement), agreement = sum over E tokens of ±1 as the token's partition
    bit matches c* of its window (the quantity the shifting maximises)."""
    n, J = code.n, len(anchors) - 1
    codeword, decoded = _estimate(code, signed, estimation, anchors)
    bounds = anchors
    if max_shift > 0:
        signs = 2.0 * codeword[np.arange(J) % n] - 1.0
        bounds = resync_windows(signed, signs, anchors, max_shift)
        if not np.array_equal(bounds, anchors):
            codeword, decoded = _estimate(code, signed, estimation, bounds)
    window = window_index(bounds, signed.size)
    inside = window >= 0
    agreement = float(np.sum(signed[inside] * (2.0 * codeword[window[inside] % n] - 1.0)))
    return codeword, bounds, decoded, agreement


def brew_resync_statistics(scored: ScoredText, code: BCHCode, config: BrewConfig,
                           max_shift: int) -> dict:
    """Stages (i) and (ii) with per-block re-synchronisation at shift range S = max_shift.

    E = even received positions, W = odd. Tokens map to codeword positions as the generator
    wrote them: block j (L tokens of the original text) carries bit j mod n, at any length.
    (i) For each candidate original length T0 (length_hypotheses: the received length T' itself,
    then whole-cycle lengths within config.max_length_change), the text is cut into
    J = ceil(T0/L) windows anchored at a_j = round(j L T'/T0) (the grid jL when T0 = T'; the
    last window is the partial trailing block when L does not divide T0, and counts like any
    other); votes on E → c1; window shifting: every boundary moves by at most S tokens to agree
    best with c1 on E (resync_windows); votes on E over the shifted windows → c*. The reading
    whose c* agrees best with E is kept (the first on a tie: T0 = T' before any stretch).
    (ii) W tokens (fresh pairs) carry c* of their shifted window. Everything that fixes the
    windows and c* is a function of E, so under H0 the W statistic keeps its exact null.

    Returns message (int), p_value (soft), disagreements (hard), contradictions and
    unobserved (payload_counts of W against c*), verified (N), hits, decoded (BCH success), bounds (J + 1,),
    offsets (J + 1,) = bounds - anchors, original_length (T0 of the reading kept)."""
    n = code.n
    length = scored.length
    positions = np.arange(length)
    estimation = scored.scoreable & (positions % 2 == 0)
    verification = scored.scoreable & (positions % 2 == 1)
    signed = np.where(estimation, 2.0 * scored.green_bit - 1.0, 0.0)
    best = None
    for original in length_hypotheses(length, n, config.block_length, config.max_length_change):
        anchors = anchor_bounds(length, int(original), config.block_length)
        reading = _read(code, signed, estimation, anchors, max_shift)
        if best is None or reading[3] > best[0][3]:
            best = (reading, anchors, int(original))
    (codeword, bounds, decoded, _), anchors, original = best
    window = window_index(bounds, length)
    fresh = first_occurrence(scored.pair[verification], exclude=np.unique(scored.pair[estimation]))
    idx = np.nonzero(verification)[0][fresh]
    idx = idx[window[idx] >= 0]
    bit = window[idx] % n
    designated = codeword[bit]
    hit = scored.green_bit[idx] == designated
    ones = int(designated.sum())
    w_votes = np.bincount(bit, weights=2.0 * scored.green_bit[idx] - 1.0, minlength=n)
    agree = np.where(codeword == 1, w_votes > 0, w_votes < 0)
    against, unobserved = payload_counts(codeword, w_votes, np.bincount(bit, minlength=n))
    return {"message": int(bits_to_message(codeword[: code.k])),
            "p_value": soft_null_sf(int(hit.sum()), ones, int(idx.size - ones), config.gamma),
            "disagreements": int(n - agree.sum()), "contradictions": against, "unobserved": unobserved,
            "verified": int(idx.size), "hits": int(hit.sum()),
            "decoded": bool(decoded), "bounds": bounds, "offsets": bounds - anchors, "original_length": original}


def brew_resync_decide(statistics: dict, code: BCHCode, config: BrewConfig) -> dict:
    """Decision of the per-block detector: one test on W (no shift multiplicity). Same keys
    as brew_decide; "shift" is the largest window shift |u_j - a_j| used. With
    config.payload_check the W votes must also lie in c*'s bounded-distance region
    (payload_consistent), else the text is rejected with the score of p = 1 (n disagreements)."""
    consistent = (not config.payload_check) or bool(
        payload_consistent(statistics["contradictions"], statistics["unobserved"], code))
    if config.verify_mode == "soft":
        p = float(statistics["p_value"]) if consistent else 1.0
        accepted = p <= config.alpha
        score = float(-np.log10(max(p, 1e-300)))
    else:
        tau = hard_threshold(code.n, config.alpha, 1)
        d = int(statistics["disagreements"]) if consistent else code.n
        accepted = d <= tau
        score = float(-d)
    shift = int(np.abs(statistics["offsets"]).max()) if len(statistics["offsets"]) else 0
    return {"accepted": bool(accepted), "message": int(statistics["message"]), "score": score, "shift": shift}


def not_watermarked(reason: str) -> dict:
    return {"accepted": False, "message": -1, "score": float("-inf"), "shift": 0, "reason": reason}


def brew_detect(ids: np.ndarray, green: np.ndarray, code: BCHCode, config: BrewConfig) -> dict:
    """Full BREW detection on one text (ids (T+1,)). Texts with fewer than
    config.min_tokens scoreable tokens (any language the vocabulary does not cover, very
    short text) return "not watermarked" with a reason instead of raising."""
    scored = score_text(ids, green)
    if int(scored.scoreable.sum()) < config.min_tokens:
        return not_watermarked(f"only {int(scored.scoreable.sum())} scoreable tokens "
                               f"(< {config.min_tokens}): too short or outside the vocabulary")
    if config.vote_mode == "per_copy" and scored.length < 2 * code.n * config.block_length:
        return not_watermarked(f"per_copy voting needs >= 2 codeword copies "
                               f"({2 * code.n * config.block_length} tokens), text has {scored.length}")
    if config.sync == "per_block":
        statistics = brew_resync_statistics(scored, code, config, config.max_shift)
        return {**brew_resync_decide(statistics, code, config), "reason": "decided"}
    shifts = np.arange(-config.max_shift, config.max_shift + 1)
    statistics = brew_shift_statistics(scored, code, config, shifts)
    return {**brew_decide(statistics, code, config), "reason": "decided"}


# ----------------------------------------------------------------------------- baselines
def ecc_extract(scored: ScoredText, code: BCHCode, block_length: int, key: int) -> dict:
    """Decoding-centric ECC extractor (prior work): every token votes for its block at
    shift 0, ties broken by a keyed fair coin, the n-bit word is BCH-decoded.

    Returns decoded (bounded-distance success), corrected (bit flips, -1 on failure),
    message_bdd (decoded message, -1 on failure), message_nearest (ML decoding, always),
    nearest_distance, margin (mean over blocks of |vote| / tokens in the block)."""
    n = code.n
    blocks = (np.arange(scored.length) // block_length) % n
    votes, counts = _block_votes(scored.green_bit, scored.scoreable, blocks, n)
    coin = (keyed_hash(key ^ 0x3C3C3C3C, np.arange(n)) & np.uint64(1)).astype(np.uint8)
    word = np.where(votes > 0, 1, np.where(votes < 0, 0, coin)).astype(np.uint8)
    decoded = code.decode(word)
    nearest = code.nearest_codeword(word)
    margin = float(np.mean(np.abs(votes) / np.maximum(counts, 1)))
    success = bool(decoded["success"][0])
    return {"decoded": success, "corrected": int(decoded["corrected"][0]),
            "message_bdd": int(bits_to_message(decoded["message"][0])) if success else -1,
            "message_nearest": int(bits_to_message(nearest["message"][0])),
            "nearest_distance": int(nearest["distance"][0]), "margin": margin}


def kgw_detect(scored: ScoredText, gamma: float, alpha: float) -> dict:
    """Zero-bit KGW z-test over first occurrences of (prev, token) pairs; accept iff the
    exact binomial p-value P(Bin(N, gamma) >= hits) <= alpha. score = z."""
    from scipy import stats

    keep = scored.scoreable & first_occurrence(scored.pair)
    total = int(keep.sum())
    hits = int(scored.green_bit[keep].sum())
    if total == 0:
        return {"accepted": False, "score": float("-inf"), "p_value": 1.0}
    z = (hits - gamma * total) / np.sqrt(total * gamma * (1 - gamma))
    p = float(stats.binom.sf(hits - 1, total, gamma))
    return {"accepted": p <= alpha, "score": float(z), "p_value": p}


def mpac_detect(ids: np.ndarray, scored: ScoredText, allocation: np.ndarray, k: int, gamma: float,
                alpha: float) -> dict:
    """MPAC-lite decoding: per message position j, count G1 vs G0 tokens allocated to j;
    m_j = 1 iff more G1. Score = z of the summed max counts (MPAC's statistic; its null is not
    Bin(N, gamma) because of the max, hence the empirical calibration downstream)."""
    from scipy import stats

    keep = scored.scoreable & first_occurrence(scored.pair)
    prev = np.asarray(ids, dtype=np.int64)[:-1][keep]
    positions = allocation[prev]
    ones = np.bincount(positions, weights=scored.green_bit[keep].astype(float), minlength=k)
    totals = np.bincount(positions, minlength=k).astype(float)
    zeros = totals - ones
    bits = (ones > zeros).astype(np.uint8)
    total = float(totals.sum())
    if total == 0:
        return {"accepted": False, "score": float("-inf"), "message": -1}
    z = (np.maximum(ones, zeros).sum() - gamma * total) / np.sqrt(total * gamma * (1 - gamma))
    return {"accepted": bool(z >= stats.norm.isf(alpha)), "score": float(z),
            "message": int(bits_to_message(bits))}


def hit_rate(favoured: np.ndarray) -> float:
    """Fraction of generated tokens in their favoured half (unattacked watermark strength)."""
    favoured = np.asarray(favoured)
    return float(favoured.mean()) if favoured.size else float("nan")
