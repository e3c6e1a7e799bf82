"""BREW's detector on texts of any length (issue 46): clean watermarked texts whose length is not a
whole number of codeword cycles, truncated and extended texts, insertions and deletions. The
texts come from the method's own generator (generate_batch with brew_bit_schedule) over a random
bigram LM, BCH(31, 16), L = 16 (n·L = 496), as in the issue's measurement."""
from __future__ import annotations

import numpy as np
import pytest

from assets.brew import method as M
from assets.brew.bch import bits_to_message, make_code

V = 400
L = 16
TEXTS = 12
LONGEST = 1100


@pytest.fixture(scope="module")
def setup():
    """code, green, the bigram LM's rows, and TEXTS watermarked texts of LONGEST tokens."""
    rng = np.random.default_rng(46)
    code = make_code("bch31_16")
    green = M.green_matrix(7, V, 0.5)
    rows = rng.dirichlet(np.full(V, 0.3), size=V)             # a random bigram LM
    messages = rng.integers(0, 2, (TEXTS, code.k)).astype(np.uint8)
    codewords = code.encode(messages)
    out = M.generate_batch(lambda u, v: rows[v], rng.integers(3, V, (TEXTS, 2)), LONGEST, green,
                           M.brew_bit_schedule(codewords, L), 2.5, rng)
    return {"code": code, "green": green, "rows": rows, "ids": out["ids"], "rng": rng,
            "truth": bits_to_message(messages).astype(int)}


def _outcomes(texts, setup, sync: str, max_shift: int = 4) -> tuple[int, int]:
    """(# accepted with the right message, # accepted with a wrong one) over `texts`."""
    config = M.BrewConfig(block_length=L, sync=sync, max_shift=max_shift)
    right = wrong = 0
    for ids, truth in zip(texts, setup["truth"]):
        out = M.brew_detect(np.asarray(ids), setup["green"], setup["code"], config)
        right += out["accepted"] and out["message"] == truth
        wrong += out["accepted"] and out["message"] != truth
    return right, wrong


@pytest.mark.parametrize("sync", ["per_block", "global"])
@pytest.mark.parametrize("length", [496, 508, 520, 560, 700, 992, 1000])
def test_clean_text_of_any_length_is_read_with_its_message(setup, sync, length):
    """The generator writes block b(i) = (i // L) mod n at any length: an unedited text of T
    tokens, whole cycles or not, is accepted with its own message and never with another."""
    right, wrong = _outcomes(setup["ids"][:, : length + 1], setup, sync)
    assert wrong == 0 and right == TEXTS, (right, wrong)


def _insert(ids: np.ndarray, rate: float, rng) -> np.ndarray:
    """Random tokens inserted at round(rate · T) uniform places after the context token."""
    tokens = list(ids[1:])
    for _ in range(int(round(rate * len(tokens)))):
        tokens.insert(int(rng.integers(1, len(tokens) + 1)), int(rng.integers(3, V)))
    return np.array([ids[0], *tokens])


def _delete(ids: np.ndarray, rate: float, rng) -> np.ndarray:
    tokens = list(ids[1:])
    for _ in range(int(round(rate * len(tokens)))):
        tokens.pop(int(rng.integers(0, len(tokens))))
    return np.array([ids[0], *tokens])


@pytest.mark.parametrize("length", [420, 530, 610, 777, 850, 1030, 1100])
def test_more_lengths_that_are_not_whole_cycles(setup, length):
    for sync in ("per_block", "global"):
        right, wrong = _outcomes(setup["ids"][:, : length + 1], setup, sync)
        assert wrong == 0 and right == TEXTS, (sync, right, wrong)


@pytest.mark.parametrize("k", [1, 3, 4])
def test_a_few_tokens_dropped_or_added_at_the_front(setup, k):
    """A phase offset of k <= S tokens (dropped, or unwatermarked ones prepended): both readings
    follow it (window shifting / one global shift) and name the right message."""
    rng = np.random.default_rng(k)
    dropped = [np.concatenate([ids[:1], ids[1 + k: 497]]) for ids in setup["ids"]]
    prepended = [np.concatenate([ids[:1], rng.integers(3, V, k), ids[1:497]]) for ids in setup["ids"]]
    for texts in (dropped, prepended):
        for sync in ("per_block", "global"):
            right, wrong = _outcomes(texts, setup, sync)
            assert wrong == 0 and right == TEXTS, (sync, right, wrong)


