"""Binary primitive narrow-sense BCH codes (pure numpy), written for BREW.

Conventions
-----------
A word is a length-n array of bits in {0, 1} (uint8). Array index ``i`` holds the
coefficient of ``x^(n-1-i)`` of the word polynomial. Encoding is *systematic*:

    c = [ m_0 .. m_{k-1} | p_0 .. p_{n-k-1} ],   c(x) = m(x) x^(n-k) + (m(x) x^(n-k) mod g(x))

so the first k bits of a codeword are the message. ``g(x)`` is the lcm of the minimal
polynomials of alpha^1 .. alpha^(2t) over GF(2), alpha a root of the primitive polynomial
of GF(2^m). BCH(31,16,t=3), BCH(15,7,t=2) and Hamming(7,4) = BCH(7,4,t=1) are built this way.

Two bounded-distance decoders are provided and cross-checked in the tests:

- ``decode_algebraic``: syndromes S_1..S_2t, Berlekamp–Massey, Chien search (one word);
- ``decode``: a coset-leader table indexed by the syndrome r(x) mod g(x) for every error
  pattern of weight <= t (vectorised over a batch of words; used by the detectors).

Both *fail* (rather than mis-correct silently) when the received word is farther than t
from every codeword; ``nearest_codeword`` is the always-accepting maximum-likelihood
(minimum Hamming distance) decoder, by brute force over all 2^k codewords (k <= 20).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from math import comb

import numpy as np

# primitive polynomials of GF(2^m) as bit masks (bit j = coefficient of x^j)
PRIMITIVE_POLYNOMIALS = {3: 0b1011, 4: 0b10011, 5: 0b100101, 6: 0b1000011, 7: 0b10001001}


class GaloisField:
    """GF(2^m) with exp/log tables; elements are ints in [0, 2^m)."""

    def __init__(self, m: int):
        if m not in PRIMITIVE_POLYNOMIALS:
            raise ValueError(f"GF(2^{m}) not supported (m in {sorted(PRIMITIVE_POLYNOMIALS)})")
        self.m = m
        self.order = (1 << m) - 1
        self.exp = np.zeros(2 * self.order, dtype=np.int64)
        self.log = np.full(1 << m, -1, dtype=np.int64)
        value = 1
        for power in range(self.order):
            self.exp[power] = value
            self.log[value] = power
            value <<= 1
            if value >> m:
                value ^= PRIMITIVE_POLYNOMIALS[m]
        self.exp[self.order:] = self.exp[: self.order]

    def mul(self, a: int, b: int) -> int:
        if a == 0 or b == 0:
            return 0
        return int(self.exp[(self.log[a] + self.log[b]) % self.order])

    def inv(self, a: int) -> int:
        if a == 0:
            raise ZeroDivisionError("0 has no inverse in GF(2^m)")
        return int(self.exp[(self.order - self.log[a]) % self.order])

    def power(self, exponent: int) -> int:
        """alpha^exponent."""
        return int(self.exp[exponent % self.order])


def _poly_mul_gf2(a: int, b: int) -> int:
    """Product of two GF(2)[x] polynomials given as bit masks."""
    out = 0
    while b:
        if b & 1:
            out ^= a
        a <<= 1
        b >>= 1
    return out


def _poly_mod_gf2(a: int, b: int) -> int:
    """a mod b in GF(2)[x] (bit masks)."""
    degree_b = b.bit_length() - 1
    while a and a.bit_length() - 1 >= degree_b:
        a ^= b << (a.bit_length() - 1 - degree_b)
    return a


def minimal_polynomial(field: GaloisField, power: int) -> int:
    """Minimal polynomial over GF(2) of alpha^power, as a bit mask: prod over the cyclotomic
    coset {power * 2^j mod (2^m - 1)} of (x - alpha^e)."""
    coset, e = [], power % field.order
    while e not in coset:
        coset.append(e)
        e = (2 * e) % field.order
    poly = [1]  # coefficients over GF(2^m), lowest degree first
    for e in coset:
        root = field.power(e)
        shifted = [0] + poly                      # x * poly
        scaled = [field.mul(root, c) for c in poly] + [0]  # root * poly
        poly = [a ^ b for a, b in zip(shifted, scaled)]
    if any(c not in (0, 1) for c in poly):
        raise ArithmeticError("minimal polynomial has coefficients outside GF(2)")
    return sum(c << j for j, c in enumerate(poly))


@dataclass
class BCHCode:
    """Binary BCH code of length n = 2^m - 1 designed to correct t errors.

    Attributes: n, k, t, generator (bit mask of g(x)), codewords (2^k, n) uint8 (lazily),
    plus the syndrome table used by ``decode``.
    """

    m: int
    t: int
    n: int = field(init=False)
    k: int = field(init=False)
    generator: int = field(init=False)

    def __post_init__(self):
        if self.t < 1:
            raise ValueError("t must be >= 1")
        self.field = GaloisField(self.m)
        self.n = self.field.order
        generator = 1
        seen: set[int] = set()
        for power in range(1, 2 * self.t + 1):
            poly = minimal_polynomial(self.field, power)
            if poly not in seen:
                seen.add(poly)
                generator = _poly_mul_gf2(generator, poly)
        self.generator = generator
        self.k = self.n - (generator.bit_length() - 1)
        if self.k < 1:
            raise ValueError(f"BCH(n={self.n}, t={self.t}) has no message bits")
        self.parity = self.n - self.k
        # rem_rows[i] = x^(n-1-i) mod g(x) as (n-k) bits, highest degree first
        self._rem_rows = np.array([self._bits(_poly_mod_gf2(1 << (self.n - 1 - i), generator), self.parity)
                                   for i in range(self.n)], dtype=np.uint8)
        self._weights = 1 << np.arange(self.parity - 1, -1, -1, dtype=np.int64)
        self._build_syndrome_table()
        self._codewords: np.ndarray | None = None
        self._codeword_ints: np.ndarray | None = None

    @staticmethod
    def _bits(value: int, width: int) -> list[int]:
        return [(value >> (width - 1 - j)) & 1 for j in range(width)]

    @property
    def name(self) -> str:
        return f"BCH({self.n},{self.k},t={self.t})"

    # ------------------------------------------------------------------ encoding
    def encode(self, messages: np.ndarray) -> np.ndarray:
        """Systematic encoding. messages: (k,) or (B, k) bits → codewords (n,) or (B, n)."""
        messages = np.asarray(messages)
        single = messages.ndim == 1
        batch = np.atleast_2d(messages)
        if batch.shape[1] != self.k:
            raise ValueError(f"{self.name} encodes messages of exactly k={self.k} bits, got {batch.shape[1]}")
        if not np.isin(batch, (0, 1)).all():
            raise ValueError("message bits must be 0 or 1")
        batch = batch.astype(np.uint8)
        # parity = (m(x) x^(n-k)) mod g(x): linear in m; rows of the message positions
        parity = (batch.astype(np.int64) @ self._rem_rows[: self.k]) % 2
        out = np.concatenate([batch, parity.astype(np.uint8)], axis=1)
        return out[0] if single else out

    def syndromes_int(self, words: np.ndarray) -> np.ndarray:
        """r(x) mod g(x) as an int in [0, 2^(n-k)) per word; 0 iff the word is a codeword."""
        words = np.atleast_2d(np.asarray(words, dtype=np.int64))
        remainder = (words @ self._rem_rows) % 2
        return remainder @ self._weights

    def is_codeword(self, words: np.ndarray) -> np.ndarray:
        return self.syndromes_int(words) == 0

    # ------------------------------------------------------------------ decoding
    def _build_syndrome_table(self) -> None:
        size = 1 << self.parity
        table = np.full(size, -1, dtype=np.int64)
        patterns = [np.zeros(self.n, dtype=np.uint8)]
        table[0] = 0
        for weight in range(1, self.t + 1):
            for positions in combinations(range(self.n), weight):
                pattern = np.zeros(self.n, dtype=np.uint8)
                pattern[list(positions)] = 1
                syndrome = int(self.syndromes_int(pattern)[0])
                if table[syndrome] != -1:
                    raise ArithmeticError(f"{self.name}: two error patterns of weight <= t share a syndrome")
                table[syndrome] = len(patterns)
                patterns.append(pattern)
        self._syndrome_table = table
        self._error_patterns = np.array(patterns, dtype=np.uint8)

    def decode(self, words: np.ndarray) -> dict[str, np.ndarray]:
        """Bounded-distance decoding of a batch. words: (B, n) or (n,) bits.

        Returns {"success": (B,) bool, "codeword": (B, n) uint8 (the received word where
        decoding failed), "message": (B, k), "corrected": (B,) number of flipped bits (-1 on
        failure)}.
        """
        words = np.atleast_2d(np.asarray(words, dtype=np.uint8))
        index = self._syndrome_table[self.syndromes_int(words)]
        success = index >= 0
        patterns = self._error_patterns[np.where(success, index, 0)]
        codeword = words ^ patterns
        corrected = np.where(success, patterns.sum(axis=1).astype(np.int64), -1)
        return {"success": success, "codeword": codeword, "message": codeword[:, : self.k],
                "corrected": corrected}

    def decode_with_erasures(self, words: np.ndarray, erasures: np.ndarray) -> dict[str, np.ndarray]:
        """Errors-and-erasures decoding by the two-fill trick (binary codes).

        Erased positions are filled with all 0 and all 1 and both are decoded; when
        2e + f <= 2t one fill has at most t errors, so the true codeword is among the
        successes. The success closest to the word on the *unerased* positions wins.
        words, erasures: (B, n) bits / bools. Same outputs as ``decode``; "corrected" counts
        disagreements on unerased positions plus the erasures (f).
        """
        words = np.atleast_2d(np.asarray(words, dtype=np.uint8))
        erasures = np.atleast_2d(np.asarray(erasures, dtype=bool))
        results = [self.decode(np.where(erasures, fill, words).astype(np.uint8)) for fill in (0, 1)]
        distances = []
        for r in results:
            d = ((r["codeword"] != words) & ~erasures).sum(axis=1)
            distances.append(np.where(r["success"], d, np.iinfo(np.int64).max))
        pick_one = distances[1] < distances[0]
        codeword = np.where(pick_one[:, None], results[1]["codeword"], results[0]["codeword"])
        success = results[0]["success"] | results[1]["success"]
        distance = np.minimum(distances[0], distances[1])
        corrected = np.where(success, distance + erasures.sum(axis=1), -1)
        return {"success": success, "codeword": codeword, "message": codeword[:, : self.k],
                "corrected": corrected}

    def decode_algebraic(self, word: np.ndarray) -> tuple[bool, np.ndarray]:
        """Berlekamp–Massey + Chien search on one word (reference decoder).

        Returns (success, codeword). Fails when the error locator's degree exceeds t or it
        does not have exactly deg(Lambda) distinct roots among the code positions.
        """
        F = self.field
        word = np.asarray(word, dtype=np.uint8)
        degrees = self.n - 1 - np.nonzero(word)[0]
        syndromes = [0] * (2 * self.t)
        for j in range(1, 2 * self.t + 1):
            s = 0
            for d in degrees:
                s ^= F.power(j * int(d))
            syndromes[j - 1] = s
        if not any(syndromes):
            return True, word.copy()
        # Berlekamp–Massey over GF(2^m): connection polynomial C (lowest degree first)
        C, B = [1], [1]
        L, shift, b = 0, 1, 1
        for step in range(2 * self.t):
            d = syndromes[step]
            for i in range(1, L + 1):
                if i < len(C):
                    d ^= F.mul(C[i], syndromes[step - i])
            if d == 0:
                shift += 1
                continue
            coef = F.mul(d, F.inv(b))
            T = C[:]
            need = len(B) + shift
            if len(C) < need:
                C = C + [0] * (need - len(C))
            for i, bi in enumerate(B):
                C[i + shift] ^= F.mul(coef, bi)
            if 2 * L <= step:
                L, B, b, shift = step + 1 - L, T, d, 1
            else:
                shift += 1
        while len(C) > 1 and C[-1] == 0:
            C.pop()
        if L > self.t or len(C) - 1 != L:
            return False, word.copy()
        # Chien search: error at degree d iff Lambda(alpha^-d) == 0
        error_degrees = []
        for d in range(self.n):
            x = F.power(-d)
            value, x_power = 0, 1
            for c in C:
                value ^= F.mul(c, x_power)
                x_power = F.mul(x_power, x)
            if value == 0:
                error_degrees.append(d)
        if len(error_degrees) != L:
            return False, word.copy()
        fixed = word.copy()
        for d in error_degrees:
            fixed[self.n - 1 - d] ^= 1
        return True, fixed

    # ------------------------------------------------------------------ ML decoding
    @property
    def codewords(self) -> np.ndarray:
        """All 2^k codewords (2^k, n), message i in big-endian bit order at row i."""
        if self._codewords is None:
            if self.k > 20:
                raise ValueError(f"{self.name}: 2^k codewords are too many to enumerate")
            messages = ((np.arange(1 << self.k)[:, None] >> np.arange(self.k - 1, -1, -1)) & 1).astype(np.uint8)
            self._codewords = self.encode(messages)
            self._codeword_ints = _pack(self._codewords)
        return self._codewords

    def nearest_codeword(self, words: np.ndarray, erasures: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Minimum-Hamming-distance decoding (always "succeeds"); ties → lowest message.

        Distance counts only unerased positions. Returns {"codeword", "message", "distance"}.
        """
        words = np.atleast_2d(np.asarray(words, dtype=np.uint8))
        erasures = np.zeros_like(words, dtype=bool) if erasures is None else np.atleast_2d(erasures)
        codewords = self.codewords
        packed_words = _pack(words)
        keep = _pack((~erasures).astype(np.uint8))
        best = np.empty(len(words), dtype=np.int64)
        distance = np.empty(len(words), dtype=np.int64)
        for i in range(len(words)):
            d = np.bitwise_count((self._codeword_ints ^ packed_words[i]) & keep[i])
            best[i] = int(np.argmin(d))
            distance[i] = int(d[best[i]])
        codeword = codewords[best]
        return {"codeword": codeword, "message": codeword[:, : self.k], "distance": distance}

    # ------------------------------------------------------------------ analytics
    def false_decode_probability(self) -> float:
        """P(a uniformly random n-bit word lies within distance t of some codeword)
        = 2^k V(n, t) / 2^n — the bounded-distance decoder's acceptance rate on noise."""
        volume = sum(comb(self.n, j) for j in range(self.t + 1))
        return float((1 << self.k) * volume / (1 << self.n))

    def false_decode_probability_within(self, e: int) -> float:
        """Same, for a decoder that only accepts words within distance e <= t."""
        volume = sum(comb(self.n, j) for j in range(min(e, self.t) + 1))
        return float((1 << self.k) * volume / (1 << self.n))


