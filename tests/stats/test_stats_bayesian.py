"""Bayesian comparison: closed forms against numerical integration over a grid."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy import stats as sps
from stats_helpers import assert_json_clean

from abeval.stats import (
    MeanStats,
    NormalPrior,
    ProportionStats,
    compare,
    compare_bayesian,
    posterior,
)

CONTROL = ProportionStats.from_counts(1000, 120)
TREATMENT = ProportionStats.from_counts(1000, 140)


@pytest.mark.parametrize(("mean", "sd"), [(0.04, 0.15), (-0.3, 0.1), (0.0, 2.0), (5.0, 0.5)])
def test_risks_and_chance_to_win_by_quadrature(mean: float, sd: float) -> None:
    post = posterior(mean, sd * sd)
    density = sps.norm(mean, sd).pdf
    gain = integrate.quad(lambda d: d * density(d), 0, np.inf)[0]
    loss = integrate.quad(lambda d: -d * density(d), -np.inf, 0)[0]
    win = integrate.quad(density, 0, np.inf)[0]
    assert post.risk_control == pytest.approx(gain, abs=1e-9)
    assert post.risk_treatment == pytest.approx(loss, abs=1e-9)
    assert post.chance_to_win == pytest.approx(win, abs=1e-9)
    flipped = posterior(mean, sd * sd, lower_is_better=True)
    assert flipped.chance_to_win == pytest.approx(1 - win, abs=1e-9)
    assert flipped.risk_control == pytest.approx(loss, abs=1e-9)
    assert flipped.risk_treatment == pytest.approx(gain, abs=1e-9)


def test_normal_prior_matches_a_grid_posterior() -> None:
    """Posterior ∝ prior × likelihood evaluated on a grid, without the conjugate formula."""
    flat = compare_bayesian(CONTROL, TREATMENT)
    effect, sd = flat.relative.mean, flat.relative.sd
    assert effect is not None and sd is not None
    prior = NormalPrior(mean=0.0, variance=0.05**2)
    grid = np.linspace(-1.0, 1.0, 400_001)
    weights = sps.norm.pdf(grid, 0.0, 0.05) * sps.norm.pdf(effect, grid, sd)
    weights /= weights.sum()
    grid_mean = float((grid * weights).sum())
    grid_sd = math.sqrt(float(((grid - grid_mean) ** 2 * weights).sum()))
    result = compare_bayesian(CONTROL, TREATMENT, prior=prior, relative_interval="delta")
    assert result.relative.mean == pytest.approx(grid_mean, abs=1e-7)
    assert result.relative.sd == pytest.approx(grid_sd, abs=1e-7)
    above = weights[grid > 0].sum() + weights[grid == 0].sum() / 2  # half the cell at 0
    assert result.relative.chance_to_win == pytest.approx(above, abs=1e-6)
    # shrunk toward 0 and narrower than the flat posterior
    assert result.relative.mean is not None and result.relative.sd is not None
    assert 0 < result.relative.mean < effect and result.relative.sd < sd


def test_prior_is_carried_to_the_other_scale_through_the_control_mean() -> None:
    base = CONTROL.mean
    relative = compare_bayesian(CONTROL, TREATMENT, prior=NormalPrior(0.02, 0.01))
    absolute = compare_bayesian(
        CONTROL, TREATMENT, prior=NormalPrior(0.02 * base, 0.01 * base**2), prior_scale="absolute"
    )
    assert relative.absolute.mean == pytest.approx(absolute.absolute.mean, rel=1e-12)
    assert relative.relative.mean == pytest.approx(absolute.relative.mean, rel=1e-12)
    assert relative.prior_scale == "relative" and absolute.prior_scale == "absolute"


def test_flat_posterior_is_the_frequentist_estimate_with_normal_quantiles() -> None:
    bayes = compare_bayesian(CONTROL, TREATMENT, alpha=0.1)
    freq = compare(CONTROL, TREATMENT, alpha=0.1)
    for post, lift in ((bayes.absolute, freq.absolute), (bayes.relative, freq.relative)):
        assert post.mean == lift.effect and post.sd == lift.se
        assert post.mean is not None and post.sd is not None and post.ci is not None
        z = sps.norm.isf(0.05)
        assert post.ci == pytest.approx((post.mean - z * post.sd, post.mean + z * post.sd))


def test_degenerate_inputs() -> None:
    empty = compare_bayesian(MeanStats.from_values([]), MeanStats.from_values([1.0, 2.0]))
    assert empty.status == "empty_arm" and empty.message and empty.relative.mean is None
    zero = compare_bayesian(
        ProportionStats.from_counts(50, 0), ProportionStats.from_counts(50, 3), prior=NormalPrior()
    )
    assert zero.status == "zero_baseline"
    assert zero.relative.mean is None and zero.absolute.chance_to_win is not None
    for result in (empty, zero):
        assert_json_clean(result.to_dict())
    with pytest.raises(ValueError):
        NormalPrior(0.0, 0.0)
