"""The simulated history (docs/metrics.md#simulated-history): its knobs, the
exact probabilities behind the popularity tilt and the target file, its files,
and the relation between offline and online lift it promises.

Expected values come from exhaustive enumeration of orderings, from the
definitions of NDCG and CTR written here, or from scipy; the series' own output
is only what is checked."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.stats import spearmanr

from abeval.analysis.evaluate import evaluate
from abeval.analysis.online import ReportOptions, build_report
from abeval.analysis.ope import OpeOptions
from abeval.simulate import SimulationConfig, expected_effects, simulate
from abeval.simulate.events import Pools, order_pools, simulate_with_target
from abeval.simulate.model import model_of
from abeval.simulate.series import (
    SeriesConfig,
    expected_ndcg,
    heldout,
    series,
    write_experiment,
)
from abeval.store import open_store
from abeval.store.ingest import ingest_file

TINY = SeriesConfig(
    experiments=3,
    seed=5,
    heldout_users=300,
    base=replace(SeriesConfig().base, users=300),
)


# --------------------------------------------------------------------------- exact orderings


def _orderings(relevant: list[bool], weight: float, tau: float) -> dict[tuple[int, ...], float]:
    """Every ordering of the candidates (index = popularity rank, 0 most popular)
    with its probability: Plackett–Luce with weight ``weight`` on relevant items
    and 1 on the others, except that with probability ``tau`` the irrelevant items
    are shown in popularity order on the slots the draw gave them."""
    n = len(relevant)
    w = [weight if r else 1.0 for r in relevant]
    irrelevant = [i for i in range(n) if not relevant[i]]
    out: dict[tuple[int, ...], float] = {}
    for perm in itertools.permutations(range(n)):
        p, left = 1.0, sum(w)
        for item in perm:
            p *= w[item] / left
            left -= w[item]
        # the class sequence has probability p · R! · (n - R)!; in popularity mode
        # the relevant items keep their uniform order and the irrelevant ones are fixed
        in_order = [i for i in perm if not relevant[i]] == irrelevant
        popular = p * math.factorial(len(irrelevant)) if in_order else 0.0
        out[perm] = (1 - tau) * p + tau * popular
    return out


def _marginals(orderings: dict[tuple[int, ...], float], n: int, shown: int) -> np.ndarray:
    """``m[item, k]``: probability that ``item`` is at position ``k`` (k < shown)."""
    m = np.zeros((n, shown))
    for perm, p in orderings.items():
        for k in range(shown):
            m[perm[k], k] += p
    return m


RELEVANCE = [False, True, False, False, True, False]


def _six_candidates(tau: float, **more: Any) -> SimulationConfig:
    """Three of six candidates shown; the treatment tilted by ``tau``."""
    return SimulationConfig(
        users=10,
        list_length=3,
        candidates=6,
        catalogue=50,
        arms=("control", "treatment"),
        popularity_tilt={"treatment": tau},
        **more,
    )


@pytest.mark.parametrize("tau", [0.0, 0.3, 0.8])
def test_tilted_propensities_match_enumeration(tau: float) -> None:
    model = model_of(_six_candidates(tau, true_ctr_lift={"treatment": 0.05}))
    weight = float(model.weights[1])
    exact = _marginals(_orderings(RELEVANCE, weight, tau), 6, 3)
    relevant = np.array(RELEVANCE)
    irrelevant_rank = np.cumsum(~relevant) - 1
    items, slots = np.meshgrid(np.arange(6), np.arange(3), indexing="ij")
    got = model.propensities(
        1,
        np.full(items.size, relevant.sum()),
        slots.ravel(),
        relevant[items.ravel()],
        irrelevant_rank[items.ravel()],
    ).reshape(6, 3)
    assert np.allclose(got, exact, atol=1e-12)
    # the tilt moves irrelevant items between slots, never relevance: per position the
    # probability of a relevant item is the untilted one (so CTR cannot change)
    untilted = _marginals(_orderings(RELEVANCE, weight, 0.0), 6, 3)
    assert np.allclose(exact[relevant].sum(axis=0), untilted[relevant].sum(axis=0), atol=1e-12)
    if tau > 0:
        assert not np.allclose(exact, untilted)


def test_the_sampler_draws_the_enumerated_orderings() -> None:
    model = model_of(_six_candidates(0.6))
    draws = 40_000
    pools = Pools(
        np.tile(np.array([3, 8, 11, 20, 27, 40]), (draws, 1)),
        np.tile(np.array(RELEVANCE), (draws, 1)),
    )
    order = order_pools(np.random.default_rng(3), model, pools, np.ones(draws, dtype=np.int64))
    freq = np.zeros((6, 3))
    for k in range(3):
        freq[:, k] = np.bincount(order[:, k], minlength=6) / draws
    exact = _marginals(_orderings(RELEVANCE, float(model.weights[1]), 0.6), 6, 3)
    sd = np.sqrt(exact * (1 - exact) / draws)
    assert np.all(np.abs(freq - exact) <= 4.5 * sd + 1e-12)


def test_expected_ndcg_matches_enumeration() -> None:
    config = SimulationConfig(list_length=3, candidates=5, relevant_share=0.3, catalogue=50)
    weight = 2.5
    total, mass = 0.0, 0.0
    discount = [1 / math.log2(k + 2) for k in range(3)]
    for pattern in itertools.product([False, True], repeat=5):
        r = sum(pattern)
        if r == 0:
            continue
        p_pattern = 0.3**r * 0.7 ** (5 - r)
        ideal = sum(discount[: min(r, 3)])
        for perm, p in _orderings(list(pattern), weight, 0.0).items():
            dcg = sum(discount[k] for k in range(3) if pattern[perm[k]])
            total += p_pattern * p * dcg / ideal
        mass += p_pattern
    assert expected_ndcg(config, weight) == pytest.approx(total / mass, rel=1e-12)


# --------------------------------------------------------------------------- the series


def test_knobs_span_their_ranges_independently() -> None:
    s = SeriesConfig()
    found = series(s)
    lifts = np.array([e.ctr_lift for e in found])
    tilts = np.array([e.tilt for e in found])
    assert len(found) == 12 and [e.name for e in found][:2] == ["series-01", "series-02"]
    assert np.allclose(np.sort(lifts), np.linspace(-0.08, 0.10, 12))
    assert np.allclose(np.sort(tilts), np.linspace(0.0, 0.8, 12))
    assert (np.abs(lifts) < 0.01).sum() >= 1  # some treatments are (almost) neutral
    assert abs(spearmanr(lifts, tilts).statistic) <= 0.05
    for e in found:
        truth = expected_effects(e.config)
        assert truth.relative_lift("ctr", "treatment") == pytest.approx(e.ctr_lift, abs=1e-9)
        assert e.config.tilt("control") == 0.4 and e.config.tilt("treatment") == e.tilt
    # offline quality follows online quality: the expected NDCG lift has the same order
    by_lift = sorted(found, key=lambda e: e.ctr_lift)
    ndcg = [e.expected_ndcg_lift for e in by_lift]
    assert all(a < b for a, b in itertools.pairwise(ndcg))
    assert all((e.expected_ndcg_lift > 0) == (e.ctr_lift > 0) for e in found)
    # experiments follow each other in time
    starts = [e.config.start for e in found]
    assert all(a < b for a, b in itertools.pairwise(starts))


def test_series_is_deterministic_by_seed() -> None:
    first = series(TINY)[1]
    again = series(TINY)[1]
    other = series(replace(TINY, seed=6))[1]
    assert first == again and first.config.seed != other.config.seed
    events, target = simulate_with_target(first.config)
    events2, target2 = simulate_with_target(again.config)
    assert events.equals(events2) and target.equals(target2)
    assert events.equals(simulate(first.config))  # the same log as the plain simulator
    truth, lists = heldout(first.config, 200)
    truth2, lists2 = heldout(first.config, 200)
    assert truth.equals(truth2) and all(lists[a].equals(lists2[a]) for a in lists)
    assert not simulate_with_target(other.config)[0].equals(events)


def test_target_rows_are_the_other_arms_impressions() -> None:
    e = series(TINY)[0]
    events, target = simulate_with_target(e.config)
    con = duckdb.connect()
    con.register("ev", events)
    con.register("t", target)
    expected = con.execute(
        "WITH x AS (SELECT *, MIN(ts) FILTER (WHERE event_type = 'exposure') "
        "OVER (PARTITION BY user_id) AS exposed FROM ev) "
        "SELECT request_id, item_id, position, arm, propensity FROM x "
        "WHERE event_type = 'impression' AND ts >= exposed ORDER BY request_id, position"
    ).fetchall()
    got = con.execute("SELECT * FROM t ORDER BY request_id, position").fetchall()
    assert [g[:3] for g in got] == [x[:3] for x in expected]
    probability = np.array([g[3] for g in got])
    assert (probability > 0).all() and (probability <= 1).all()
    # per request and position, one row; the sum over a request's shown items of the other
    # arm's probability at a position is at most 1
    worst = con.execute(
        "SELECT MAX(s) FROM (SELECT request_id, position, SUM(probability) AS s FROM t "
        "GROUP BY request_id, position)"
    ).fetchone()
    assert worst is not None and worst[0] <= 1 + 1e-12


def test_files_ingest_and_evaluate(tmp_path: Path) -> None:
    e = series(TINY)[2]
    files = write_experiment(e, tmp_path / e.name, TINY.heldout_users)
    header = ",".join(pq.ParquetFile(files.events).schema_arrow.names)
    assert header.startswith("experiment,arm,user_id,ts,event_type") and "propensity" in header
    with open_store(str(tmp_path / "s.duckdb")) as store:
        summary = ingest_file(store, files.events)
    assert summary.rejected == 0 and summary.duplicates == 0
    assert summary.inserted == simulate(e.config).num_rows
    models = [files.recommendations[arm] for arm in ("control", "treatment")]
    result = evaluate(files.truth, models, k=(10,), metrics="ndcg@10", resamples=50)
    assert result.models == ("control", "treatment")
    users_with_truth = len({line.split(",")[0] for line in files.truth.read_text().split()[1:]})
    for c in result.coverage:
        assert c.users_evaluated == users_with_truth and c.users_in_recommendations == 300
    target = pq.ParquetFile(files.target_propensities).schema_arrow.names
    assert target[:3] == ["request_id", "item_id", "position"]


def test_target_file_gives_off_policy_estimates_without_warnings(tmp_path: Path) -> None:
    e = series(SeriesConfig())[0]
    files = write_experiment(e, tmp_path / e.name, 10)
    with open_store(str(tmp_path / "s.duckdb")) as store:
        ingest_file(store, files.events)
        options = ReportOptions(
            offline=False, ope=OpeOptions(target_propensities=str(files.target_propensities))
        )
        report = build_report(store, e.name, options)
    ope = report.ope
    assert ope.status == "ok" and ope.warnings == ()
    assert {(d.source, d.target) for d in ope.directions} == {
        ("control", "treatment"),
        ("treatment", "control"),
    }
    for d in ope.directions:
        g = d.diagnostics
        assert d.target_probabilities == "file" and d.warnings == ()
        assert g.mean_weight is not None and abs(g.mean_weight - 1) < 0.02
        assert g.support_deficit == 0 and g.ess_share is not None and g.ess_share > 0.5
    forward = next(d for d in ope.directions if d.source == "control")
    ips = next(x for x in forward.estimates if x.estimator == "ips")
    truth = expected_effects(e.config).arms["treatment"].ctr
    assert ips.ctr.ci is not None and ips.ctr.ci[0] <= truth <= ips.ctr.ci[1]


def _ctr_and_se(con: duckdb.DuckDBPyConnection, arm: str) -> tuple[float, float]:
    """Clicks per impression from exposure on, and its delta-method standard
    error with users as clusters."""
    rows = con.execute(
        "WITH x AS (SELECT *, MIN(ts) FILTER (WHERE event_type = 'exposure') "
        "OVER (PARTITION BY user_id) AS exposed FROM ev) "
        "SELECT COUNT(*) FILTER (WHERE event_type = 'click'), "
        "COUNT(*) FILTER (WHERE event_type = 'impression') FROM x "
        "WHERE ts >= exposed AND arm = ? GROUP BY user_id",
        [arm],
    ).fetchall()
    c, n = np.array(rows, dtype=np.float64).T
    ratio = c.sum() / n.sum()
    se = np.sqrt(np.var(c - ratio * n, ddof=1) / c.size) / n.mean()
    return float(ratio), float(se)


def test_the_tilt_moves_what_is_shown_not_the_clicks() -> None:
    config = SimulationConfig(
        users=6_000,
        seed=4,
        candidates=20,
        catalogue=1_000,
        pre_period_days=0,
        requests_per_user=4.0,
        true_ctr_lift={"treatment": 0.0},
        popularity_tilt={"treatment": 0.8},
    )
    table = simulate(config)
    con = duckdb.connect()
    con.register("ev", table)
    truth = expected_effects(config).arms["control"].ctr
    for arm in ("control", "treatment"):
        ctr, se = _ctr_and_se(con, arm)
        assert abs(ctr - truth) < 4 * se, (arm, ctr, truth, se)
    # the tilted arm shows popular items more often: a larger share of its
    # impressions goes to the 50 items shown most overall
    top = dict(
        con.execute(
            "WITH imp AS (SELECT arm, item_id FROM ev WHERE event_type = 'impression'), "
            "top AS (SELECT item_id FROM imp GROUP BY item_id ORDER BY COUNT(*) DESC LIMIT 50) "
            "SELECT arm, AVG(CASE WHEN item_id IN (SELECT item_id FROM top) THEN 1 ELSE 0 END) "
            "FROM imp GROUP BY arm"
        ).fetchall()
    )
    assert top["treatment"] > top["control"] + 0.02, top


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"candidates": 5}, "candidates must be in list_length..1000"),
        ({"popularity_tilt": {"other": 0.2}}, "popularity_tilt names unknown arms: ['other']"),
        ({"popularity_tilt": {"control": 1.0}}, "popularity_tilt values must be in [0, 1)"),
        ({"candidates": 30, "catalogue": 20}, "catalogue must hold at least list_length"),
    ],
)
def test_new_settings_are_checked(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        SimulationConfig(**change)
    assert str(caught.value).startswith(message)


def test_series_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="experiments must be >= 1"):
        SeriesConfig(experiments=0)
    with pytest.raises(ValueError, match="tilts must be in"):
        SeriesConfig(tilt_range=(0.2, 1.0))
    with pytest.raises(ValueError, match="exactly two arms"):
        simulate_with_target(SimulationConfig(users=10, arms=("a", "b", "c")))
