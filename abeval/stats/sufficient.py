"""Sufficient statistics over users, as frozen dataclasses that add.

The store returns, per arm, the number of users ``n``, sums, and *centred* sums
of squares and cross-products (``ss = Σ(x − x̄)²``, ``cross = Σ(x − x̄)(y − ȳ)``),
computed by the engine's variance aggregates so that large values do not cancel
catastrophically. ``a + b`` merges two disjoint groups of users exactly (Chan,
Golub and LeVeque 1979, the pairwise update), so shards, days and segments merge
by ``+``. ``from_sums`` accepts raw sums of squares, as gbstats takes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


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


@dataclass(frozen=True)
class MeanStats:
    """A per-user metric: n users, Σx, and the centred Σ(x − x̄)²."""

    n: int
    sum: float
    ss: float

    @classmethod
    def from_sums(cls, n: int, sum: float, sum_squares: float) -> MeanStats:
        ss = sum_squares - sum * sum / n if n > 0 else 0.0
        return cls(n=int(n), sum=float(sum), ss=max(float(ss), 0.0))

    @classmethod
    def from_values(cls, values: ArrayLike) -> MeanStats:
        x = np.asarray(values, dtype=float)
        if x.size == 0:
            return cls(0, 0.0, 0.0)
        return cls(n=int(x.size), sum=float(x.sum()), ss=float(((x - x.mean()) ** 2).sum()))

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
    """A 0/1 per-user metric (conversion): variance p(1 − p), as gbstats uses."""

    @classmethod
    def from_counts(cls, n: int, successes: float) -> ProportionStats:
        n = int(n)
        p = successes / n if n > 0 else 0.0
        return cls(n=n, sum=float(successes), ss=float(n * p * (1 - p)))

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
        n: int,
        m_sum: float,
        m_sum_squares: float,
        d_sum: float,
        d_sum_squares: float,
        m_d_sum_of_products: float,
    ) -> RatioStats:
        if n <= 0:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        return cls(
            n=int(n),
            m_sum=float(m_sum),
            m_ss=max(m_sum_squares - m_sum * m_sum / n, 0.0),
            d_sum=float(d_sum),
            d_ss=max(d_sum_squares - d_sum * d_sum / n, 0.0),
            cross=m_d_sum_of_products - m_sum * d_sum / n,
        )

    @classmethod
    def from_values(cls, numerator: ArrayLike, denominator: ArrayLike) -> RatioStats:
        m = np.asarray(numerator, dtype=float)
        d = np.asarray(denominator, dtype=float)
        if m.size == 0:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        mc, dc = m - m.mean(), d - d.mean()
        return cls(
            n=int(m.size),
            m_sum=float(m.sum()),
            m_ss=float((mc * mc).sum()),
            d_sum=float(d.sum()),
            d_ss=float((dc * dc).sum()),
            cross=float((mc * dc).sum()),
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
        variance of :attr:`mean`."""
        if self.n < 2 or self.d_sum == 0:
            return 0.0
        mu_m = self.m_sum / self.n
        mu_d = self.d_sum / self.n
        v_m = self.m_ss / (self.n - 1)
        v_d = self.d_ss / (self.n - 1)
        return (
            v_m / mu_d**2
            - 2 * self.covariance * mu_m / mu_d**3
            + mu_m**2 * v_d / mu_d**4
        )

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
