"""Assurance (abeval.stats.assurance): the power of a test averaged over the
forecast, against numerical integration with scipy, and the users search."""

from __future__ import annotations

import math

import pytest
from scipy import integrate
from scipy import stats as st

from abeval.stats.assurance import assurance, users_for_assurance
from abeval.stats.forecast import Forecast


def _forecast(weights, means, sds) -> Forecast:
    p_pos = sum(w * st.norm.sf(0, m, s) for w, m, s in zip(weights, means, sds, strict=True))
    return Forecast(
        "ok", "", 0.05, 0.03, 0.01, p_positive=p_pos,
        weights=tuple(weights), means=tuple(means), sds=tuple(sds),
    )  # fmt: skip


MIX = _forecast([0.3, 0.7], [0.01, 0.025], [0.004, 0.012])


@pytest.mark.parametrize("users", [1e4, 2e5, 3e6])
def test_assurance_is_power_averaged_over_the_forecast(users: float) -> None:
    scale = 1.6  # the lift's se with one user
    se = scale / math.sqrt(users)
    z = st.norm.isf(0.025)

    def density(theta: float) -> float:
        return sum(
            w * st.norm.pdf(theta, m, s)
            for w, m, s in zip(MIX.weights, MIX.means, MIX.sds, strict=True)
        )

    # P(estimate > z·se | θ) = Φ(θ/se − z), integrated over θ
    expected = integrate.quad(lambda t: density(t) * st.norm.cdf(t / se - z), -0.2, 0.3)[0]
    assert assurance(MIX, users, scale) == pytest.approx(expected, abs=1e-7)


def test_users_for_assurance_is_the_smallest_even_size() -> None:
    result = users_for_assurance(MIX, 1.6, 0.8)
    assert result.status == "ok" and result.users is not None and result.users % 2 == 0
    assert assurance(MIX, result.users, 1.6) >= 0.8
    assert assurance(MIX, result.users - 2, 1.6) < 0.8
    assert result.ceiling == pytest.approx(MIX.p_positive)


def test_no_test_beats_the_chance_that_the_lift_is_positive() -> None:
    weak = _forecast([1.0], [0.002], [0.01])  # P(θ > 0) = 0.579
    result = users_for_assurance(weak, 1.6, 0.8)
    assert result.status == "unreachable" and result.users is None
    assert result.message == "no test reaches 80% assurance: P(lift > 0) is 58%"
    assert assurance(weak, 1e14, 1.6) == pytest.approx(st.norm.sf(0, 0.002, 0.01), abs=1e-4)


def test_no_forecast_no_size() -> None:
    none = Forecast("too_few_experiments", "2 past experiments", 0.05, 0.03, 0.01)
    assert users_for_assurance(none, 1.6).status == "no_forecast"
    assert users_for_assurance(MIX, 0.0).status == "invalid_input"


def mvn_upper_first(fractions: tuple[float, ...], drift: float, alpha: float) -> float:
    """P(the first crossing is upward) for three looks, by scipy's multivariate
    normal: the sum over looks k of P(|Z_j| < c_j for j < k, Z_k ≥ c_k)."""
    import numpy as np

    from abeval.stats.spending import spending_boundaries

    t = np.array(fractions)
    c = np.array(spending_boundaries(fractions, alpha))
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    total = 0.0
    for k in range(len(t)):
        law = st.multivariate_normal(mean=drift * np.sqrt(t[: k + 1]), cov=cov[: k + 1, : k + 1])
        lower = np.concatenate([-c[:k], [c[k]]])
        upper = np.concatenate([c[:k], [np.inf]])
        total += float(law.cdf(upper, lower_limit=lower, rng=np.random.default_rng(2)))
    return total


def test_assurance_under_three_looks_is_the_crossing_averaged_over_the_forecast() -> None:
    """Three equally spaced looks spending α: the chance of a first upward crossing
    (scipy's multivariate normal) integrated over the forecast's mixture with
    Gauss–Hermite (scipy), against ``assurance(..., looks=3)``."""
    import numpy as np

    fractions = (1 / 3, 2 / 3, 1.0)
    users, scale, alpha = 2e5, 1.6, 0.025
    se = scale / math.sqrt(users)
    x, h = np.polynomial.hermite_e.hermegauss(24)
    expected = 0.0
    for w, m, s in zip(MIX.weights, MIX.means, MIX.sds, strict=True):
        for node, weight in zip(x, h / h.sum(), strict=True):
            expected += w * weight * mvn_upper_first(fractions, (m + s * node) / se, alpha)
    assert assurance(MIX, users, scale, alpha, looks=3) == pytest.approx(expected, abs=1e-3)
    # one look: the fixed test's closed form
    fixed = assurance(MIX, users, scale, alpha)
    assert assurance(MIX, users, scale, alpha, looks=1) == fixed
    assert assurance(MIX, users, scale, alpha, looks=3) < fixed


def test_users_under_daily_looks_reach_the_target_and_need_more() -> None:
    from abeval.stats.spending_power import planned_looks

    fixed = users_for_assurance(MIX, 1.6, 0.8, 0.025)
    daily = users_for_assurance(MIX, 1.6, 0.8, 0.025, spending=True, users_per_day=5_000)
    assert fixed.users is not None and daily.users is not None and fixed.looks == 1
    assert daily.looks == planned_looks(daily.users, 5_000) > 1
    assert assurance(MIX, daily.users, 1.6, 0.025, daily.looks) >= 0.8
    assert assurance(MIX, daily.users - 2, 1.6, 0.025, planned_looks(daily.users - 2, 5_000)) < 0.8
    assert 1.0 < daily.users / fixed.users < 1.15
