"""The board's predictive checks (abeval.stats.agreement_predictive,
docs/metrics.md#noise-aware-board): the intercept-only baseline against
Q-profile sampling of τ with scipy, the leave-one-experiment-out log score
against a loop written here with scipy's normal density, and the backtest's
counts against its steps and a refit by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as st

from abeval.stats.agreement_predictive import (
    backtest,
    intercept_only,
    loo_score,
)
from abeval.stats.forecast import HistoryRow, fit, log_score, predict


def _history(k: int = 8, seed: int = 3, slope: float = 0.8) -> list[HistoryRow]:
    rng = np.random.default_rng(seed)
    xi = rng.normal(0.0, 0.02, k)
    s = rng.uniform(0.006, 0.012, k)
    y = slope * xi + rng.normal(0, 0.004, k) + rng.normal(0, 1, k) * s
    x = xi + rng.normal(0, 0.003, k)
    return [HistoryRow(float(a), 0.003, float(b), float(c), f"e{i}")
            for i, (a, b, c) in enumerate(zip(x, y, s, strict=True))]  # fmt: skip


def _mixture_density(f, y: float, se: float) -> float:
    return sum(w * st.norm.pdf(y, m, math.sqrt(sd**2 + se**2))
               for w, m, sd in zip(f.weights, f.means, f.sds, strict=True))  # fmt: skip


def test_intercept_only_matches_q_profile_sampling() -> None:
    """τ at evenly spaced confidence levels of its Q-profile distribution with
    k − 1 degrees of freedom (Q(τ) = Σ w (y − ȳ_w)², root-found by scipy), then
    N(ȳ_w(τ), 1/Σw + τ²) at each, averaged (Nagashima et al. 2019)."""
    rows = _history()
    y = np.array([r.online_lift for r in rows])
    s = np.array([r.online_se for r in rows])

    def parts(tau: float) -> tuple[float, float, float]:
        w = 1 / (s**2 + tau**2)
        mean = float(np.sum(w * y) / np.sum(w))
        return mean, float(1 / np.sum(w) + tau**2), float(np.sum(w * (y - mean) ** 2))

    top = 30 * max(float(np.std(y, ddof=1)), float(np.median(s)))
    taus = []
    for p in (np.arange(2000) + 0.5) / 2000:
        level = st.chi2.isf(p, len(rows) - 1)
        if parts(0.0)[2] <= level:
            taus.append(0.0)
        elif parts(top)[2] >= level:
            taus.append(top)
        else:
            taus.append(optimize.brentq(lambda t, lv=level: parts(t)[2] - lv, 0.0, top))
    means = np.array([parts(t)[0] for t in taus])
    variances = np.array([parts(t)[1] for t in taus])
    y0, se0 = 0.01, 0.008
    pdf = float(np.mean(st.norm.pdf(y0, means, np.sqrt(variances + se0**2))))
    f = intercept_only(rows)
    assert f.point == pytest.approx(float(np.mean(means)), rel=1e-2)
    assert math.exp(log_score(f, y0, se0)) == pytest.approx(pdf, rel=1e-2)


def test_loo_score_is_the_mean_held_out_log_density() -> None:
    rows = _history()
    model, base = [], []
    for held in rows:
        rest = [r for r in rows if r is not held]
        f = predict(fit(rest), held.offline_lift, held.offline_se)
        model.append(math.log(_mixture_density(f, held.online_lift, held.online_se)))
        b = intercept_only(rest)
        base.append(math.log(_mixture_density(b, held.online_lift, held.online_se)))
    score = loo_score(rows)
    assert score.status == "ok" and score.scored == 8 and score.experiments == 8
    assert score.log_score == pytest.approx(np.mean(model), rel=1e-9)
    assert score.baseline_log_score == pytest.approx(np.mean(base), rel=1e-9)
    assert score.gain == pytest.approx(np.mean(model) - np.mean(base), rel=1e-9)


def test_loo_score_holds_out_every_arm_of_an_experiment() -> None:
    rows = _history(6)
    twin = HistoryRow(0.03, 0.003, 0.02, 0.01, "e0")  # a second arm of e0
    score = loo_score([*rows, twin])
    assert score.experiments == 6 and score.scored == 7  # rows of e1 … e5: 5 ≥ 4
    rest = rows[1:]
    f = predict(fit(rest), twin.offline_lift, twin.offline_se)
    expected = math.log(_mixture_density(f, twin.online_lift, twin.online_se))
    assert log_score(f, twin.online_lift, twin.online_se) == pytest.approx(expected)


def test_a_signal_that_predicts_gains_and_noise_does_not() -> None:
    good = loo_score(_history(20, seed=8, slope=1.0))
    rng = np.random.default_rng(9)
    noise = loo_score([HistoryRow(float(rng.normal(0, 0.02)), r.offline_se, r.online_lift,
                                  r.online_se, r.experiment)
                       for r in _history(20, seed=8, slope=1.0)])  # fmt: skip
    assert good.gain is not None and good.gain > 0.2
    assert noise.gain is not None and noise.gain < good.gain


def test_loo_score_needs_four_experiments() -> None:
    # The forecast model needs 3 experiments (MIN_EXPERIMENTS), one more is held out.
    assert loo_score(_history(4)).status == "ok"
    score = loo_score(_history(3))
    assert score.status == "too_few_experiments" and score.gain is None
    assert score.message == "3 experiments: leaving one out needs 4 or more"


def test_backtest_forecasts_each_experiment_from_the_earlier_ones() -> None:
    rows = _history(9)
    order = [f"e{i}" for i in (8, 7, 6, 5, 4, 3, 2, 1, 0)]
    b = backtest(rows, order, alpha=0.1)
    assert b.status == "ok" and b.skipped == 3 and b.forecast == 6
    by_name = {r.experiment: r for r in rows}
    for step in b.steps:
        i = order.index(step.experiment)
        earlier = [by_name[n] for n in order[:i]]
        r = by_name[step.experiment]
        f = predict(fit(earlier, 0.1), r.offline_lift, r.offline_se, 0.1)
        assert step.history == i
        assert step.point == pytest.approx(f.point) and step.p_positive == pytest.approx(
            f.p_positive
        )
        assert step.kept == (f.p_positive > 0.5)
        assert step.covered == (step.observed_interval[0] <= r.online_lift
                                <= step.observed_interval[1])  # fmt: skip
        z = st.norm.isf(0.05)
        side = 1 if r.online_lift - z * r.online_se > 0 else (
            -1 if r.online_lift + z * r.online_se < 0 else 0)  # fmt: skip
        assert step.observed_side == side
    steps = b.steps
    assert b.coverage == pytest.approx(np.mean([s.covered for s in steps]))
    assert b.sign_accuracy == pytest.approx(np.mean([(s.point > 0) == (s.observed > 0)
                                                     for s in steps]))  # fmt: skip
    assert b.mean_absolute_error == pytest.approx(np.mean([abs(s.point - s.observed)
                                                           for s in steps]))  # fmt: skip
    assert b.kept == sum(s.kept for s in steps)
    assert b.kept_better + b.kept_worse <= b.kept
    assert b.missed == sum(1 for s in steps if not s.kept and s.observed_side == 1)
    assert b.avoided == sum(1 for s in steps if not s.kept and s.observed_side == -1)


def test_observed_interval_widens_the_forecast_by_the_noise() -> None:
    rows = _history(9)
    b = backtest(rows, [r.experiment for r in rows])
    for step in b.steps:
        lo, hi = step.interval
        olo, ohi = step.observed_interval
        assert olo < lo and ohi > hi


def test_backtest_with_too_few_experiments() -> None:
    b = backtest(_history(3), ["e0", "e1", "e2"])
    assert b.status == "too_few_experiments" and b.skipped == 3 and b.coverage is None
    # the fourth is the first with a history of 3, the fewest the forecast takes
    assert backtest(_history(4), ["e0", "e1", "e2", "e3"]).skipped == 3
