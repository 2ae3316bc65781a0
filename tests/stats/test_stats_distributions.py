"""The scipy.special wrappers give scipy.stats' values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps

from abeval.stats import distributions as d

xs = st.floats(min_value=-30, max_value=30, allow_nan=False)
qs = st.floats(min_value=1e-12, max_value=1 - 1e-12)
dofs = st.floats(min_value=1.0, max_value=1e6)


@given(xs)
def test_normal(x: float) -> None:
    assert d.norm_cdf(x) == pytest.approx(sps.norm.cdf(x), rel=1e-12, abs=1e-300)
    assert d.norm_sf(x, loc=0.5, scale=2.0) == pytest.approx(
        sps.norm.sf(x, loc=0.5, scale=2.0), rel=1e-12, abs=1e-300
    )
    assert d.norm_pdf(x) == pytest.approx(sps.norm.pdf(x), rel=1e-12, abs=1e-300)


@given(qs)
def test_normal_quantile(q: float) -> None:
    assert d.norm_isf(q) == pytest.approx(sps.norm.isf(q), rel=1e-10, abs=1e-12)


@given(xs, dofs)
def test_student_t(x: float, dof: float) -> None:
    assert d.t_sf(x, dof) == pytest.approx(sps.t.sf(x, dof), rel=1e-9, abs=1e-300)


@given(st.floats(min_value=1e-6, max_value=0.5), dofs)
def test_student_t_quantile(q: float, dof: float) -> None:
    assert d.t_isf(q, dof) == pytest.approx(sps.t.isf(q, dof), rel=1e-8)


@given(st.floats(min_value=0, max_value=200), st.integers(min_value=1, max_value=50))
def test_chi_square(x: float, dof: int) -> None:
    assert d.chi2_sf(x, dof) == pytest.approx(sps.chi2.sf(x, dof), rel=1e-9, abs=1e-300)
