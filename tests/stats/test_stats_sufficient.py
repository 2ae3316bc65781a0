"""Sufficient statistics: merging by + is exact, raw sums agree with per-user data,
and the ratio's delta-method variance is the variance of the linearised values."""

from __future__ import annotations

import math
from dataclasses import fields, is_dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from abeval.stats import (
    CupedStats,
    MeanStats,
    ProportionStats,
    RatioCupedStats,
    RatioStats,
)

values = st.floats(min_value=-100, max_value=100, allow_nan=False, allow_subnormal=False)
positive = st.one_of(st.just(0.0), st.floats(min_value=1e-3, max_value=50))


def column(n: int, elements: st.SearchStrategy[float] = values) -> st.SearchStrategy[np.ndarray]:
    return arrays(np.float64, n, elements=elements)


@st.composite
def table(draw: st.DrawFn, width: int, elements: st.SearchStrategy[float] = values) -> np.ndarray:
    """``width`` per-user columns of one random length (0 to 40 users)."""
    n = draw(st.integers(0, 40))
    return (
        np.stack([draw(column(n, elements)) for _ in range(width)]) if n else np.zeros((width, 0))
    )


def assert_same(a: Any, b: Any) -> None:
    """Dataclasses field by field: counts equal, floats close."""
    assert type(a) is type(b)
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if is_dataclass(x):
            assert_same(x, y)
        elif isinstance(x, int):
            assert x == y, f.name
        else:
            assert math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-6), (f.name, x, y)


@given(table(1), table(1), table(1))
def test_mean_stats_of_a_union_is_the_sum_of_the_parts(
    a: np.ndarray, b: np.ndarray, c: np.ndarray
) -> None:
    union = MeanStats.from_values(np.concatenate([a[0], b[0], c[0]]))
    parts = MeanStats.from_values(a[0]) + MeanStats.from_values(b[0]) + MeanStats.from_values(c[0])
    assert_same(union, parts)


@given(st.lists(st.booleans(), max_size=40), st.lists(st.booleans(), max_size=40))
def test_proportion_stats_merge_and_variance(a: list[bool], b: list[bool]) -> None:
    union = ProportionStats.from_values(np.array(a + b, dtype=float))
    merged = ProportionStats.from_values(np.array(a, float)) + ProportionStats.from_values(
        np.array(b, float)
    )
    assert_same(union, merged)
    counted = ProportionStats.from_counts(len(a) + len(b), sum(a) + sum(b))
    assert_same(union, counted)
    p = (sum(a) + sum(b)) / max(len(a) + len(b), 1)
    assert math.isclose(merged.variance, p * (1 - p), abs_tol=1e-12)


