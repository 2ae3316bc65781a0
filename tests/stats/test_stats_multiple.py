"""Multiple testing: adjusted p-values against statsmodels, and intervals that agree
with the adjusted decisions."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from abeval.stats import (
    Comparison,
    MeanStats,
    adjust_comparisons,
    adjust_pvalues,
    adjusted_alphas,
    compare,
)

p_lists = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=25)


def reference(p: list[float], method: str, alpha: float = 0.05) -> tuple[list[bool], list[float]]:
    """statsmodels' decisions and adjusted p-values. Its multipletests runs a full
    gc.collect() on every call (36 ms here); that is switched off for speed."""
    with patch("gc.collect", return_value=0):
        reject, adjusted, _, _ = multipletests(p, alpha=alpha, method=method)
    return list(reject), list(adjusted)


@given(p_lists)
def test_holm_matches_statsmodels(p: list[float]) -> None:
    assert adjust_pvalues(p, "holm") == pytest.approx(reference(p, "holm")[1], abs=1e-12)


@given(p_lists)
def test_bh_matches_statsmodels(p: list[float]) -> None:
    assert adjust_pvalues(p, "bh") == pytest.approx(reference(p, "fdr_bh")[1], abs=1e-12)


@given(p_lists, st.sampled_from([0.01, 0.05, 0.1]))
def test_rejections_match_statsmodels(p: list[float], alpha: float) -> None:
    for method, sm in (("holm", "holm"), ("bh", "fdr_bh")):
        reject = reference(p, sm, alpha)[0]
        levels = adjusted_alphas(p, alpha, method)  # type: ignore[arg-type]
        # an interval at level 1 − αᵢ excludes 0 exactly when pᵢ < αᵢ
        ours = [pi <= level for pi, level in zip(p, levels, strict=True)]
        assert ours == reject


def test_interval_levels_by_hand() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.20]
    # Holm, α = 0.05, m = 5: sorted 0.005 (≤ .01 ✓), 0.01 (≤ .0125 ✓), 0.03 (> .01667 ✗):
    # stops at step 3, so ranks 3-5 all get .05/3
    assert adjusted_alphas(p, 0.05, "holm") == pytest.approx(
        [0.05 / 4, 0.05 / 3, 0.05 / 3, 0.05 / 5, 0.05 / 3]
    )
    assert adjusted_alphas(p, 0.05, "holm", holm_intervals="bonferroni") == [0.01] * 5
    # BH: 0.005 ≤ .01, 0.01 ≤ .02, 0.03 ≤ .03, 0.04 ≤ .04, 0.20 > .05: R = 4
    assert adjusted_alphas(p, 0.05, "bh") == pytest.approx([0.04] * 5)
    # no rejection: R taken as 1
    assert adjusted_alphas([0.5, 0.9], 0.05, "bh") == pytest.approx([0.025, 0.025])


def _results(seed: int, k: int) -> list[Comparison]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(k):
        c = MeanStats.from_values(rng.normal(10, 3, 200))
        t = MeanStats.from_values(rng.normal(10 + 0.25 * i, 3, 200))
        out.append(compare(c, t))
    return out


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 8), st.sampled_from(["holm", "bh"]))
def test_adjusted_intervals_agree_with_adjusted_p_values(seed: int, k: int, method: str) -> None:
    for result in adjust_comparisons(_results(seed, k), method):  # type: ignore[arg-type]
        assert result.adjustment == method
        for lift in (result.absolute, result.relative):
            assert lift.p_adjusted is not None and lift.ci_adjusted is not None
            assert lift.p_value is not None and lift.ci is not None
            assert lift.p_adjusted >= lift.p_value
            excludes_zero = lift.ci_adjusted[0] > 0 or lift.ci_adjusted[1] < 0
            assert excludes_zero == (lift.p_adjusted < result.alpha)
            # adjusted intervals contain the raw ones
            assert lift.ci_adjusted[0] <= lift.ci[0] and lift.ci_adjusted[1] >= lift.ci[1]


def test_sequential_intervals_agree_with_adjusted_always_valid_p_values() -> None:
    rng = np.random.default_rng(11)
    results = []
    for lift in (0.0, 0.1, 0.2, 0.3, 0.4):
        c = MeanStats.from_values(rng.normal(10, 3, 3000))
        t = MeanStats.from_values(rng.normal(10 + lift, 3, 3000))
        results.append(compare(c, t, sequential=True))
    adjusted = adjust_comparisons(results, "holm")
    decisions = []
    for result in adjusted:
        absolute = result.absolute
        assert absolute.ci_adjusted is not None and absolute.p_adjusted is not None
        excludes_zero = absolute.ci_adjusted[0] > 0 or absolute.ci_adjusted[1] < 0
        assert excludes_zero == (absolute.p_adjusted < 0.05)
        decisions.append(excludes_zero)
    assert any(decisions) and not all(decisions)  # the check is not vacuous


def test_untested_results_stay_out_of_the_family() -> None:
    tested = _results(1, 3)
    empty = compare(MeanStats.from_values([]), MeanStats.from_values([1.0, 2.0]))
    adjusted = adjust_comparisons([*tested, empty], "holm")
    assert adjusted[3].absolute.p_adjusted is None and adjusted[3].status == "empty_arm"
    raw = [r.absolute.p_value or 0.0 for r in tested]
    assert [r.absolute.p_adjusted for r in adjusted[:3]] == pytest.approx(
        adjust_pvalues(raw, "holm")
    )
    assert adjust_comparisons([], "bh") == []


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        adjust_pvalues([0.1, 1.2])
    with pytest.raises(ValueError):
        adjust_pvalues([0.1], "bonferroni")  # type: ignore[arg-type]
    mixed = [*_results(2, 1), compare(*_pair(), alpha=0.1)]
    with pytest.raises(ValueError):
        adjust_comparisons(mixed)


def _pair() -> tuple[MeanStats, MeanStats]:
    return MeanStats.from_values([1.0, 2.0, 3.0]), MeanStats.from_values([2.0, 3.0, 5.0])
