"""MiniVerus program templates in four families mirroring Verus-Bench's sources (spec §5).

Each template ships executable code, its specification, loop invariants, at least one lemma
and the *original sparse hints* (a few asserts / lemma calls), with `$NAME` parameters
(constants, operators, an optional second loop or branch) that data.py samples. These are
written for this project: no program of the real VCoT-Bench / Verus-Bench is copied.
"""
from __future__ import annotations

from string import Template

FAMILIES = ("diffy", "mbpp", "clover", "bsearch")

# ----------------------------------------------------------------------------- diffy-like
# array set / conditional-update loops with prefix-quantified invariants

FILL_AFFINE = Template("""
spec fn val(i: int) -> int
{
    $K * i + $C
}

proof fn lemma_val_step(i: int)
    ensures
        val(i + 1) == val(i) + $K,
{
}

proof fn lemma_val_mono(i: int, j: int)
    requires
        i <= j,
    ensures
        val(i) <= val(j),
{
}

fn fill(a: &mut Vec<int>, n: int)
    requires
        old(a).len() == n,
    ensures
        a.len() == n,
        forall|k: int| 0 <= k < n ==> a[k] == $POST,
        n > 0 ==> val(0) <= val(n - 1),
{
    let mut i = 0;
    let mut v = $C;
    while i < n
        invariant
            0 <= i <= n,
            a.len() == n,
            v == val(i),
            forall|k: int| 0 <= k < i ==> a[k] == val(k),
    {
        a.set(i, v);
        proof {
            lemma_val_step(i);
        }
        v = v + $K;
        i = i + 1;
    }
    if n > 0 {
        proof {
            lemma_val_mono(0, n - 1);
        }
    }
    $SECOND
}
""")

CLAMP_LOOP = """
    let mut j = 0;
    while j < n
        invariant
            0 <= j <= n,
            a.len() == n,
            forall|k: int| 0 <= k < j ==> a[k] == clamp(val(k)),
            forall|k: int| j <= k < n ==> a[k] == val(k),
    {
        if a[j] > $T {
            a.set(j, $T);
        }
        j = j + 1;
    }
    assert(forall|k: int| 0 <= k < n ==> a[k] <= $T);
"""

CLAMP_SPEC = Template("""
spec fn clamp(x: int) -> int
{
    if x > $T { $T } else { x }
}

proof fn lemma_clamp_le(x: int)
    ensures
        clamp(x) <= $T,
{
}
""")

PATTERN_SET = Template("""
spec fn pat(i: int) -> int
{
    if i % 2 == 0 { $P0 } else { $P1 }
}

proof fn lemma_pat_period(i: int)
    ensures
        pat(i + 2) == pat(i),
{
    assert(i % 2 == (i + 2) % 2);
}

proof fn lemma_pat_range(i: int)
    ensures
        $LO <= pat(i) <= $HI,
{
}

fn set_pattern(a: &mut Vec<int>)
    ensures
        a.len() == old(a).len(),
        forall|k: int| 0 <= k < a.len() ==> a[k] == pat(k),
        forall|k: int| 0 <= k < a.len() ==> $LO <= a[k] <= $HI,
{
    let n = a.len();
    let mut i = 0;
    while i < n
        invariant
            0 <= i <= n,
            a.len() == n,
            forall|k: int| 0 <= k < i ==> a[k] == pat(k),
    {
        if i % 2 == 0 {
            a.set(i, $P0);
        } else {
            a.set(i, $P1);
        }
        i = i + 1;
    }
    assert forall|k: int| 0 <= k < n implies $LO <= a[k] <= $HI by {
        lemma_pat_range(k);
    }
}
""")

# ----------------------------------------------------------------------------- MBPP-like

COUNT = Template("""
spec fn count(a: Seq<int>, key: int, n: int) -> int
    decreases n
{
    if n <= 0 { 0 } else { count(a, key, n - 1) + (if a[n - 1] $OP key { 1 } else { 0 }) }
}

proof fn lemma_count_step(a: Seq<int>, key: int, n: int)
    requires
        0 <= n,
    ensures
        count(a, key, n + 1) == count(a, key, n) + (if a[n] $OP key { 1 } else { 0 }),
{
}

proof fn lemma_count_bound(a: Seq<int>, key: int, n: int)
    requires
        0 <= n,
    ensures
        0 <= count(a, key, n) <= n,
    decreases n
{
    if n > 0 {
        lemma_count_bound(a, key, n - 1);
    }
}

fn count_matches(a: &Vec<int>, key: int) -> (c: int)
    ensures
        c == count(a, key, a.len()),
        0 <= c <= a.len(),
{
    let mut i = 0;
    let mut c = 0;
    while i < a.len()
        invariant
            0 <= i <= a.len(),
            c == count(a, key, i),
    {
        if a[i] $OP key {
            c = c + 1;
        }
        proof {
            lemma_count_step(a, key, i);
        }
        i = i + 1;
    }
    proof {
        lemma_count_bound(a, key, a.len());
    }
    return c;
}
""")