def _pack(bits: np.ndarray) -> np.ndarray:
    """(B, n) bits (n <= 63) → (B,) uint64, first bit most significant."""
    bits = np.atleast_2d(bits).astype(np.uint64)
    n = bits.shape[1]
    if n > 63:
        raise ValueError("packing supports n <= 63")
    weights = (np.uint64(1) << np.arange(n - 1, -1, -1, dtype=np.uint64))
    return (bits * weights).sum(axis=1, dtype=np.uint64)


CODES = {"bch31_16": (5, 3), "bch15_7": (4, 2), "hamming7_4": (3, 1)}


def make_code(name: str) -> BCHCode:
    """A named code: "bch31_16" (default), "bch15_7" (small), "hamming7_4" (perfect)."""
    if name not in CODES:
        raise ValueError(f"unknown code {name!r}; choose one of {sorted(CODES)}")
    m, t = CODES[name]
    return BCHCode(m=m, t=t)


def message_to_bits(message: int, k: int) -> np.ndarray:
    """Integer message → k bits (big endian); raises if it does not fit in k bits."""
    if message < 0 or message >= (1 << k):
        raise ValueError(f"message {message} does not fit in k={k} bits")
    return np.array([(message >> (k - 1 - j)) & 1 for j in range(k)], dtype=np.uint8)


def bits_to_message(bits: np.ndarray) -> np.ndarray:
    """(B, k) or (k,) bits → integer message(s)."""
    bits = np.asarray(bits, dtype=np.int64)
    k = bits.shape[-1]
    return (bits * (1 << np.arange(k - 1, -1, -1))).sum(axis=-1)
