"""Off-policy estimates from per-user sums (docs/metrics.md#off-policy-estimates).

Every estimator of the target's click-through rate here is a ratio of two sums
over the source arm's users, Σ_u x_u / Σ_u y_u, and so is the predicted lift
against the source's observed CTR. Their standard errors come from the delta
method on the per-user sums (users are the clusters: the randomisation unit),
which needs only the user count, the sum of each per-user variable and the sum
of each product of two of them (:class:`UserSums`).

The per-user variables (see :mod:`abeval.store.sql.ope_parts`): ``wc`` Σ w·c, ``w`` Σ w,
``n`` impressions, ``kc`` Σ min(w, λ)·c, ``k`` Σ min(w, λ), ``c`` clicks. Which
estimators are formed from them, and the click model each assumes, is
:mod:`abeval.stats.ope_ranking`.

Results are frozen; an undefined number is ``None`` with a ``status``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from abeval.stats.distributions import norm_isf
from abeval.stats.ope_ranking import (
    ASSUMPTIONS,
    ESTIMATORS,
    INFLUENCE_VARIABLES,
    USER_WEIGHTS,
    Term,
)
from abeval.stats.results import JsonResult, finite
from abeval.stats.skew_interval import hall_interval, influence_moments, triple, triples

OpeStatus = Literal[
    "ok",
    "no_data",
    "too_few_users",
    "zero_denominator",
    "zero_baseline",
    "out_of_range",
    "no_given_above",
    "incomplete_candidates",
]

#: Which interval an :class:`Interval` carries (docs/metrics.md#ope-intervals).
IntervalKind = Literal["normal", "skew_corrected"]
#: Which interval an estimate shows, and whether it can be relied on.
ShownInterval = Literal["normal", "skew_corrected", "unreliable"]


#: The share of users whose weighted clicks :class:`UserWeights` adds up.
TOP_USERS = 0.01
#: Below this effective number of users the normal interval is marked
#: unreliable: in simulation it covered 87-93% there (benchmarks/bench_ope.py,
#: docs/metrics.md#ope-intervals). Above this share of Σ w·c carried by the 1% of
#: users with the largest weights the estimate rests on a handful of users: a
#: warning (coverage did not fall with this share in the same simulation).
MIN_ESS_USERS = 40.0
MAX_TOP_SHARE = 0.5
#: Above this skewness of the mean of the per-user weights (their skewness over
#: √users) the normal interval is marked unreliable too: weights skewed enough
#: to do that undercovered at 2,000 users as well as at 200, where the effective
#: number of users stayed far above :data:`MIN_ESS_USERS`
#: (benchmarks/bench_ope_coverage.py, docs/metrics.md#ope-intervals).
MAX_MEAN_SKEW = 0.1


#: Name → variables of each Σ_u x_u·y_u·z_u the skewness-corrected intervals read
#: (the store's ``direction`` adds those whose variables the logs have).
PRODUCTS_OF_THREE: Mapping[str, tuple[str, str, str]] = {
    triple(*t): t for v in INFLUENCE_VARIABLES.values() for t in triples(v)
}


def cube(variable: str) -> str:
    """The name, in :attr:`UserSums.sums`, of Σ_u x_u³ of a per-user variable."""
    return f"{variable}^3"


#: Warning thresholds (docs/metrics.md#ope-diagnostics).
MIN_ESS_SHARE = 0.01
MEAN_WEIGHT_RANGE = (0.9, 1.1)
MAX_DEFICIT = 0.05


class UserSums(Protocol):
    """Sufficient statistics over users: the count, Σ x_u per variable and
    Σ x_u·y_u per pair of variables. They add over disjoint sets of users."""

    @property
    def users(self) -> int: ...
    @property
    def sums(self) -> Mapping[str, float]: ...
    @property
    def products(self) -> Mapping[tuple[str, str], float]: ...


def covariance(s: UserSums, x: str, y: str) -> float:
    """Sample covariance of the per-user values of ``x`` and ``y``."""
    p = s.products.get((x, y), s.products.get((y, x)))
    if p is None:
        raise KeyError(f"no product of {x} and {y}")
    m = s.users
    return (p - s.sums[x] * s.sums[y] / m) / (m - 1)


@dataclass(frozen=True)
class Interval(JsonResult):
    """A value with its delta-method standard error and 1 − α interval: the normal
    one (``kind`` ``normal``) or Hall's skewness-corrected one (``skew_corrected``,
    :func:`skew_corrected`). ``skewness`` is that of the per-user influence values
    (None when the store gave no sums of three products)."""

    value: float | None
    se: float | None
    ci: tuple[float, float] | None
    status: OpeStatus
    message: str
    skewness: float | None = None
    kind: IntervalKind = "normal"


def skew_corrected(iv: Interval, users: int, alpha: float) -> Interval | None:
    """``iv`` with Hall's (1992) skewness-corrected interval
    (:func:`abeval.stats.skew_interval.hall_interval`); None without a skewness."""
    if iv.value is None or iv.se is None or iv.skewness is None or users < 3:
        return None
    ci = hall_interval(iv.value, iv.se, iv.skewness, users, alpha)
    return replace(iv, ci=ci, kind="skew_corrected")


def log_linear(
    s: UserSums, powers: Mapping[str, int], alpha: float, offset: float = 0.0
) -> Interval:
    """``Π mean(x)^p − offset`` (a ratio of means when the powers are ±1) with its
    delta-method interval: the gradient is value · p / mean(x) per variable."""
    return monomials(s, (powers,), alpha, offset)


def monomials(s: UserSums, terms: Sequence[Term], alpha: float, offset: float = 0.0) -> Interval:
    """``Σ_t Π_x mean(x)^p_tx − offset`` (a sum of ratios of means) with its
    delta-method interval over users: the gradient of each term is its value ·
    p / mean(x) per variable, written so that a zero numerator mean is allowed."""
    if s.users == 0:
        return Interval(None, None, None, "no_data", "no users in the source arm")
    names = sorted({x for t in terms for x in t})
    means = {x: s.sums[x] / s.users for x in names}
    zero = [x for t in terms for x, p in t.items() if p < 0 and means[x] == 0]
    if zero:
        status: OpeStatus = "zero_baseline" if zero == ["c"] else "zero_denominator"
        return Interval(None, None, None, status, f"the sum of {zero[0]} is 0")
    try:
        f = sum(math.prod(means[x] ** p for x, p in t.items()) for t in terms)
        if s.users < 2:
            return Interval(f - offset, None, None, "too_few_users", "one user: no variance")
        grad = dict.fromkeys(names, 0.0)
        for t in terms:
            for x, p in t.items():
                grad[x] += (
                    p
                    * means[x] ** (p - 1)
                    * math.prod(means[y] ** q for y, q in t.items() if y != x)
                )
        used = [x for x in names if grad[x] != 0.0]
        var = sum(grad[x] * grad[y] * covariance(s, x, y) for x in used for y in used)
        moments = influence_moments(s.users, s.sums, s.products, {x: grad[x] for x in used})
    except OverflowError:  # a mean so near 0 that dividing by it leaves the doubles
        return Interval(None, None, None, "out_of_range", "a mean is too close to 0 to divide by")
    var /= s.users
    se = math.sqrt(max(var, 0.0))
    z = norm_isf(alpha / 2)
    value = f - offset
    gamma = None
    if moments is not None and moments[0] > 0:
        gamma = finite(moments[1] / moments[0] ** 1.5)
        # no n values have a skewness beyond √n: a larger one is rounding, not data
        if gamma is not None and abs(gamma) > math.sqrt(s.users):
            gamma = None
    return Interval(value, se, (value - z * se, value + z * se), "ok", "", gamma)


@dataclass(frozen=True)
class UserWeights(JsonResult):
    """An estimator's weights over users: the effective number of users
    (Σ_u w_u)² / Σ_u w_u² (Kish, w_u a user's sum of weights), its share of the
    users, the share of Σ w·c carried by the 1% of users with the largest w_u,
    the skewness of the w_u and of their mean (that over √users), and whether
    the normal interval can be relied on (``normal``) or not (``unreliable``:
    ``few_users`` below :data:`MIN_ESS_USERS` effective users, ``skewed`` above
    :data:`MAX_MEAN_SKEW` skewness of the mean); :func:`estimate_terms` turns
    ``unreliable`` into ``skew_corrected`` where :func:`shown_interval` says so."""

    ess_users: float | None
    ess_users_share: float | None
    top_share: float | None
    interval: ShownInterval
    skewness: float | None = None
    mean_skewness: float | None = None
    reasons: tuple[Literal["few_users", "skewed"], ...] = ()


def shown_interval(reasons: Sequence[str], corrected: bool) -> ShownInterval:
    """The interval an estimate shows (docs/metrics.md#ope-intervals): the normal one
    without a reason to doubt it; Hall's skewness-corrected one (when ``corrected``,
    i.e. the store gave its sums of three products) where only the weights'
    skewness fires; else the normal one marked unreliable (it and Hall's covered
    under 93% below :data:`MIN_ESS_USERS` effective users,
    benchmarks/bench_ope_coverage.py)."""
    if not reasons:
        return "normal"
    if tuple(reasons) == ("skewed",) and corrected:
        return "skew_corrected"
    return "unreliable"


def skewness(s: UserSums, x: str) -> float | None:
    """The sample skewness m₃ / m₂^1.5 of the per-user values of ``x`` (central
    moments with divisor n) from Σx, Σx², Σx³; None without Σx³ or variance."""
    n, cubed = s.users, s.sums.get(cube(x))
    square = s.products.get((x, x))
    if cubed is None or square is None or n < 3:
        return None
    m = s.sums[x] / n
    m2 = square / n - m * m
    m3 = cubed / n - 3 * m * square / n + 2 * m**3
    if m2 <= 1e-12 * max(square / n, 1e-300):
        return None
    return m3 / m2**1.5


def user_weights(s: UserSums, estimator: str, top: Mapping[str, float]) -> UserWeights | None:
    """:class:`UserWeights` of ``estimator`` from the per-user sums and ``top``
    (per weighted-click variable, its sum over the :data:`TOP_USERS` of users
    with the largest weights); None when the sums lack its variables."""
    w, wc = USER_WEIGHTS[estimator]
    if w not in s.sums or (w, w) not in s.products or not s.users:
        return None
    sw, sw2 = s.sums[w], s.products[(w, w)]
    ess = sw * sw / sw2 if sw2 > 0 else None
    total = s.sums.get(wc, 0.0)
    share = top[wc] / total if wc in top and total > 0 else None
    g = finite(skewness(s, w))
    mean_g = g / math.sqrt(s.users) if g is not None else None
    reasons: list[Literal["few_users", "skewed"]] = []
    if ess is not None and ess < MIN_ESS_USERS:
        reasons.append("few_users")
    if mean_g is not None and mean_g > MAX_MEAN_SKEW:
        reasons.append("skewed")
    return UserWeights(
        finite(ess),
        finite(ess / s.users if ess is not None else None),
        finite(share),
        "unreliable" if reasons else "normal",
        g,
        mean_g,
        tuple(reasons),
    )


@dataclass(frozen=True)
class Estimate(JsonResult):
    """One estimator of the target's CTR per impression from the source's logs,
    the lift it predicts over the source's observed CTR, and its error against
    the target's observed CTR (``relative_error`` = predicted / observed − 1).
    ``assumption`` is the click model under which it is unbiased
    (:data:`~abeval.stats.ope_ranking.ASSUMPTIONS`)."""

    estimator: str
    ctr: Interval
    predicted_lift: Interval
    relative_error: float | None
    assumption: str = "position_based"
    users: UserWeights | None = None


def _lift_terms(terms: Sequence[Term]) -> tuple[Term, ...]:
    """Each term times Σn / Σc (the source's observed CTR inverted)."""
    out = []
    for t in terms:
        powers = dict(t)
        for x, p in (("n", 1), ("c", -1)):
            powers[x] = powers.get(x, 0) + p
        out.append({x: p for x, p in powers.items() if p != 0})
    return tuple(out)


def estimate_terms(
    s: UserSums,
    estimator: str,
    terms: Sequence[Term],
    alpha: float,
    target_ctr: float | None = None,
    top: Mapping[str, float] | None = None,
) -> Estimate:
    """The estimate ``Σ_t Π mean^p`` of the target's CTR and its predicted relative
    lift, ``estimate / (Σc / Σn) − 1``, both clustered by user, with its weights
    over users (:func:`user_weights`, ``top`` as there)."""
    ctr = monomials(s, terms, alpha)
    lift = monomials(s, _lift_terms(terms), alpha, offset=1.0)
    error = None
    if ctr.value is not None and target_ctr:
        error = ctr.value / target_ctr - 1.0
    users = user_weights(s, estimator, top or {})
    if users is not None and users.reasons:
        hall_ctr = skew_corrected(ctr, s.users, alpha)
        hall_lift = skew_corrected(lift, s.users, alpha)
        if hall_ctr is not None and hall_lift is not None:
            users = replace(users, interval=shown_interval(users.reasons, True))
            if users.interval == "skew_corrected":
                ctr, lift = hall_ctr, hall_lift
    return Estimate(estimator, ctr, lift, finite(error), ASSUMPTIONS[estimator], users)


def estimate(
    s: UserSums,
    estimator: str,
    alpha: float,
    target_ctr: float | None = None,
    top: Mapping[str, float] | None = None,
) -> Estimate:
    """An estimator of :data:`~abeval.stats.ope_ranking.ESTIMATORS` and its
    predicted relative lift, ``estimate / (Σc / Σn) − 1``, both clustered by user."""
    num, den = ESTIMATORS[estimator]
    return estimate_terms(s, estimator, ({num: 1, den: -1},), alpha, target_ctr, top)


def estimates(
    s: UserSums, alpha: float, target_ctr: float | None, top: Mapping[str, float] | None = None
) -> tuple[Estimate, ...]:
    """Every estimator of :data:`~abeval.stats.ope_ranking.ESTIMATORS`."""
    return tuple(estimate(s, name, alpha, target_ctr, top) for name in ESTIMATORS)


def unavailable(estimator: str, status: OpeStatus, message: str) -> Estimate:
    """An estimator the logs cannot support (no step probabilities, say)."""
    none = Interval(None, None, None, status, message)
    return Estimate(estimator, none, none, None, ASSUMPTIONS[estimator])


def independent_lift(
    target: UserSums, source: UserSums, alpha: float, num: str = "c", den: str = "n"
) -> Interval:
    """Relative lift of two independent arms' ratios, target / source − 1, with the
    delta-method variance of each arm's ratio (the observed, online lift)."""
    t = log_linear(target, {num: 1, den: -1}, alpha)
    s = log_linear(source, {num: 1, den: -1}, alpha)
    if t.value is None or s.value is None:
        return Interval(None, None, None, t.status if t.value is None else s.status, "")
    if s.value == 0:
        return Interval(None, None, None, "zero_baseline", "the source's CTR is 0")
    f = t.value / s.value
    if t.se is None or s.se is None:
        return Interval(f - 1, None, None, "too_few_users", "one user: no variance")
    se = math.sqrt((t.se / s.value) ** 2 + (f * s.se / s.value) ** 2)
    z = norm_isf(alpha / 2)
    return Interval(f - 1, se, (f - 1 - z * se, f - 1 + z * se), "ok", "")


class WeightSumsLike(Protocol):
    """The source's weights at one position, and the target's probability mass
    there, all of it and on (item, position) pairs the source never showed (the
    store's per-position rows)."""

    @property
    def position(self) -> int | None: ...
    @property
    def impressions(self) -> int: ...
    @property
    def sum_w(self) -> float: ...
    @property
    def sum_w2(self) -> float: ...
    @property
    def max_w(self) -> float | None: ...
    @property
    def capped(self) -> int: ...
    @property
    def target_mass(self) -> float: ...
    @property
    def unseen_mass(self) -> float: ...


@dataclass(frozen=True)
class Diagnostics(JsonResult):
    """How trustworthy the weights are (docs/metrics.md#ope-diagnostics)."""

    position: int | None
    impressions: int
    mean_weight: float | None
    ess: float | None
    ess_share: float | None
    max_weight: float | None
    capped_share: float | None
    support_deficit: float | None
    warnings: tuple[str, ...]


def diagnose(position: int | None, parts: Sequence[WeightSumsLike]) -> Diagnostics:
    """Over ``parts`` (one position, or all of them with ``position`` None): mean
    weight, effective sample size (Σw)²/Σw² and its share of N, largest weight,
    share capped, support deficit; with the warnings they call for."""
    n = sum(p.impressions for p in parts)
    sum_w = sum(p.sum_w for p in parts)
    sum_w2 = sum(p.sum_w2 for p in parts)
    maxima = [p.max_w for p in parts if p.max_w is not None]
    target_mass = sum(p.target_mass for p in parts)
    mean = sum_w / n if n else None
    ess = sum_w**2 / sum_w2 if sum_w2 > 0 else None
    share = ess / n if ess is not None and n else None
    unseen = sum(p.unseen_mass for p in parts)
    deficit = unseen / target_mass if target_mass > 0 else None
    where = "" if position is None else f" at position {position}"
    warnings = []
    if share is not None and share < MIN_ESS_SHARE:
        warnings.append(
            f"effective sample size{where} is {share:.2%} of the impressions (below "
            f"{MIN_ESS_SHARE:.0%}): a few large weights decide the estimate"
        )
    lo, hi = MEAN_WEIGHT_RANGE
    if mean is not None and not lo <= mean <= hi:
        warnings.append(
            f"mean weight{where} is {mean:.3f}, outside [{lo}, {hi}]: the propensities or the "
            "target's probabilities do not describe these logs"
        )
    if deficit is not None and deficit > MAX_DEFICIT:
        warnings.append(
            f"support deficit{where} is {deficit:.1%} (above {MAX_DEFICIT:.0%}): the target "
            "shows items the source never showed there, which no weight can account for"
        )
    return Diagnostics(
        position=position,
        impressions=n,
        mean_weight=mean,
        ess=ess,
        ess_share=share,
        max_weight=max(maxima) if maxima else None,
        capped_share=sum(p.capped for p in parts) / n if n else None,
        support_deficit=deficit,
        warnings=tuple(warnings),
    )