FIND = Template("""
spec fn hit(x: int, key: int) -> bool
{
    x $OP key
}

proof fn lemma_hit_shift(x: int, key: int)
    ensures
        hit(x + $D, key + $D) == hit(x, key),
{
}

fn find_first(a: &Vec<int>, key: int) -> (r: int)
    ensures
        -1 <= r < a.len(),
        r >= 0 ==> hit(a[r], key),
        r >= 0 ==> forall|k: int| 0 <= k < r ==> !hit(a[k], key),
        r == -1 ==> forall|k: int| 0 <= k < a.len() ==> !hit(a[k], key),
{
    let mut i = 0;
    while i < a.len()
        invariant
            0 <= i <= a.len(),
            forall|k: int| 0 <= k < i ==> !hit(a[k], key),
    {
        if a[i] $OP key {
            assert(hit(a[i], key));
            return i;
        }
        i = i + 1;
    }
    return -1;
}
""")

ALL_BOUNDED = Template("""
spec fn ok(x: int) -> bool
{
    $LO <= x && x <= $HI
}

proof fn lemma_ok_widen(x: int)
    requires
        ok(x),
    ensures
        $LO - 1 <= x <= $HI + 1,
{
}

fn all_ok(a: &Vec<int>) -> (r: bool)
    ensures
        r == (forall|k: int| 0 <= k < a.len() ==> ok(a[k])),
{
    let mut i = 0;
    while i < a.len()
        invariant
            0 <= i <= a.len(),
            forall|k: int| 0 <= k < i ==> ok(a[k]),
    {
        if !(a[i] >= $LO && a[i] <= $HI) {
            assert(!ok(a[i]));
            return false;
        }
        i = i + 1;
    }
    return true;
}
""")

PAIR_SUM = Template("""
spec fn sum(a: Seq<int>, n: int) -> int
    decreases n
{
    if n <= 0 { 0 } else { sum(a, n - 1) + $W * a[n - 1] }
}

proof fn lemma_sum_step(a: Seq<int>, n: int)
    requires
        0 <= n,
    ensures
        sum(a, n + 1) == sum(a, n) + $W * a[n],
{
}

proof fn lemma_sum_zero(a: Seq<int>)
    ensures
        sum(a, 0) == 0,
{
}

fn pair_sum(a: &Vec<int>, m: int) -> (s: int)
    requires
        a.len() == 2 * m,
        0 <= m,
    ensures
        s == sum(a, 2 * m),
{
    let mut i = 0;
    let mut s = 0;
    proof {
        lemma_sum_zero(a);
    }
    while i < m
        invariant
            0 <= i <= m,
            a.len() == 2 * m,
            s == sum(a, 2 * i),
    {
        proof {
            lemma_sum_step(a, 2 * i);
            lemma_sum_step(a, 2 * i + 1);
        }
        s = s + $W * a[2 * i] + $W * a[2 * i + 1];
        i = i + 1;
    }
    return s;
}
""")

# ----------------------------------------------------------------------------- Clover-like

COPY_SCALE = Template("""
spec fn f(x: int) -> int
{
    $K * x + $C
}

proof fn lemma_f_inj(x: int, y: int)
    requires
        f(x) == f(y),
    ensures
        x == y,
{
}

fn copy_map(a: &Vec<int>, b: &mut Vec<int>)
    requires
        old(b).len() == a.len(),
    ensures
        b.len() == a.len(),
        forall|k: int| 0 <= k < a.len() ==> b[k] == f(a[k]),
{
    let n = a.len();
    let mut i = 0;
    while i < n
        invariant
            0 <= i <= n,
            n == a.len(),
            b.len() == n,
            forall|k: int| 0 <= k < i ==> b[k] == f(a[k]),
    {
        b.set(i, $K * a[i] + $C);
        i = i + 1;
    }
    $SECOND
}
""")

COPY_CHECK = """
    let mut j = 0;
    while j < n
        invariant
            0 <= j <= n,
            n == a.len(),
            b.len() == n,
            forall|k: int| 0 <= k < n ==> b[k] == f(a[k]),
    {
        assert(b[j] == f(a[j]));
        j = j + 1;
    }
"""

