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
