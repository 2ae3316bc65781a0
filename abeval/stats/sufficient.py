"""Sufficient statistics over users, as frozen dataclasses that add.

The store returns, per arm, the number of users ``n``, sums, and *centred* sums
of squares and cross-products (``ss = Σ(x − x̄)²``, ``cross = Σ(x − x̄)(y − ȳ)``),
computed by the engine's variance aggregates so that large values do not cancel
catastrophically. ``a + b`` merges two disjoint groups of users exactly (Chan,
Golub and LeVeque 1979, the pairwise update), so shards, days and segments merge
by ``+``. ``from_sums`` accepts raw sums of squares, as gbstats takes them; a
centred sum that comes out below the rounding error of the raw sums is taken as 0
(a constant metric), so a constant arm reads as zero variance and not as a tiny
spurious one.

:class:`MeanStats` (and :class:`ProportionStats`) and :class:`RatioStats` hold one
period; :class:`CupedStats` and :class:`RatioCupedStats` add the same metric over
the pre-period and the cross-products needed by CUPED (:mod:`abeval.stats.cuped`).

Inputs may be ``int``, ``float``, ``numpy`` scalars or ``Decimal`` (PostgreSQL
returns ``Decimal`` for integer sums): everything is converted to ``float``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, SupportsFloat

if TYPE_CHECKING:  # numpy is imported where arrays are read: sums alone do not need it
    import numpy as np
    from numpy.typing import ArrayLike

#: A centred sum computed from raw sums is trusted only above this multiple of
#: machine epsilon (``numpy.finfo(float).eps``) times the raw sum it was computed from.
_CANCELLATION = 64 * sys.float_info.epsilon


def _centred(n: int, sum_a: float, sum_b: float, sum_ab: float) -> float:
    """Σ(a − ā)(b − b̄) from raw sums, with cancellation noise rounded to 0."""
    product = sum_a * sum_b / n
    centred = sum_ab - product
    if abs(centred) <= _CANCELLATION * max(abs(sum_ab), abs(product)):
        return 0.0
    return centred


def _merge_ss(n_a: int, mean_a: float, ss_a: float, n_b: int, mean_b: float, ss_b: float) -> float:
    n = n_a + n_b
    if n_a == 0:
        return ss_b
    if n_b == 0:
        return ss_a
    delta = mean_b - mean_a
    return ss_a + ss_b + delta * delta * n_a * n_b / n


def _merge_cross(
    n_a: int, dx_a: float, dy_a: float, c_a: float, n_b: int, dx_b: float, dy_b: float, c_b: float
) -> float:
    n = n_a + n_b
    if n_a == 0:
        return c_b
    if n_b == 0:
        return c_a
    return c_a + c_b + (dx_b - dx_a) * (dy_b - dy_a) * n_a * n_b / n


def _centred_cross(x: np.ndarray, y: np.ndarray) -> float:
    return float(((x - x.mean()) * (y - y.mean())).sum())


def _same_length(*arrays: np.ndarray) -> None:
    if len({a.shape for a in arrays}) != 1:
        raise ValueError("per-user arrays must have the same length")


@dataclass(frozen=True)
class MeanStats:
    """A per-user metric: n users, Σx, and the centred Σ(x − x̄)²."""

    n: int
    sum: float
    ss: float

    @classmethod
    def from_sums(
        cls, n: SupportsFloat, sum: SupportsFloat, sum_squares: SupportsFloat
    ) -> MeanStats:
        """From n, Σx and the raw Σx² (gbstats' inputs)."""
        count, total, squares = int(float(n)), float(sum), float(sum_squares)
        if count <= 0:
            return cls(n=0, sum=total, ss=0.0)
        ss = _centred(count, total, total, squares)
        return cls(n=count, sum=total, ss=max(ss, 0.0))

    @classmethod
    def from_values(cls, values: ArrayLike) -> MeanStats:
        import numpy as np

        x = np.asarray(values, dtype=float).ravel()
        if x.size == 0:
            return cls(0, 0.0, 0.0)
        return cls(n=int(x.size), sum=float(x.sum()), ss=_centred_cross(x, x))

    @property
    def mean(self) -> float:
        return self.sum / self.n if self.n > 0 else 0.0

    @property
    def variance(self) -> float:
        """Sample variance (n − 1 in the denominator); 0 when n < 2."""
        return self.ss / (self.n - 1) if self.n > 1 else 0.0

    @property
    def sum_squares(self) -> float:
        """The raw Σx² (for display and for tools that take raw sums)."""
        return self.ss + self.sum * self.sum / self.n if self.n > 0 else 0.0

    def __add__(self, other: MeanStats) -> MeanStats:
        if not isinstance(other, MeanStats) or isinstance(other, ProportionStats) != isinstance(
            self, ProportionStats
        ):
            return NotImplemented
        ss = _merge_ss(self.n, self.mean, self.ss, other.n, other.mean, other.ss)
        return type(self)(n=self.n + other.n, sum=self.sum + other.sum, ss=ss)


@dataclass(frozen=True)
class ProportionStats(MeanStats):
    """A 0/1 per-user metric (conversion): variance p(1 − p), as gbstats uses.

    ``ss`` is still the centred Σ(x − p)² = n·p(1 − p), so merging is exact.
    """

    @classmethod
    def from_counts(cls, n: SupportsFloat, successes: SupportsFloat) -> ProportionStats:
        count, k = int(float(n)), float(successes)
        p = k / count if count > 0 else 0.0
        return cls(n=max(count, 0), sum=k, ss=float(max(count, 0) * p * (1 - p)))

    @property
    def variance(self) -> float:
        p = self.mean
        return p * (1 - p)


@dataclass(frozen=True)
class RatioStats:
    """A ratio of per-user sums (CTR = Σclicks / Σimpressions) over n users.

    ``m`` is the numerator and ``d`` the denominator per user; ``cross`` is the
    centred Σ(m − m̄)(d − d̄). The variance of the ratio follows from the delta
    method with the covariance term (Deng, Knoblich and Lu 2018).
    """

    n: int
    m_sum: float
    m_ss: float
    d_sum: float
    d_ss: float
    cross: float

    @classmethod
    def from_sums(
        cls,
        n: SupportsFloat,
        m_sum: SupportsFloat,
        m_sum_squares: SupportsFloat,
        d_sum: SupportsFloat,
        d_sum_squares: SupportsFloat,
        m_d_sum_of_products: SupportsFloat,
    ) -> RatioStats:
        """From raw sums: n, Σm, Σm², Σd, Σd², Σm·d (gbstats' inputs)."""
        count = int(float(n))
        ms, mss, ds, dss, mds = (
            float(m_sum),
            float(m_sum_squares),
            float(d_sum),
            float(d_sum_squares),
            float(m_d_sum_of_products),
        )
        if count <= 0:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        return cls(
            n=count,
            m_sum=ms,
            m_ss=max(_centred(count, ms, ms, mss), 0.0),
            d_sum=ds,
            d_ss=max(_centred(count, ds, ds, dss), 0.0),
            cross=_centred(count, ms, ds, mds),
        )

    @classmethod
    def from_values(cls, numerator: ArrayLike, denominator: ArrayLike) -> RatioStats:
        import numpy as np

        m = np.asarray(numerator, dtype=float).ravel()
        d = np.asarray(denominator, dtype=float).ravel()
        _same_length(m, d)
        if m.size == 0:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        return cls(
            n=int(m.size),
            m_sum=float(m.sum()),
            m_ss=_centred_cross(m, m),
            d_sum=float(d.sum()),
            d_ss=_centred_cross(d, d),
            cross=_centred_cross(m, d),
        )

    @property
    def numerator(self) -> MeanStats:
        return MeanStats(self.n, self.m_sum, self.m_ss)

    @property
    def denominator(self) -> MeanStats:
        return MeanStats(self.n, self.d_sum, self.d_ss)

    @property
    def mean(self) -> float:
        """The ratio Σm / Σd (0 when Σd = 0)."""
        return self.m_sum / self.d_sum if self.d_sum != 0 else 0.0

    @property
    def covariance(self) -> float:
        return self.cross / (self.n - 1) if self.n > 1 else 0.0

    @property
    def variance(self) -> float:
        """Per-user variance of the ratio by the delta method; divide by n for the
        variance of :attr:`mean`.

        With μm, μd the per-user means, σm², σd², σmd the sample (co)variances:
        ``σm²/μd² − 2·σmd·μm/μd³ + μm²·σd²/μd⁴``, which is the sample variance of
        the linearised values ``(m − R·d)/μd`` with R = Σm/Σd = μm/μd, computed
        in that form: (Σ(m−m̄)² − 2R·Σ(m−m̄)(d−d̄) + R²·Σ(d−d̄)²)/((n − 1)·μd²).
        Never negative.
        """
        if self.n < 2 or self.d_sum == 0:
            return 0.0
        ratio = self.m_sum / self.d_sum
        mu_d = self.d_sum / self.n
        centred = self.m_ss - 2 * ratio * self.cross + ratio * ratio * self.d_ss
        # divide step by step: μd² can underflow where the result does not
        return max(centred / (self.n - 1) / mu_d / mu_d, 0.0)

    def __add__(self, other: RatioStats) -> RatioStats:
        if not isinstance(other, RatioStats):
            return NotImplemented
        a, b = self, other
        n = a.n + b.n
        a_mm = a.m_sum / a.n if a.n else 0.0
        b_mm = b.m_sum / b.n if b.n else 0.0
        a_md = a.d_sum / a.n if a.n else 0.0
        b_md = b.d_sum / b.n if b.n else 0.0
        return RatioStats(
            n=n,
            m_sum=a.m_sum + b.m_sum,
            m_ss=_merge_ss(a.n, a_mm, a.m_ss, b.n, b_mm, b.m_ss),
            d_sum=a.d_sum + b.d_sum,
            d_ss=_merge_ss(a.n, a_md, a.d_ss, b.n, b_md, b.d_ss),
            cross=_merge_cross(a.n, a_mm, a_md, a.cross, b.n, b_mm, b_md, b.cross),
        )


@dataclass(frozen=True)
class CupedStats:
    """A per-user metric with its pre-period value as CUPED covariate.

    ``post`` is the metric in the experiment (a :class:`MeanStats`, or a
    :class:`ProportionStats` for conversion), ``pre`` the same metric over the
    same users before their first exposure, and ``cross`` the centred
    Σ(y − ȳ)(x − x̄) of post value y and pre value x over those users.
    """

    post: MeanStats
    pre: MeanStats
    cross: float

    def __post_init__(self) -> None:
        if self.post.n != self.pre.n:
            raise ValueError("CupedStats: post and pre must cover the same users")

    @classmethod
    def from_sums(
        cls,
        n: SupportsFloat,
        sum: SupportsFloat,
        sum_squares: SupportsFloat,
        covariate_sum: SupportsFloat,
        covariate_sum_squares: SupportsFloat,
        main_covariate_sum_product: SupportsFloat,
        *,
        proportion: bool = False,
    ) -> CupedStats:
        """From raw sums: n, Σy, Σy², Σx, Σx², Σy·x (gbstats' field names)."""
        post_type = ProportionStats if proportion else MeanStats
        post = post_type.from_sums(n, sum, sum_squares)
        pre = MeanStats.from_sums(n, covariate_sum, covariate_sum_squares)
        if post.n == 0:
            return cls(post, pre, 0.0)
        cross = _centred(post.n, post.sum, pre.sum, float(main_covariate_sum_product))
        return cls(post=post, pre=pre, cross=cross)

    @classmethod
    def from_values(
        cls, values: ArrayLike, covariate: ArrayLike, *, proportion: bool = False
    ) -> CupedStats:
        import numpy as np

        y = np.asarray(values, dtype=float).ravel()
        x = np.asarray(covariate, dtype=float).ravel()
        _same_length(y, x)
        post = ProportionStats.from_values(y) if proportion else MeanStats.from_values(y)
        cross = _centred_cross(y, x) if y.size else 0.0
        return cls(post=post, pre=MeanStats.from_values(x), cross=cross)

    @property
    def n(self) -> int:
        return self.post.n

    @property
    def covariance(self) -> float:
        """Sample covariance of post and pre values (n − 1 denominator)."""
        return self.cross / (self.n - 1) if self.n > 1 else 0.0

    def __add__(self, other: CupedStats) -> CupedStats:
        if not isinstance(other, CupedStats):
            return NotImplemented
        a, b = self, other
        cross = _merge_cross(
            a.n, a.post.mean, a.pre.mean, a.cross, b.n, b.post.mean, b.pre.mean, b.cross
        )
        return CupedStats(post=a.post + b.post, pre=a.pre + b.pre, cross=cross)


@dataclass(frozen=True)
class RatioCupedStats:
    """A ratio metric with the same ratio over the pre-period as CUPED covariate.

    ``post`` holds the experiment's numerator m and denominator d per user,
    ``pre`` the pre-period numerator m' and denominator d'; the four centred
    cross-products between them are ``m_pm`` = Σ(m − m̄)(m' − m̄'), ``m_pd``
    (m with d'), ``d_pm`` (d with m') and ``d_pd`` (d with d').
    """

    post: RatioStats
    pre: RatioStats
    m_pm: float
    m_pd: float
    d_pm: float
    d_pd: float

    def __post_init__(self) -> None:
        if self.post.n != self.pre.n:
            raise ValueError("RatioCupedStats: post and pre must cover the same users")

    @classmethod
    def from_values(
        cls,
        numerator: ArrayLike,
        denominator: ArrayLike,
        pre_numerator: ArrayLike,
        pre_denominator: ArrayLike,
    ) -> RatioCupedStats:
        import numpy as np

        m, d, pm, pd = (
            np.asarray(a, dtype=float).ravel()
            for a in (numerator, denominator, pre_numerator, pre_denominator)
        )
        _same_length(m, d, pm, pd)
        post, pre = RatioStats.from_values(m, d), RatioStats.from_values(pm, pd)
        if m.size == 0:
            return cls(post, pre, 0.0, 0.0, 0.0, 0.0)
        return cls(
            post=post,
            pre=pre,
            m_pm=_centred_cross(m, pm),
            m_pd=_centred_cross(m, pd),
            d_pm=_centred_cross(d, pm),
            d_pd=_centred_cross(d, pd),
        )

    @classmethod
    def from_sums(
        cls,
        post: RatioStats,
        pre: RatioStats,
        m_pm_sum_of_products: SupportsFloat,
        m_pd_sum_of_products: SupportsFloat,
        d_pm_sum_of_products: SupportsFloat,
        d_pd_sum_of_products: SupportsFloat,
    ) -> RatioCupedStats:
        """From the post and pre :class:`RatioStats` and the raw Σm·m', Σm·d',
        Σd·m', Σd·d'."""
        n = post.n
        if n == 0:
            return cls(post, pre, 0.0, 0.0, 0.0, 0.0)
        return cls(
            post=post,
            pre=pre,
            m_pm=_centred(n, post.m_sum, pre.m_sum, float(m_pm_sum_of_products)),
            m_pd=_centred(n, post.m_sum, pre.d_sum, float(m_pd_sum_of_products)),
            d_pm=_centred(n, post.d_sum, pre.m_sum, float(d_pm_sum_of_products)),
            d_pd=_centred(n, post.d_sum, pre.d_sum, float(d_pd_sum_of_products)),
        )

    @property
    def n(self) -> int:
        return self.post.n

    @property
    def covariance(self) -> float:
        """Sample covariance of the linearised post and pre ratios.

        With l = (m − R·d)/μd and l' = (m' − R'·d')/μd' (R, R' the ratios, μ the
        per-user means), cov(l, l') = [C(m,m') − R'·C(m,d') − R·C(d,m') +
        R·R'·C(d,d')] / (μd·μd'), each C a sample covariance. 0 when a
        denominator sums to 0 or n < 2.
        """
        if self.n < 2 or self.post.d_sum == 0 or self.pre.d_sum == 0:
            return 0.0
        r, r_pre = self.post.mean, self.pre.mean
        mu_d, mu_pd = self.post.d_sum / self.n, self.pre.d_sum / self.n
        centred = self.m_pm - r_pre * self.m_pd - r * self.d_pm + r * r_pre * self.d_pd
        return centred / (self.n - 1) / mu_d / mu_pd

    def __add__(self, other: RatioCupedStats) -> RatioCupedStats:
        if not isinstance(other, RatioCupedStats):
            return NotImplemented
        a, b = self, other
        # per-user means of m, d (post) and m', d' (pre) in each part
        am, ad, apm, apd = (_per_user(s, a.n) for s in _sums(a))
        bm, bd, bpm, bpd = (_per_user(s, b.n) for s in _sums(b))
        return RatioCupedStats(
            post=a.post + b.post,
            pre=a.pre + b.pre,
            m_pm=_merge_cross(a.n, am, apm, a.m_pm, b.n, bm, bpm, b.m_pm),
            m_pd=_merge_cross(a.n, am, apd, a.m_pd, b.n, bm, bpd, b.m_pd),
            d_pm=_merge_cross(a.n, ad, apm, a.d_pm, b.n, bd, bpm, b.d_pm),
            d_pd=_merge_cross(a.n, ad, apd, a.d_pd, b.n, bd, bpd, b.d_pd),
        )


def _sums(s: RatioCupedStats) -> tuple[float, float, float, float]:
    return s.post.m_sum, s.post.d_sum, s.pre.m_sum, s.pre.d_sum


def _per_user(total: float, n: int) -> float:
    return total / n if n else 0.0


#: Every kind of per-arm statistics that :func:`abeval.stats.compare` accepts.
ArmStats = MeanStats | RatioStats | CupedStats | RatioCupedStats


def is_finite_stats(stats: ArmStats) -> bool:
    """True when every number in ``stats`` is finite (no NaN or inf from upstream)."""
    if isinstance(stats, CupedStats):
        return (
            is_finite_stats(stats.post)
            and is_finite_stats(stats.pre)
            and math.isfinite(stats.cross)
        )
    if isinstance(stats, RatioCupedStats):
        crosses = (stats.m_pm, stats.m_pd, stats.d_pm, stats.d_pd)
        return (
            is_finite_stats(stats.post)
            and is_finite_stats(stats.pre)
            and all(math.isfinite(c) for c in crosses)
        )
    values: tuple[float, ...]
    if isinstance(stats, RatioStats):
        values = (stats.m_sum, stats.m_ss, stats.d_sum, stats.d_ss, stats.cross)
    else:
        values = (stats.sum, stats.ss)
    return all(math.isfinite(v) for v in values)
