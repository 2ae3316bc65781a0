"""Team-draft interleaved logs: the draft's rules, the event table, and that the
better ranker is preferred while identical rankers are not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from abeval.simulate.config import SimulationConfig
from abeval.simulate.interleaved import (
    INTERLEAVED_ARM,
    interleaved_requests,
    simulate_interleaved,
    team_draft,
)
from abeval.stats import InterleavingStats, compare_interleaved


def test_team_draft_follows_its_rules() -> None:
    rng = np.random.default_rng(0)
    n_req, pool, length = 2_000, 12, 8
    order_a = np.argsort(rng.random((n_req, pool)), axis=1)
    order_b = np.argsort(rng.random((n_req, pool)), axis=1)
    picks, team = team_draft(rng, order_a, order_b, length)
    # distinct items, one pick per team in every round
    assert all(len(set(row)) == length for row in picks)
    rounds = team.reshape(n_req, length // 2, 2)
    assert (rounds.sum(axis=2) == 1).all()
    # each pick is its ranker's best candidate not yet in the list
    for r in range(50):
        for slot in range(length):
            order = order_a[r] if team[r, slot] == 0 else order_b[r]
            free = [c for c in order if c not in set(picks[r, :slot])]
            assert picks[r, slot] == free[0]
    # the coin: A picks first in about half the rounds
    first_a = int((rounds[:, :, 0] == 0).sum())
    assert sps.binomtest(first_a, rounds[:, :, 0].size).pvalue > 0.001


def test_identical_rankers_share_the_list_but_the_better_one_wins() -> None:
    same = interleaved_requests(SimulationConfig(users=3_000, true_ctr_lift={"treatment": 0.0}))
    result = compare_interleaved(InterleavingStats.from_users(*same.per_user()))
    assert result.interval is not None
    assert result.interval[0] <= 0 <= result.interval[1]
    assert (same.team == 0).mean() == pytest.approx(0.5)
    better = interleaved_requests(SimulationConfig(users=3_000, true_ctr_lift={"treatment": 0.2}))
    result = compare_interleaved(InterleavingStats.from_users(*better.per_user()))
    # B (the treatment) has the more relevant ranking: Δ_AB < 0, clearly
    assert result.p_value is not None and result.p_value < 1e-6
    assert result.delta is not None and result.delta < 0


def test_cascade_clicks_at_most_once_per_request() -> None:
    sim = interleaved_requests(SimulationConfig(users=500), clicks="cascade")
    assert sim.clicked.sum(axis=1).max() == 1
    assert not (sim.bought & ~sim.clicked).any()


def test_event_table_carries_one_arm_and_a_team_per_impression() -> None:
    config = SimulationConfig(users=200, seed=4)
    table = simulate_interleaved(config).to_pylist()
    assert {row["arm"] for row in table} == {INTERLEAVED_ARM}
    impressions = [row for row in table if row["event_type"] == "impression"]
    assert {row["team"] for row in impressions} == set(config.arms)
    assert all(row["team"] is None for row in table if row["event_type"] != "impression")
    # every click names a shown item of its request; the counts are the simulation's
    sim = interleaved_requests(config)
    shown = {(row["request_id"], row["item_id"]) for row in impressions}
    clicks = [row for row in table if row["event_type"] == "click"]
    assert all((row["request_id"], row["item_id"]) in shown for row in clicks)
    assert len(clicks) == int(sim.clicked.sum())
    assert len(impressions) == sim.items.size
    assert sum(row["event_type"] == "exposure" for row in table) == config.users