@pytest.mark.parametrize("k", [16, 100, 200])
def test_tail_dropped_or_unwatermarked_tail_appended(setup, k):
    """Dropping the last k tokens of a whole cycle or appending k unwatermarked ones keeps the
    phase: never a wrong message, and the right one (a 296-token text still writes 18.5 of the
    31 blocks: 12.5 unwritten blocks > 2t, so it may not be identifiable and is then rejected)."""
    rng = np.random.default_rng(k)
    cut = [ids[: 497 - k] for ids in setup["ids"]]
    extended = [np.concatenate([ids[:497], rng.integers(3, V, k)]) for ids in setup["ids"]]
    for name, texts in (("cut", cut), ("extended", extended)):
        for sync in ("per_block", "global"):
            right, wrong = _outcomes(texts, setup, sync)
            assert wrong == 0, (name, sync, right, wrong)
            if name == "extended" or 496 - k >= (setup["code"].n - 2 * setup["code"].t) * L:
                assert right == TEXTS, (name, sync, right, wrong)


@pytest.mark.parametrize("edit,rate", [("insert", 0.01), ("insert", 0.02), ("insert", 0.05), ("insert", 0.10),
                                       ("delete", 0.02), ("delete", 0.05), ("delete", 0.10)])
def test_insertions_and_deletions_never_name_a_wrong_message(setup, edit, rate):
    """Spread random insertions/deletions on whole-cycle texts: the per-block reading never
    accepts a wrong message and, at rates up to 5 %, names the right one (at most one miss)."""
    rng = np.random.default_rng(int(rate * 1000) + (edit == "delete"))
    attack = _insert if edit == "insert" else _delete
    for length in (496, 992):
        texts = [attack(ids[: length + 1], rate, rng) for ids in setup["ids"]]
        right, wrong = _outcomes(texts, setup, "per_block")
        assert wrong == 0, (length, right, wrong)
        if rate <= 0.05:
            assert right >= TEXTS - 1, (length, right, wrong)


def test_cyclic_rotation_is_a_valid_watermark_of_another_message(setup):
    """Known limit of the scheme (not of the detector): BCH codes are cyclic and block b(i) =
    (i // L) mod n, so dropping the first j·L tokens leaves a text that is exactly a watermark
    of the message whose codeword is c rotated by j. Both readings name that message."""
    code, j = setup["code"], 2
    ids = setup["ids"][0]
    codeword = code.encode(((setup["truth"][0] >> np.arange(code.k)[::-1]) & 1).astype(np.uint8)[None])[0]
    assert int(bits_to_message(codeword[: code.k])) == setup["truth"][0]
    rotated = np.roll(codeword, -j)
    assert code.is_codeword(rotated[None])[0]
    for sync in ("per_block", "global"):
        out = M.brew_detect(np.concatenate([ids[:1], ids[1 + j * L: 497]]), setup["green"], code,
                            M.BrewConfig(block_length=L, sync=sync))
        assert out["accepted"] and out["message"] == int(bits_to_message(rotated[: code.k]))


def test_a_text_too_short_to_identify_the_message_is_rejected(setup):
    """160 tokens write 10 of the 31 blocks: 21 unwritten bits > 2t = 6, so many codewords agree
    with every observed bit. The detector says not watermarked rather than name one of them."""
    for sync in ("per_block", "global"):
        right, wrong = _outcomes(setup["ids"][:, :161], setup, sync)
        assert right == wrong == 0, (sync, right, wrong)


@pytest.mark.parametrize("sync", ["per_block", "global"])
def test_unwatermarked_text_of_any_length_keeps_the_nominal_fpr(setup, sync):
    """Uniformly random tokens of random lengths 400..1100 (a 60-word vocabulary: many repeated
    pairs) under fresh keys, as test_method's null test does for whole cycles: the FPR of the
    rule (length hypotheses and payload check included) stays at or below alpha (one-sided
    binomial bound over the trials)."""
    from scipy import stats

    rng = np.random.default_rng(7)
    code, trials, alpha = setup["code"], 300, 0.05
    config = M.BrewConfig(block_length=L, sync=sync, alpha=alpha)
    accepted = 0
    for trial in range(trials):
        green = M.green_matrix(900 + trial, 60, 0.5)
        ids = rng.integers(3, 60, int(rng.integers(400, LONGEST + 1)) + 1)
        accepted += M.brew_detect(ids, green, code, config)["accepted"]
    assert stats.binom.sf(accepted - 1, trials, alpha) > 1e-3, accepted
