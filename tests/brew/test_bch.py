"""The BCH code: known generator polynomials, minimum distances, decoding radius, the
two decoders agree, erasure decoding, and the false-decode rate on random words."""
from __future__ import annotations

from math import comb

import numpy as np
import pytest

from assets.brew.bch import BCHCode, bits_to_message, make_code, message_to_bits


@pytest.fixture(scope="module")
def bch31():
    return make_code("bch31_16")


@pytest.fixture(scope="module")
def bch15():
    return make_code("bch15_7")


def _with_errors(codewords, weights, rng):
    errors = np.zeros_like(codewords)
    for i, w in enumerate(weights):
        errors[i, rng.choice(codewords.shape[1], size=int(w), replace=False)] = 1
    return codewords ^ errors


def test_parameters_and_textbook_generator_polynomials(bch31, bch15):
    assert (bch31.n, bch31.k, bch31.t) == (31, 16, 3)
    assert (bch15.n, bch15.k, bch15.t) == (15, 7, 2)
    # Lin & Costello tables: g(x) of BCH(15,7) = 1 + x^4 + x^6 + x^7 + x^8 (octal 721);
    # BCH(31,16) has octal generator 107657
    assert bch15.generator == 0o721
    assert bch31.generator == 0o107657
    assert (make_code("hamming7_4").n, make_code("hamming7_4").k) == (7, 4)


@pytest.mark.parametrize("name,distance", [("bch15_7", 5), ("bch31_16", 7), ("hamming7_4", 3)])
def test_minimum_distance_is_the_designed_distance(name, distance):
    code = make_code(name)
    weights = code.codewords[1:].sum(axis=1)
    assert weights.min() == distance == 2 * code.t + 1


def test_round_trip_10k_messages_with_up_to_t_errors(bch31):
    rng = np.random.default_rng(0)
    messages = rng.integers(0, 2, (10_000, bch31.k)).astype(np.uint8)
    codewords = bch31.encode(messages)
    assert bch31.is_codeword(codewords).all()
    assert (codewords[:, : bch31.k] == messages).all()   # systematic
    weights = rng.integers(0, bch31.t + 1, len(messages))
    decoded = bch31.decode(_with_errors(codewords, weights, rng))
    assert decoded["success"].all()
    assert (decoded["message"] == messages).all()
    assert (decoded["corrected"] == weights).all()


def test_t_plus_one_errors_never_return_the_sent_message(bch31):
    rng = np.random.default_rng(1)
    messages = rng.integers(0, 2, (2000, bch31.k)).astype(np.uint8)
    decoded = bch31.decode(_with_errors(bch31.encode(messages), np.full(2000, bch31.t + 1), rng))
    recovered = decoded["success"] & (decoded["message"] == messages).all(axis=1)
    assert not recovered.any()
    assert (~decoded["success"]).any() and decoded["success"].any()  # fails or mis-corrects


@pytest.mark.parametrize("name", ["bch15_7", "bch31_16"])
def test_berlekamp_massey_agrees_with_syndrome_table(name):
    code = make_code(name)
    rng = np.random.default_rng(2)
    words = rng.integers(0, 2, (400, code.n)).astype(np.uint8)
    table = code.decode(words)
    for i in range(len(words)):
        ok, fixed = code.decode_algebraic(words[i])
        assert ok == bool(table["success"][i])
        if ok:
            assert (fixed == table["codeword"][i]).all()


def test_errors_and_erasures_within_the_radius(bch31):
    rng = np.random.default_rng(3)
    for errors in range(bch31.t + 1):
        erasures = 2 * (bch31.t - errors)    # 2e + f = 2t
        messages = rng.integers(0, 2, (300, bch31.k)).astype(np.uint8)
        words = _with_errors(bch31.encode(messages), np.full(300, errors), rng)
        mask = np.zeros_like(words, dtype=bool)
        for i in range(len(words)):
            mask[i, rng.choice(bch31.n, size=erasures, replace=False)] = True
        garbage = np.where(mask, rng.integers(0, 2, words.shape), words).astype(np.uint8)
        decoded = bch31.decode_with_erasures(garbage, mask)
        assert decoded["success"].all() and (decoded["message"] == messages).all()


def test_false_decode_probability_closed_form_and_monte_carlo(bch31, bch15):
    assert bch31.false_decode_probability() == pytest.approx(2**16 * (1 + 31 + comb(31, 2) + comb(31, 3)) / 2**31)
    assert bch31.false_decode_probability() == pytest.approx(0.15234375)
    assert bch15.false_decode_probability() == pytest.approx(0.47265625)
    assert make_code("hamming7_4").false_decode_probability() == 1.0   # perfect code
    rng = np.random.default_rng(4)
    words = rng.integers(0, 2, (20_000, bch31.n)).astype(np.uint8)
    rate = bch31.decode(words)["success"].mean()
    assert abs(rate - 0.15234375) < 4 * np.sqrt(0.152 * 0.848 / 20_000)


def test_nearest_codeword_is_a_minimum_distance_codeword(bch15):
    rng = np.random.default_rng(5)
    words = rng.integers(0, 2, (50, bch15.n)).astype(np.uint8)
    nearest = bch15.nearest_codeword(words)
    brute = (bch15.codewords[None, :, :] != words[:, None, :]).sum(axis=2).min(axis=1)
    assert (nearest["distance"] == brute).all()
    assert bch15.is_codeword(nearest["codeword"]).all()


def test_message_bits_round_trip_and_bad_messages(bch31):
    assert bits_to_message(message_to_bits(40961, 16)) == 40961
    with pytest.raises(ValueError, match="does not fit"):
        message_to_bits(1 << 16, 16)
    with pytest.raises(ValueError, match="exactly k=16"):
        bch31.encode(np.zeros(17, dtype=np.uint8))
    with pytest.raises(ValueError):
        BCHCode(m=5, t=0)