@given(table(2, positive), table(2, positive))
def test_ratio_stats_of_a_union_is_the_sum_of_the_parts(a: np.ndarray, b: np.ndarray) -> None:
    union = RatioStats.from_values(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    assert_same(union, RatioStats.from_values(*a) + RatioStats.from_values(*b))


@given(table(2), table(2))
def test_cuped_stats_of_a_union_is_the_sum_of_the_parts(a: np.ndarray, b: np.ndarray) -> None:
    union = CupedStats.from_values(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    assert_same(union, CupedStats.from_values(*a) + CupedStats.from_values(*b))


@given(table(4, positive), table(4, positive))
def test_ratio_cuped_stats_of_a_union_is_the_sum_of_the_parts(a: np.ndarray, b: np.ndarray) -> None:
    union = RatioCupedStats.from_values(*np.concatenate([a, b], axis=1))
    assert_same(union, RatioCupedStats.from_values(*a) + RatioCupedStats.from_values(*b))


@given(table(4, positive))
def test_from_sums_agrees_with_from_values(t: np.ndarray) -> None:
    m, d, pm, pd = t
    n = m.size
    assert_same(MeanStats.from_sums(n, m.sum(), (m * m).sum()), MeanStats.from_values(m))
    assert_same(
        RatioStats.from_sums(n, m.sum(), (m * m).sum(), d.sum(), (d * d).sum(), (m * d).sum()),
        RatioStats.from_values(m, d),
    )
    assert_same(
        CupedStats.from_sums(n, m.sum(), (m * m).sum(), d.sum(), (d * d).sum(), (m * d).sum()),
        CupedStats.from_values(m, d),
    )
    post, pre = RatioStats.from_values(m, d), RatioStats.from_values(pm, pd)
    raw = RatioCupedStats.from_sums(
        post, pre, (m * pm).sum(), (m * pd).sum(), (d * pm).sum(), (d * pd).sum()
    )
    assert_same(raw, RatioCupedStats.from_values(m, d, pm, pd))


@settings(max_examples=200)
@given(table(2, positive))
def test_ratio_delta_variance_is_the_variance_of_the_linearised_values(t: np.ndarray) -> None:
    m, d = t
    if m.size < 2 or d.sum() == 0:
        return
    mu_m, mu_d = m.mean(), d.mean()
    linear = m / mu_d - mu_m * d / mu_d**2
    direct = float(np.var(linear, ddof=1))
    assert math.isclose(RatioStats.from_values(m, d).variance, direct, rel_tol=1e-7, abs_tol=1e-9)


@given(table(4, positive))
def test_ratio_cuped_covariance_is_that_of_the_linearised_values(t: np.ndarray) -> None:
    m, d, pm, pd = t
    if m.size < 2 or d.sum() == 0 or pd.sum() == 0:
        return
    post = m / d.mean() - m.mean() * d / d.mean() ** 2
    pre = pm / pd.mean() - pm.mean() * pd / pd.mean() ** 2
    direct = float(np.cov(post, pre, ddof=1)[0, 1])
    stats = RatioCupedStats.from_values(m, d, pm, pd)
    assert math.isclose(stats.covariance, direct, rel_tol=1e-7, abs_tol=1e-9)


def test_cuped_covariance_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=200)
    y = 2 * x + rng.normal(size=200)
    stats = CupedStats.from_values(y, x)
    assert math.isclose(stats.covariance, float(np.cov(y, x)[0, 1]), rel_tol=1e-12)


def test_decimal_sums_as_postgresql_returns_them() -> None:
    from_decimal = MeanStats.from_sums(Decimal(4), Decimal(10), Decimal(30))
    assert_same(from_decimal, MeanStats.from_values([1, 2, 3, 4]))
    ratio = RatioStats.from_sums(Decimal(2), Decimal(3), Decimal(5), Decimal(4), 8.0, Decimal(6))
    assert_same(ratio, RatioStats.from_values([1, 2], [2, 2]))


def test_a_constant_metric_has_exactly_zero_variance_from_raw_sums() -> None:
    x = np.full(1000, 0.1)
    stats = MeanStats.from_sums(x.size, x.sum(), (x * x).sum())
    assert (x * x).sum() - x.sum() ** 2 / x.size != 0  # the raw sums do not cancel exactly
    assert stats.ss == 0.0 and stats.variance == 0.0


def test_shapes_and_kinds_are_checked() -> None:
    with pytest.raises(ValueError):
        RatioStats.from_values([1, 2], [1])
    with pytest.raises(ValueError):
        CupedStats(MeanStats.from_values([1, 2]), MeanStats.from_values([1]), 0.0)
    with pytest.raises(TypeError):
        MeanStats.from_values([1.0]) + ProportionStats.from_counts(1, 1)
    with pytest.raises(TypeError):
        MeanStats.from_values([1.0]) + RatioStats.from_values([1.0], [1.0])  # type: ignore[operator]


def test_empty_stats_are_neutral_for_addition() -> None:
    s = RatioStats.from_values([1.0, 3.0], [2.0, 5.0])
    assert_same(s + RatioStats.from_values([], []), s)
    assert_same(RatioStats.from_values([], []) + s, s)
    assert RatioStats.from_values([], []).mean == 0.0
