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
