"""Model comparison in ``evaluate``: paired t test, sign-flip randomisation, Holm."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from metrics_helpers import write_csv
from scipy import stats

from abeval.analysis.evaluate import evaluate
from abeval.report.evaluate_text import render_text
from abeval.stats.paired import paired_comparison


def test_paired_t_matches_scipy_and_sign_flip_matches_exact_enumeration() -> None:
    base = np.array([0.1, 0.4, 0.3, 0.9, 0.5, 0.2, 0.7])
    other = np.array([0.3, 0.5, 0.3, 1.0, 0.2, 0.6, 0.9])
    c = paired_comparison("m", "b", "a", base, other, resamples=40000, seed=1)
    ref = stats.ttest_rel(other, base)
    assert c.t_statistic == pytest.approx(ref.statistic)
    assert c.p_t == pytest.approx(ref.pvalue)
    d = other - base
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    assert (c.ci_low, c.ci_high) == pytest.approx((d.mean() - half, d.mean() + half))
    nz = d[d != 0]
    flips = [abs(np.dot(s, nz)) for s in itertools.product([-1, 1], repeat=len(nz))]
    exact = np.mean([f >= abs(nz.sum()) - 1e-12 for f in flips])
    assert c.p_randomization == pytest.approx(exact, abs=0.01)
    assert (c.wins, c.ties, c.losses) == (5, 1, 1)


def test_identical_models_are_not_different() -> None:
    x = np.array([0.1, 0.5, 0.9])
    c = paired_comparison("m", "b", "a", x, x.copy())
    assert (c.difference, c.p_t, c.p_randomization) == (0.0, 1.0, 1.0)
    assert (c.wins, c.ties, c.losses) == (0, 3, 0)


def test_evaluate_compares_models_with_holm(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    truth_rows = []
    base_rows = []
    better_rows = []
    for u in range(60):
        relevant = rng.choice(20, size=3, replace=False)
        truth_rows += [(f"u{u}", f"i{i}") for i in relevant]
        base = rng.permutation(20)[:10]
        # the better model puts one relevant item first
        better = [relevant[0], *[i for i in base if i != relevant[0]]][:10]
        base_rows += [(f"u{u}", f"i{i}", r + 1) for r, i in enumerate(base)]
        better_rows += [(f"u{u}", f"i{i}", r + 1) for r, i in enumerate(better)]
    truth = write_csv(tmp_path / "truth.csv", "user_id,item_id", truth_rows)
    base_f = write_csv(tmp_path / "base.csv", "user_id,item_id,rank", base_rows)
    better_f = write_csv(tmp_path / "better.csv", "user_id,item_id,rank", better_rows)
    result = evaluate(truth, [base_f, better_f], metrics="mrr,ndcg@5,precision@1", resamples=500)
    assert result.models == ("base", "better")
    assert [c.metric for c in result.comparisons] == ["mrr", "ndcg@5", "precision@1"]
    raw = [c.p_t for c in result.comparisons if c.p_t is not None]
    assert len(raw) == 3
    order = np.argsort(raw)
    m = len(raw)
    expected = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * raw[i]))
        expected[i] = running
    assert [c.p_t_holm for c in result.comparisons] == pytest.approx(list(expected))
    mrr = result.comparisons[0]
    assert mrr.difference is not None and mrr.difference > 0
    assert mrr.model_mean == pytest.approx(1.0)
    assert mrr.users == 60 and mrr.wins + mrr.ties + mrr.losses == 60
    assert mrr.p_randomization_holm is not None and mrr.p_randomization_holm < 0.01
    text = render_text(result)
    assert "paired comparison with base" in text
