"""The A/B harness's sign test (``benchmarks.bench_close.sign_test``): an even split of better
and worse searches says nothing, an uneven one is rare when a change does nothing."""

from __future__ import annotations

import math

from benchmarks.bench_close import sign_test


def test_the_sign_test_reads_the_split_not_the_sums() -> None:
    """Tests the two-sided p-values against the binomial distribution written out: an even
    split (and no decided pair) gives 1, 36 better against 14 worse is below 1% either way
    round, and 17 against 13 is far from it."""

    def exact(k: int, n: int) -> float:
        tail = sum(math.comb(n, i) for i in range(0, min(k, n - k) + 1)) / 2**n
        return min(1.0, 2 * tail)

    assert sign_test(31, 31) == 1.0 and sign_test(0, 0) == 1.0
    for better, worse in ((36, 14), (14, 36), (17, 13), (16, 40), (3, 0)):
        assert math.isclose(sign_test(better, worse), exact(better, better + worse), rel_tol=1e-9)
    assert sign_test(36, 14) < 0.01 and sign_test(17, 13) > 0.5
