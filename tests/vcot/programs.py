"""Small hand-written MiniVerus programs shared by the vcot tests (canonical text)."""

LOOP = """fn walk(n: int) -> (r: int)
    requires
        n >= 0,
    ensures
        r <= n,
{
    let mut i = 0;
    let mut j = 0;
    while i < n
        invariant
            0 <= i <= n,
            j == i,
            j <= n,
    {
        i = i + 1;
        j = j + 1;
    }
    return j;
}
"""

TRI = """spec fn tri(n: int) -> int
    decreases n
{
    if n <= 0 { 0 } else { tri(n - 1) + n }
}
"""

UNFOLD = TRI + """
fn one() -> (r: int)
    ensures
        r == 1,
{
    assert(tri(0) == 0);
    return tri(1);
}
"""

BY = TRI + """
fn one() -> (r: int)
    ensures
        r == 1,
{
    assert(tri(1) >= 0) by {
        assert(tri(0) == 0);
    }
    return tri(1);
}
"""

TWO_ASSERTS = """fn g(x: int, y: int) -> (r: int)
    requires
        x > 0,
        y > 0,
    ensures
        r > 1,
{
    let z = x + y;
    assert(x >= 1);
    assert(y >= 1);
    return z;
}
"""
