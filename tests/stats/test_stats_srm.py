"""Sample-ratio mismatch against scipy's chi-square goodness-of-fit test."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps
from stats_helpers import assert_json_clean

from abeval.stats import srm_test


@given(st.lists(st.integers(1, 100_000), min_size=2, max_size=6), st.data())
def test_srm_matches_scipy_chisquare(users: list[int], data: st.DataObject) -> None:
    weights = data.draw(st.lists(st.floats(0.05, 5.0), min_size=len(users), max_size=len(users)))
    result = srm_test(users, weights)
    expected_counts = [sum(users) * w / sum(weights) for w in weights]
    expected = sps.chisquare(users, expected_counts)
    assert result.status == "ok"
    assert result.statistic == pytest.approx(expected.statistic, rel=1e-9, abs=1e-12)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-7, abs=1e-300)
    assert result.dof == len(users) - 1
    assert result.flagged == (expected.pvalue < 0.001)


def test_threshold_is_a_parameter() -> None:
    users = [5000, 5200]  # p ≈ 0.048
    assert not srm_test(users).flagged
    assert srm_test(users, threshold=0.05).flagged
    assert srm_test([50, 50], [0.5, 0.5]).p_value == pytest.approx(1.0)
    # a 90/10 split as configured is fine; against equal weights it is a mismatch
    assert not srm_test([9000, 1000], [9, 1]).flagged
    assert srm_test([9000, 1000]).flagged


@pytest.mark.parametrize(
    ("users", "weights", "status"),
    [
        ([0, 0], None, "no_users"),
        ([10], None, "single_arm"),
        ([], None, "single_arm"),
        ([10, -1], None, "invalid_input"),
    ],
)
def test_degenerate_counts(users: list[int], weights: list[float] | None, status: str) -> None:
    result = srm_test(users, weights)
    assert result.status == status and result.message
    assert result.p_value is None and not result.flagged
    assert_json_clean(result.to_dict())


def test_weights_must_match_arms() -> None:
    with pytest.raises(ValueError):
        srm_test([1, 2], [1.0])
