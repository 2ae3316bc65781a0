"""Paired comparison over users: the t test against scipy, the sign-flip test against
the exact enumeration of every sign vector, Holm against statsmodels."""

from __future__ import annotations

import itertools
from unittest.mock import patch

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from abeval.stats.paired import (
    PairedComparison,
    adjust_holm,
    paired_comparison,
    sign_flip_p_value,
)


def exact_sign_flip_p(d: np.ndarray) -> float:
    """The share of all 2^n sign vectors s with |Σ s·d| ≥ |Σ d| (ties left out)."""
    nz = d[d != 0]
    observed = abs(nz.sum())
    flips = [abs(np.dot(s, nz)) for s in itertools.product([-1, 1], repeat=len(nz))]
    return float(np.mean([f >= observed - 1e-12 for f in flips]))


def test_paired_t_matches_scipy() -> None:
    rng = np.random.default_rng(7)
    base = rng.uniform(0, 1, 40)
    other = base + rng.normal(0.05, 0.2, 40)
    c = paired_comparison("ndcg@10", "b", "a", base, other, alpha=0.1)
    ref = stats.ttest_rel(other, base)
    assert c.t_statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert c.p_t == pytest.approx(ref.pvalue, rel=1e-10)
    interval = ref.confidence_interval(confidence_level=0.9)
    assert (c.ci_low, c.ci_high) == pytest.approx((interval.low, interval.high), rel=1e-12)
    assert c.difference == pytest.approx(float(np.mean(other - base)))
    assert (c.baseline_mean, c.model_mean) == pytest.approx((base.mean(), other.mean()))
    assert (c.metric, c.model, c.baseline, c.users, c.status) == ("ndcg@10", "b", "a", 40, "ok")


def test_sign_flip_matches_the_exact_enumeration() -> None:
    d = np.array([0.3, -0.1, 0.25, 0.0, 0.4, 0.15, -0.05, 0.2])
    exact = exact_sign_flip_p(d)
    resamples = 200_000
    p = sign_flip_p_value(d, resamples, seed=3)
    # Monte Carlo error of a share estimated from 200,000 draws: well below 0.005.
    assert p == pytest.approx(exact, abs=0.005)
    hits = p * (1 + resamples) - 1  # p = (1 + hits) / (1 + resamples)
    assert hits == pytest.approx(round(hits))


def test_sign_flip_is_seeded_and_ties_give_one() -> None:
    d = np.array([0.2, -0.1, 0.4, 0.3])
    assert sign_flip_p_value(d, 500, seed=1) == sign_flip_p_value(d, 500, seed=1)
    assert sign_flip_p_value(np.zeros(5), 500, seed=1) == 1.0


def test_wins_ties_losses_and_a_constant_difference() -> None:
    base = np.array([0.5, 1.0, 1.5, 2.0])
    c = paired_comparison("m", "b", "a", base, base + 0.25)  # exact in binary
    assert (c.wins, c.ties, c.losses) == (4, 0, 0)
    assert c.t_statistic is None and c.p_t == 0.0
    assert c.ci_low == c.ci_high == 0.25
    assert c.message == "every user has the same difference: the t test is degenerate"


def test_fewer_than_two_users_is_undefined() -> None:
    c = paired_comparison("m", "b", "a", np.array([0.5]), np.array([0.7]))
    assert c.status == "undefined"
    assert (c.users, c.wins, c.ties, c.losses) == (1, 1, 0, 0)
    assert c.p_t is None and c.p_randomization is None and c.difference is None


def test_holm_matches_statsmodels_per_test() -> None:
    rng = np.random.default_rng(11)
    comparisons = [
        paired_comparison(f"m{i}", "b", "a", base, base + rng.normal(shift, 0.3, 30), seed=i)
        for i, (base, shift) in enumerate(
            (rng.uniform(0, 1, 30), shift) for shift in (0.0, 0.05, 0.1, 0.2, 0.02)
        )
    ]
    undefined = paired_comparison("m9", "b", "a", np.array([0.1]), np.array([0.2]))
    adjusted = adjust_holm([*comparisons, undefined])
    with patch("gc.collect", return_value=0):  # statsmodels collects garbage on every call
        ref_t = multipletests([c.p_t for c in comparisons], method="holm")[1]
        ref_r = multipletests([c.p_randomization for c in comparisons], method="holm")[1]
    assert [c.p_t_holm for c in adjusted[:-1]] == pytest.approx(list(ref_t), abs=1e-15)
    assert [c.p_randomization_holm for c in adjusted[:-1]] == pytest.approx(list(ref_r), abs=1e-15)
    assert adjusted[-1] == undefined  # left out of both families


def test_to_dict_has_no_nan() -> None:
    c = PairedComparison(
        "m", "b", "a", 3, 0.1, float("nan"), None, None, None, None, None, None, None, None, 1, 1, 1
    )
    out = c.to_dict()
    assert out["model_mean"] is None and out["baseline_mean"] == 0.1
    assert list(out) == [f.name for f in c.__dataclass_fields__.values()]
