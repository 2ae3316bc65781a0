"""Interleaved comparisons of two rankers A and B: the preference Δ_AB.

In an interleaved experiment every user sees lists merged from both rankers
(team draft) and each click (or purchase) is credited to the ranker that
contributed the item. A request with at least one credited click is a *win* for
A when A's items got more credit, a *loss* when B's did, a *tie* otherwise.
Chapelle, Joachims, Radlinski and Yue (2012, "Large-scale validation and
analysis of interleaved search evaluation", ACM TOIS 30(1)) define::

    Δ_AB = (wins + ties/2) / (wins + losses + ties) − 0.5

positive when A is preferred. Requests of one user are correlated, so the
interval treats **users** as the unit. Per user u with w_u wins, l_u losses and
t_u ties, let ``m_u = w_u + t_u/2 − r_u/2 = (w_u − l_u)/2`` and ``d_u = r_u =
w_u + l_u + t_u``; then Δ_AB = Σm / Σd, a ratio of per-user sums, whose variance
follows from the delta method over users (the linearisation ``(m_u − Δ·d_u)/d̄``;
Deng, Knoblich and Lu 2018, "Applying the delta method in metric analytics"),
computed by :class:`~abeval.stats.sufficient.RatioStats`. The interval is
Δ ± z·se with the normal quantile, clipped at Δ's range [−1/2, 1/2] (which only
a handful of users reaches); the p-value is the two-sided normal one.

The per-user preference share (users whose requests favour A, ``w_u > l_u``,
among users with a preference either way) comes with an exact two-sided sign test
(a binomial test of the share against 1/2).

:func:`request_interval` is the naive interval that takes every request as an
independent trial; it ignores the clustering of requests within users and is
kept only to show, in the benchmark, what treating users as the unit corrects.

Inputs are sufficient statistics that add (:class:`InterleavingStats`, ``a + b``
merges disjoint groups of users), so shards and days merge by ``+``. Degenerate
inputs give a ``status`` and ``None`` in place of undefined numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal, SupportsFloat

from abeval.stats.distributions import binom_cdf, norm_isf, norm_sf
from abeval.stats.results import JsonResult
from abeval.stats.sufficient import RatioStats

InterleavingStatus = Literal[
    "ok",
    "invalid_input",  # a count is negative or not finite
    "no_requests",  # no request has a credited click
    "too_few_users",  # one user: no variance across users
    "zero_variance",  # every user has the same preference: no interval, no test
]


@dataclass(frozen=True)
class InterleavingStats:
    """Per-user sums of an interleaved comparison (users with ≥ 1 decided request).

    ``users`` counts users with at least one request with a credited click;
    ``wins``/``losses``/``ties`` count such requests (A's wins, A's losses);
    ``users_a``/``users_b`` count users with more wins than losses (A preferred)
    and more losses than wins. ``per_user`` holds the ratio's per-user sums:
    numerator ``(w_u − l_u)/2``, denominator ``w_u + l_u + t_u``.
    """

    users: int
    wins: int
    losses: int
    ties: int
    users_a: int
    users_b: int
    per_user: RatioStats

    @classmethod
    def from_sums(
        cls,
        *,
        users: SupportsFloat,
        wins: SupportsFloat,
        losses: SupportsFloat,
        ties: SupportsFloat,
        users_a: SupportsFloat,
        users_b: SupportsFloat,
        sum_diff_squares: SupportsFloat,
        sum_requests_squares: SupportsFloat,
        sum_diff_requests: SupportsFloat,
    ) -> InterleavingStats:
        """From the sums an engine returns: the counts, Σ(w−l)², Σr², Σ(w−l)·r over users."""
        n = int(float(users))
        w, lo, t = int(float(wins)), int(float(losses)), int(float(ties))
        per_user = RatioStats.from_sums(
            n,
            (w - lo) / 2,
            float(sum_diff_squares) / 4,
            w + lo + t,
            sum_requests_squares,
            float(sum_diff_requests) / 2,
        )
        return cls(n, w, lo, t, int(float(users_a)), int(float(users_b)), per_user)

    @classmethod
    def from_users(cls, wins: object, losses: object, ties: object) -> InterleavingStats:
        """From per-user counts of won, lost and tied requests (array-likes of equal
        length); users without a decided request are left out."""
        import numpy as np

        w = np.asarray(wins, dtype=np.int64).ravel()
        lo = np.asarray(losses, dtype=np.int64).ravel()
        t = np.asarray(ties, dtype=np.int64).ravel()
        r = w + lo + t
        keep = r > 0
        w, lo, t, r = w[keep], lo[keep], t[keep], r[keep]
        return cls(
            users=int(keep.sum()),
            wins=int(w.sum()),
            losses=int(lo.sum()),
            ties=int(t.sum()),
            users_a=int((w > lo).sum()),
            users_b=int((w < lo).sum()),
            per_user=RatioStats.from_values((w - lo) / 2, r),
        )

    @property
    def requests(self) -> int:
        """Requests with at least one credited click."""
        return self.wins + self.losses + self.ties

    def __add__(self, other: InterleavingStats) -> InterleavingStats:
        if not isinstance(other, InterleavingStats):
            return NotImplemented
        return InterleavingStats(
            self.users + other.users,
            self.wins + other.wins,
            self.losses + other.losses,
            self.ties + other.ties,
            self.users_a + other.users_a,
            self.users_b + other.users_b,
            self.per_user + other.per_user,
        )


@dataclass(frozen=True)
class InterleavingResult(JsonResult):
    """Δ_AB with its user-clustered interval, and the users' preference share."""

    status: InterleavingStatus
    message: str
    delta: float | None
    interval: tuple[float, float] | None
    std_error: float | None
    p_value: float | None
    confidence: float
    wins: int
    losses: int
    ties: int
    users: int
    requests: int
    users_a: int
    users_b: int
    #: users preferring A among users preferring either (None when none does)
    preference_share: float | None
    #: exact two-sided sign test of preference_share against 1/2
    sign_p_value: float | None


