"""Δ_AB of interleaved comparisons: the definition, the user-clustered interval,
the sign test (against scipy's binomtest) and the degenerate cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps
from stats_helpers import assert_json_clean

from abeval.stats import InterleavingStats, compare_interleaved
from abeval.stats.interleaving import request_interval, sign_test

# three users: (wins, losses, ties)
WINS, LOSSES, TIES = [3, 0, 1], [1, 2, 1], [0, 2, 1]


def test_delta_follows_the_definition() -> None:
    result = compare_interleaved(InterleavingStats.from_users(WINS, LOSSES, TIES))
    # 4 wins, 4 losses, 3 ties: (4 + 1.5) / 11 − 0.5
    assert result.status == "ok"
    assert result.delta == pytest.approx(5.5 / 11 - 0.5)
    assert (result.wins, result.losses, result.ties, result.requests) == (4, 4, 3, 11)
    assert (result.users, result.users_a, result.users_b) == (3, 1, 1)
    assert result.preference_share == pytest.approx(0.5)


def test_interval_is_the_delta_method_over_users() -> None:
    rng = np.random.default_rng(1)
    w, lo, t = rng.poisson(2.0, 400), rng.poisson(1.5, 400), rng.poisson(0.5, 400)
    result = compare_interleaved(InterleavingStats.from_users(w, lo, t))
    keep = (w + lo + t) > 0
    w, lo, t = w[keep], lo[keep], t[keep]
    # the ratio of per-user sums Σ(w + t/2 − r/2) / Σr and its linearisation
    r = w + lo + t
    num = w + t / 2 - r / 2
    delta = num.sum() / r.sum()
    linear = (num - delta * r) / r.mean()
    se = linear.std(ddof=1) / math.sqrt(r.size)
    assert result.delta == pytest.approx(delta)
    assert result.std_error == pytest.approx(se, rel=1e-9)
    assert result.interval == pytest.approx((delta - 1.959964 * se, delta + 1.959964 * se))
    assert result.p_value == pytest.approx(2 * sps.norm.sf(abs(delta) / se))
    assert_json_clean(result.to_dict())


def test_from_sums_and_addition_agree_with_per_user_counts() -> None:
    rng = np.random.default_rng(2)
    w, lo, t = rng.poisson(1.0, 300), rng.poisson(1.2, 300), rng.poisson(0.3, 300)
    whole = InterleavingStats.from_users(w, lo, t)
    halves = InterleavingStats.from_users(
        w[:100], lo[:100], t[:100]
    ) + InterleavingStats.from_users(w[100:], lo[100:], t[100:])
    keep = (w + lo + t) > 0
    d, r = (w - lo)[keep], (w + lo + t)[keep]
    sums = InterleavingStats.from_sums(
        users=int(keep.sum()),
        wins=w.sum(),
        losses=lo.sum(),
        ties=t.sum(),
        users_a=(w > lo).sum(),
        users_b=(w < lo).sum(),
        sum_diff_squares=(d * d).sum(),
        sum_requests_squares=(r * r).sum(),
        sum_diff_requests=(d * r).sum(),
    )
    expected = compare_interleaved(whole)
    for other in (halves, sums):
        got = compare_interleaved(other)
        assert got.delta == pytest.approx(expected.delta)
        assert got.std_error == pytest.approx(expected.std_error, rel=1e-9)
        assert (got.users, got.users_a, got.users_b) == (
            expected.users,
            expected.users_a,
            expected.users_b,
        )


@given(st.integers(0, 400), st.integers(0, 400))
def test_sign_test_matches_scipy_binomtest(a: int, b: int) -> None:
    n = a + b
    got = sign_test(a, n)
    if n == 0:
        assert got is None
    else:
        assert got == pytest.approx(sps.binomtest(a, n, 0.5).pvalue, rel=1e-9, abs=1e-300)


def test_users_preferring_a_drive_the_sign_test() -> None:
    # 30 users prefer A, 10 prefer B, 5 are indifferent
    w = [2] * 30 + [0] * 10 + [1] * 5
    lo = [0] * 30 + [1] * 10 + [1] * 5
    result = compare_interleaved(InterleavingStats.from_users(w, lo, [0] * 45))
    assert result.preference_share == pytest.approx(0.75)
    assert result.sign_p_value == pytest.approx(sps.binomtest(30, 40).pvalue)


def test_request_interval_treats_requests_as_independent() -> None:
    w, lo, t = [5, 0, 2], [1, 3, 2], [2, 0, 1]
    scores = np.array([1.0] * 7 + [0.0] * 6 + [0.5] * 3)
    low, high = request_interval(InterleavingStats.from_users(w, lo, t))
    se = scores.std(ddof=1) / math.sqrt(scores.size)
    assert (low + high) / 2 == pytest.approx(scores.mean() - 0.5)
    assert (high - low) / 2 == pytest.approx(1.959964 * se, rel=1e-6)


def test_user_interval_covers_where_the_request_interval_does_not() -> None:
    """Users with their own preference (A for some, B for others, no preference
    overall) and many requests each: the clustered interval keeps ~95% coverage,
    the per-request one is far too narrow."""
    rng = np.random.default_rng(3)
    reps, users = 400, 300
    covered_user = covered_request = 0
    for _ in range(reps):
        lean = rng.uniform(0.1, 0.9, users)  # the user's P(A wins a decided request)
        r = 1 + rng.poisson(6, users)
        ties = rng.binomial(r, 0.1)
        w = rng.binomial(r - ties, lean)
        stats = InterleavingStats.from_users(w, r - ties - w, ties)
        low, high = compare_interleaved(stats).interval or (1.0, -1.0)
        covered_user += low <= 0 <= high
        low, high = request_interval(stats) or (1.0, -1.0)
        covered_request += low <= 0 <= high
    assert 0.92 <= covered_user / reps <= 0.98
    assert covered_request / reps < 0.85


@pytest.mark.parametrize(
    ("w", "lo", "t", "status"),
    [
        ([], [], [], "no_requests"),
        ([0, 0], [0, 0], [0, 0], "no_requests"),
        ([3], [1], [0], "too_few_users"),
        ([1, 2], [0, 0], [0, 0], "zero_variance"),
    ],
)
def test_degenerate_cases_are_a_status(
    w: list[int], lo: list[int], t: list[int], status: str
) -> None:
    result = compare_interleaved(InterleavingStats.from_users(w, lo, t))
    assert result.status == status
    assert result.message
    assert result.interval is None and result.p_value is None
    if status != "no_requests":
        assert result.delta is not None
    assert_json_clean(result.to_dict())


def test_negative_counts_are_invalid() -> None:
    stats = InterleavingStats.from_users([1, 2], [0, 1], [0, 0])
    bad = InterleavingStats(-1, 1, 0, 0, 0, 0, stats.per_user)
    assert compare_interleaved(bad).status == "invalid_input"