CONCAT = Template("""
spec fn shifted(a: Seq<int>, b: Seq<int>, n: int, k: int) -> int
{
    if k < n { a[k] } else { b[k - n] + $D }
}

proof fn lemma_shifted_left(a: Seq<int>, b: Seq<int>, n: int, k: int)
    requires
        k < n,
    ensures
        shifted(a, b, n, k) == a[k],
{
}

proof fn lemma_shifted_right(a: Seq<int>, b: Seq<int>, n: int, k: int)
    requires
        n <= k,
    ensures
        shifted(a, b, n, k) == b[k - n] + $D,
{
}

fn concat(a: &Vec<int>, b: &Vec<int>, c: &mut Vec<int>)
    requires
        old(c).len() == a.len() + b.len(),
    ensures
        c.len() == a.len() + b.len(),
        forall|k: int| 0 <= k < a.len() ==> c[k] == a[k],
        forall|k: int| 0 <= k < b.len() ==> c[a.len() + k] == b[k] + $D,
{
    let n = a.len();
    let m = b.len();
    let mut i = 0;
    while i < n
        invariant
            0 <= i <= n,
            n == a.len(),
            m == b.len(),
            c.len() == n + m,
            forall|k: int| 0 <= k < i ==> c[k] == a[k],
    {
        c.set(i, a[i]);
        i = i + 1;
    }
    let mut j = 0;
    while j < m
        invariant
            0 <= j <= m,
            n == a.len(),
            m == b.len(),
            c.len() == n + m,
            forall|k: int| 0 <= k < n ==> c[k] == a[k],
            forall|k: int| 0 <= k < j ==> c[n + k] == b[k] + $D,
    {
        c.set(n + j, b[j] + $D);
        proof {
            lemma_shifted_right(a, b, n, n + j);
        }
        j = j + 1;
    }
}
""")

ALT_SUM = Template("""
spec fn sgn(i: int) -> int
{
    if i % $M == 0 { 1 } else { -1 }
}

spec fn alt(a: Seq<int>, n: int) -> int
    decreases n
{
    if n <= 0 { $B } else { alt(a, n - 1) + (if (n - 1) % $M == 0 { a[n - 1] } else { -a[n - 1] }) }
}

proof fn lemma_alt_step(a: Seq<int>, n: int)
    requires
        0 <= n,
    ensures
        alt(a, n + 1) == alt(a, n) + (if n % $M == 0 { a[n] } else { -a[n] }),
{
}

proof fn lemma_alt_base(a: Seq<int>)
    ensures
        alt(a, 0) == $B,
{
}

fn alternating_sum(a: &Vec<int>) -> (s: int)
    ensures
        s == alt(a, a.len()),
{
    let mut i = 0;
    let mut s = $B;
    proof {
        lemma_alt_base(a);
    }
    while i < a.len()
        invariant
            0 <= i <= a.len(),
            s == alt(a, i),
    {
        proof {
            lemma_alt_step(a, i);
        }
        if i % $M == 0 {
            s = s + a[i];
        } else {
            s = s - a[i];
        }
        i = i + 1;
    }
    return s;
}
""")

# ----------------------------------------------------------------------------- binary search

BSEARCH = Template("""
spec fn sorted(a: Seq<int>, n: int) -> bool
{
    forall|i: int, j: int| 0 <= i <= j < n ==> a[i] $LE a[j]
}

proof fn lemma_mid(lo: int, hi: int)
    requires
        lo < hi,
    ensures
        lo <= lo + (hi - lo) / $DIV < hi,
{
}

proof fn lemma_sorted_below(a: Seq<int>, n: int, m: int, key: int)
    requires
        sorted(a, n),
        0 <= m < n,
        a[m] $LT key,
    ensures
        forall|k: int| 0 <= k <= m ==> a[k] $LT key,
{
}

fn search(a: &Vec<int>, key: int) -> (r: int)
    requires
        sorted(a, a.len()),
    ensures
        -1 <= r < a.len(),
        r >= 0 ==> a[r] == $KEY,
        r == -1 ==> forall|k: int| 0 <= k < a.len() ==> a[k] != $KEY,
{
    let n = a.len();
    let t = $KEY;
    let mut lo = 0;
    let mut hi = n;
    while lo < hi
        invariant
            0 <= lo <= hi <= n,
            n == a.len(),
            t == $KEY,
            sorted(a, n),
            forall|k: int| 0 <= k < lo ==> a[k] $LT t,
            forall|k: int| hi <= k < n ==> a[k] $GT t,
    {
        proof {
            lemma_mid(lo, hi);
        }
        let mid = lo + (hi - lo) / $DIV;
        if a[mid] == t {
            return mid;
        } else if a[mid] $LT t {
            proof {
                lemma_sorted_below(a, n, mid, t);
            }
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1;
}
""")