def sign_test(successes: int, trials: int) -> float | None:
    """Exact two-sided binomial test of ``successes`` in ``trials`` against p = 1/2.

    The distribution is symmetric, so the two-sided p-value (the probability of
    an outcome no more likely than the one observed) is twice the smaller tail,
    capped at 1. None when there is no trial.
    """
    if trials <= 0:
        return None
    k = min(successes, trials - successes)
    if 2 * k == trials:
        return 1.0
    return min(1.0, 2.0 * binom_cdf(k, trials, 0.5))


def compare_interleaved(
    stats: InterleavingStats, *, confidence: float = 0.95
) -> InterleavingResult:
    """Δ_AB, its user-clustered interval and p-value, and the sign test of users."""
    counts = (stats.users, stats.wins, stats.losses, stats.ties, stats.users_a, stats.users_b)
    preferring = stats.users_a + stats.users_b
    base = InterleavingResult(
        status="ok",
        message="",
        delta=None,
        interval=None,
        std_error=None,
        p_value=None,
        confidence=confidence,
        wins=stats.wins,
        losses=stats.losses,
        ties=stats.ties,
        users=stats.users,
        requests=stats.requests,
        users_a=stats.users_a,
        users_b=stats.users_b,
        preference_share=None,
        sign_p_value=None,
    )
    ratio = stats.per_user
    sums = (ratio.m_sum, ratio.m_ss, ratio.d_sum, ratio.d_ss, ratio.cross)
    if any(c < 0 for c in counts) or not all(math.isfinite(x) for x in sums):
        return replace(base, status="invalid_input", message="a count is negative or not finite")
    if stats.requests == 0:
        return replace(base, status="no_requests", message="no request has a credited click")
    share = stats.users_a / preferring if preferring else None
    delta = (stats.wins + stats.ties / 2) / stats.requests - 0.5
    decided = replace(
        base, delta=delta, preference_share=share, sign_p_value=sign_test(stats.users_a, preferring)
    )
    if stats.users < 2:
        return replace(
            decided, status="too_few_users", message="one user: no interval across users"
        )
    se = math.sqrt(ratio.variance / ratio.n)
    if se == 0:
        return replace(
            decided, status="zero_variance", message="every user has the same preference"
        )
    z = norm_isf((1 - confidence) / 2)
    return replace(
        decided,
        # Δ_AB lies in [−1/2, 1/2]: the normal interval is clipped at its range
        interval=(max(-0.5, delta - z * se), min(0.5, delta + z * se)),
        std_error=se,
        p_value=min(1.0, 2 * norm_sf(abs(delta) / se)),
    )


def request_interval(
    stats: InterleavingStats, *, confidence: float = 0.95
) -> tuple[float, float] | None:
    """The naive interval of Δ_AB that takes requests as independent trials.

    Each decided request scores 1 (win), 1/2 (tie) or 0 (loss); Δ_AB is the
    mean score − 1/2, with the variance of a mean of independent scores. It
    ignores that one user's requests are correlated: for contrast only.
    """
    n = stats.requests
    if n < 2:
        return None
    mean = (stats.wins + stats.ties / 2) / n
    second = (stats.wins + stats.ties / 4) / n
    variance = max(second - mean * mean, 0.0) * n / (n - 1)
    half = norm_isf((1 - confidence) / 2) * math.sqrt(variance / n)
    return (mean - 0.5 - half, mean - 0.5 + half)


def interleaving_users(
    delta: float,
    variance: float,
    decided_share: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float | None:
    """Users an interleaved comparison needs to detect a preference ``delta`` with
    probability ``power`` by the two-sided level-``alpha`` test of Δ_AB.

    Δ_AB's variance is ``variance / n`` over the n users with a decided request
    (``variance``: the per-user variance of its linearisation,
    :attr:`RatioStats.variance <abeval.stats.sufficient.RatioStats.variance>`), so
    n = (z₁₋α/₂ + z_power)² · variance / Δ², divided by ``decided_share``, the share
    of all users with a decided request. None when an input makes it undefined."""
    if not (delta != 0 and math.isfinite(delta)) or not (0 < decided_share <= 1):
        return None
    if not (math.isfinite(variance) and variance > 0):
        return None
    z = norm_isf(alpha / 2) + norm_isf(1 - power)
    return z * z * variance / (delta * delta) / decided_share


def detectable_delta(
    users: float,
    variance: float,
    decided_share: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float | None:
    """The smallest |Δ_AB| that ``users`` users (all of them, ``decided_share`` with a
    decided request) detect with probability ``power``: :func:`interleaving_users`
    solved for Δ."""
    n = users * decided_share
    if not (n > 0 and math.isfinite(variance) and variance > 0):
        return None
    z = norm_isf(alpha / 2) + norm_isf(1 - power)
    return z * math.sqrt(variance / n)
