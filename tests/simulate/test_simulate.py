"""The simulator: structure of the log it writes, and the truth it promises."""

from __future__ import annotations

import itertools
import math
from collections.abc import Generator, Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq
import pytest

from abeval.simulate import (
    EVENT_COLUMNS,
    SimulationConfig,
    event_schema,
    expected_effects,
    format_of,
    relevant_at_position,
    simulate,
    users_for_rows,
    write_events,
)
from abeval.simulate.columns import labels, strings

SMALL = SimulationConfig(users=1_500, seed=7, requests_per_user=4.0, pre_period_days=7)
# Big enough for the effects to be measured to a few percent, with large true effects.
BIG = SimulationConfig(
    users=30_000,
    seed=11,
    requests_per_user=4.0,
    pre_period_days=7,
    true_ctr_lift={"treatment": 0.20},
    base_purchase_rate=0.3,
    true_conversion_lift={"treatment": 0.30},
    with_event_ids=False,
)


def _con(table: pa.Table) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.register("ev", table)
    # each event with its user's exposure time
    con.execute(
        """
        CREATE TEMP VIEW e AS
        SELECT ev.*, min(ts) FILTER (WHERE event_type = 'exposure')
                     OVER (PARTITION BY user_id) AS exposed_at
        FROM ev
        """
    )
    return con


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> object:
    row = con.execute(sql).fetchone()
    assert row is not None
    return row[0]


@pytest.fixture(scope="module")
def small() -> pa.Table:
    return simulate(SMALL)


@pytest.fixture(scope="module")
def big() -> pa.Table:
    return simulate(BIG)


# --------------------------------------------------------------------------- structure


def test_deterministic_by_seed(small: pa.Table) -> None:
    assert simulate(SMALL).equals(small)
    other = simulate(SimulationConfig(users=SMALL.users, seed=SMALL.seed + 1))
    assert not other.equals(small)


def test_schema(small: pa.Table) -> None:
    assert tuple(small.column_names) == (*EVENT_COLUMNS, "device")
    assert small.schema == event_schema(SMALL)
    assert small.schema.field("ts").type == pa.timestamp("ms", tz="UTC")
    con = _con(small)
    kinds = {r[0] for r in con.execute("SELECT DISTINCT event_type FROM ev").fetchall()}
    assert kinds == {"exposure", "impression", "click", "purchase"}
    assert {r[0] for r in con.execute("SELECT DISTINCT arm FROM ev").fetchall()} == set(SMALL.arms)
    assert _one(con, "SELECT count(DISTINCT experiment) FROM ev") == 1
    assert _one(con, "SELECT count(DISTINCT event_id) FROM ev") == small.num_rows
    devices = {r[0] for r in con.execute("SELECT DISTINCT device FROM ev").fetchall()}
    assert devices == set(SMALL.segments["device"])
    # which columns are set on which event types
    bad = _one(
        con,
        """
        SELECT count(*) FROM ev WHERE
            (event_type = 'exposure') <> (request_id IS NULL)
            OR (event_type = 'exposure') <> (item_id IS NULL)
            OR (event_type = 'impression') <> (position IS NOT NULL)
            OR (event_type = 'impression') <> (propensity IS NOT NULL)
            OR (event_type = 'purchase') <> (value IS NOT NULL)
        """,
    )
    assert bad == 0


def test_optional_columns_can_be_left_out() -> None:
    table = simulate(
        SimulationConfig(users=50, with_event_ids=False, with_propensities=False, segments={})
    )
    assert tuple(table.column_names) == tuple(
        c for c in EVENT_COLUMNS if c not in ("event_id", "propensity")
    )


def test_requests_are_full_ranked_lists(small: pa.Table) -> None:
    con = _con(small)
    n = SMALL.list_length
    bad = _one(
        con,
        f"""
        SELECT count(*) FROM (
            SELECT request_id, count(*) AS k, count(DISTINCT item_id) AS items,
                   min(position) AS lo, max(position) AS hi,
                   count(DISTINCT position) AS positions, count(DISTINCT user_id) AS users,
                   count(DISTINCT ts) AS times
            FROM ev WHERE event_type = 'impression' GROUP BY request_id)
        WHERE k <> {n} OR items <> {n} OR lo <> 1 OR hi <> {n} OR positions <> {n}
              OR users <> 1 OR times <> 1
        """,
    )
    assert bad == 0
    assert _one(con, "SELECT count(*) FROM ev WHERE position < 1 OR position > 10") == 0


def test_clicks_and_purchases_follow_their_impression(small: pa.Table) -> None:
    con = _con(small)
    clicks = _one(con, "SELECT count(*) FROM ev WHERE event_type = 'click'")
    assert isinstance(clicks, int) and clicks > 100
    matched = _one(
        con,
        """
        SELECT count(*) FROM ev c JOIN ev i
          ON i.event_type = 'impression' AND c.request_id = i.request_id
         AND c.item_id = i.item_id AND c.user_id = i.user_id AND c.arm = i.arm AND c.ts > i.ts
        WHERE c.event_type = 'click'
        """,
    )
    assert matched == clicks
    purchases = _one(con, "SELECT count(*) FROM ev WHERE event_type = 'purchase'")
    assert isinstance(purchases, int) and purchases > 10
    matched = _one(
        con,
        """
        SELECT count(*) FROM ev p
        WHERE p.event_type = 'purchase' AND p.value >= 0 AND EXISTS (
            SELECT 1 FROM ev c WHERE c.event_type = 'click' AND c.request_id = p.request_id
               AND c.item_id = p.item_id AND c.user_id = p.user_id AND c.ts < p.ts)
        """,
    )
    assert matched == purchases
    # at most one click per impression and one purchase per click
    dup = _one(
        con,
        """
        SELECT count(*) FROM (SELECT request_id, item_id, event_type, count(*) AS k FROM ev
                              WHERE event_type IN ('click', 'purchase') GROUP BY ALL)
        WHERE k > 1
        """,
    )
    assert dup == 0


def test_periods_and_exposure(small: pa.Table) -> None:
    con = _con(small)
    assert _one(con, "SELECT count(DISTINCT user_id) FROM ev") == SMALL.users
    once = _one(
        con,
        """SELECT count(*) FROM (SELECT user_id FROM ev WHERE event_type = 'exposure'
                                 GROUP BY user_id HAVING count(*) = 1)""",
    )
    assert once == SMALL.users
    start = SMALL.start
    end = start.timestamp() + SMALL.days * 86_400
    lo, hi = con.execute("SELECT min(epoch(ts)), max(epoch(ts)) FROM ev").fetchone() or (0, 0)
    assert start.timestamp() - SMALL.pre_period_days * 86_400 <= lo
    assert hi < end
    exp_lo = _one(con, "SELECT min(epoch(ts)) FROM ev WHERE event_type = 'exposure'")
    assert isinstance(exp_lo, float) and exp_lo >= start.timestamp()
    # the exposure happens at the user's first post-exposure request
    assert (
        _one(
            con,
            """
            SELECT count(*) FROM ev x WHERE x.event_type = 'exposure' AND NOT EXISTS (
                SELECT 1 FROM ev i WHERE i.user_id = x.user_id AND i.event_type = 'impression'
                   AND i.ts = x.ts)
            """,
        )
        == 0
    )
    # pre-period: requests served entirely before the exposure, clicks and purchases too
    pre_requests = _one(
        con,
        """SELECT count(DISTINCT request_id) FROM e
           WHERE event_type = 'impression' AND ts < exposed_at""",
    )
    assert isinstance(pre_requests, int) and pre_requests > 0.5 * SMALL.users
    straddling = _one(
        con,
        """
        SELECT count(*) FROM (
            SELECT request_id, bool_or(ts < exposed_at) AS before,
                   bool_or(ts >= exposed_at) AS after
            FROM e WHERE request_id IS NOT NULL GROUP BY request_id)
        WHERE before AND after
        """,
    )
    assert straddling == 0


def test_item_popularity_is_skewed(small: pa.Table) -> None:
    con = _con(small)
    counts = np.array(
        [
            r[0]
            for r in con.execute(
                """SELECT count(*) AS k FROM ev WHERE event_type = 'impression'
                   GROUP BY item_id ORDER BY k DESC"""
            ).fetchall()
        ]
    )
    # Zipf(1): the top item is shown far more often than the median one
    assert counts[0] > 20 * np.median(counts)
    assert len(counts) <= SMALL.catalogue


# --------------------------------------------------------------------------- the model


def _plackett_luce_by_enumeration(n: int, weight: float) -> np.ndarray:
    """q[R, k] from the definition: sum the probability of every ordering."""
    q = np.zeros((n + 1, n))
    for r in range(n + 1):
        w = [weight] * r + [1.0] * (n - r)  # items 0..r-1 are relevant
        for perm in itertools.permutations(range(n)):
            p, left = 1.0, sum(w)
            for item in perm:
                p *= w[item] / left
                left -= w[item]
            for k, item in enumerate(perm):
                if item < r:
                    q[r, k] += p
    return q


@pytest.mark.parametrize("weight", [1.0, 0.3, 2.0, 25.0])
def test_position_marginals_match_enumeration(weight: float) -> None:
    n = 5
    assert np.allclose(relevant_at_position(n, weight), _plackett_luce_by_enumeration(n, weight))


def test_propensities_are_a_policy_marginal(small: pa.Table) -> None:
    """Within a request, no item can be more than certain and, for a uniform
    policy (weight 1), every propensity is 1/L."""
    con = _con(small)
    assert _one(con, "SELECT count(*) FROM ev WHERE propensity <= 0 OR propensity > 1") == 0
    uniform = simulate(SimulationConfig(users=200, control_relevance_weight=1.0, arms=("c",)))
    props = uniform.column("propensity").drop_null().to_numpy()
    assert np.allclose(props, round(1 / 10, 6))
    # near the largest reachable lift the policy is almost deterministic: tiny, not 0
    steep = simulate(SimulationConfig(users=300, true_ctr_lift={"treatment": 0.304}))
    assert (
        expected_effects(SimulationConfig(true_ctr_lift={"treatment": 0.304}))
        .arms["treatment"]
        .relevance_weight
        > 1e3
    )
    props = steep.column("propensity").drop_null().to_numpy()
    assert props.min() > 0 and props.max() <= 1
    # marginals of one position over items sum to one, as do one item's over positions
    q = relevant_at_position(8, 3.0)
    for r in range(9):
        assert np.allclose(q[r].sum(), r)
        if 0 < r < 8:
            rel, irr = q[r] / r, (1 - q[r]) / (8 - r)
            assert np.allclose(rel.sum(), 1) and np.allclose(irr.sum(), 1)
            assert np.allclose(r * rel + (8 - r) * irr, 1)


def test_expected_effects_follow_the_configuration() -> None:
    eff = expected_effects(BIG)
    control, treatment = eff.arms["control"], eff.arms["treatment"]
    assert math.isclose(control.ctr, BIG.base_ctr, rel_tol=1e-9)
    assert math.isclose(treatment.ctr, BIG.base_ctr * 1.2, rel_tol=1e-9)
    assert math.isclose(eff.relative_lift("ctr", "treatment"), 0.2, rel_tol=1e-9)
    assert math.isclose(eff.relative_lift("purchase_rate", "treatment"), 0.3, rel_tol=1e-9)
    assert math.isclose(eff.relative_lift("purchases_per_user", "treatment"), 1.2 * 1.3 - 1)
    assert math.isclose(eff.relative_lift("revenue_per_user", "treatment"), 1.2 * 1.3 - 1)
    assert eff.relative_lift("mean_order_value", "treatment") == 0
    assert treatment.relevance_weight > control.relevance_weight  # better ranking
    assert math.isclose(control.clicks_per_user, BIG.requests_per_user * 10 * BIG.base_ctr)
    assert eff.pre_period.ctr == control.ctr
    # a negative lift is a worse ranking
    worse = expected_effects(SimulationConfig(true_ctr_lift={"treatment": -0.1}))
    assert worse.arms["treatment"].relevance_weight < worse.arms["control"].relevance_weight


def test_impossible_configurations_are_refused() -> None:
    with pytest.raises(ValueError, match="not reachable"):
        expected_effects(SimulationConfig(true_ctr_lift={"treatment": 5.0}))
    with pytest.raises(ValueError, match="treatment arms"):
        SimulationConfig(true_ctr_lift={"control": 0.1})
    with pytest.raises(ValueError, match="too high"):
        expected_effects(SimulationConfig(base_ctr=0.9))
    with pytest.raises(ValueError, match="split"):
        SimulationConfig(split=(1.0,))


# --------------------------------------------------------------------------- the truth


def _per_user(con: duckdb.DuckDBPyConnection, post: bool) -> dict[str, np.ndarray]:
    cond = "ts >= exposed_at" if post else "ts < exposed_at"
    rows = con.execute(
        f"""
        SELECT arm, user_id,
               count(*) FILTER (WHERE event_type = 'impression' AND {cond}) AS imps,
               count(*) FILTER (WHERE event_type = 'click' AND {cond}) AS clicks,
               count(*) FILTER (WHERE event_type = 'purchase' AND {cond}) AS buys
        FROM e GROUP BY arm, user_id ORDER BY user_id
        """
    ).fetchnumpy()
    return {k: np.asarray(v) for k, v in rows.items()}


def _ratio_lift(
    data: dict[str, np.ndarray], num: str, den: str, control: str, arm: str
) -> tuple[float, float]:
    """Relative lift of Σnum/Σden between arms and its delta-method standard error."""
    stats = {}
    for a in (control, arm):
        sel = data["arm"] == a
        x, y = data[num][sel].astype(float), data[den][sel].astype(float)
        r = x.sum() / y.sum()
        relvar = np.var(x - r * y, ddof=1) / (len(x) * y.mean() ** 2) / r**2
        stats[a] = (r, relvar)
    ratio = stats[arm][0] / stats[control][0]
    return ratio - 1, ratio * math.sqrt(stats[arm][1] + stats[control][1])


@pytest.mark.slow
def test_observed_ctr_lift_matches_the_truth(big: pa.Table) -> None:
    data = _per_user(_con(big), post=True)
    truth = BIG.ctr_lift("treatment")
    lift, se = _ratio_lift(data, "clicks", "imps", "control", "treatment")
    assert se < truth / 8  # the run is big enough for the check to mean something
    assert abs(lift - truth) < 4 * se
    control = data["arm"] == "control"
    ctr = data["clicks"][control].sum() / data["imps"][control].sum()
    assert abs(ctr / BIG.base_ctr - 1) < 0.03


@pytest.mark.slow
def test_observed_conversion_lift_matches_the_truth(big: pa.Table) -> None:
    data = _per_user(_con(big), post=True)
    truth = BIG.conversion_lift("treatment")
    lift, se = _ratio_lift(data, "buys", "clicks", "control", "treatment")
    assert se < truth / 8
    assert abs(lift - truth) < 4 * se


@pytest.mark.slow
def test_pre_period_is_untreated_and_predicts_the_post_period(big: pa.Table) -> None:
    con = _con(big)
    pre, post = _per_user(con, post=False), _per_user(con, post=True)
    lift, se = _ratio_lift(pre, "clicks", "imps", "control", "treatment")
    assert se < 0.05 and abs(lift) < 4 * se  # no effect before exposure
    assert (pre["user_id"] == post["user_id"]).all()
    corr = np.corrcoef(pre["clicks"], post["clicks"])[0, 1]
    assert corr > 0.3  # a useful CUPED covariate


@pytest.mark.slow
def test_treatment_ranks_clicked_items_higher(big: pa.Table) -> None:
    """Replayed NDCG@10 (click gain 1, requests with no click score 0) is higher in treatment."""
    con = _con(big)
    ndcg = dict(
        con.execute(
            """
            WITH imp AS (
                SELECT i.arm, i.request_id, i.position,
                       (c.request_id IS NOT NULL)::INT AS gain
                FROM e i LEFT JOIN e c ON c.event_type = 'click'
                     AND c.request_id = i.request_id AND c.item_id = i.item_id
                WHERE i.event_type = 'impression' AND i.ts >= i.exposed_at),
            ranked AS (
                SELECT *, row_number() OVER (PARTITION BY request_id
                                             ORDER BY gain DESC, position) AS ideal FROM imp),
            req AS (
                SELECT arm, request_id, sum(gain / log2(position + 1)) AS dcg,
                       sum(gain / log2(ideal + 1)) AS idcg FROM ranked GROUP BY ALL)
            SELECT arm, avg(CASE WHEN idcg > 0 THEN dcg / idcg ELSE 0 END) FROM req GROUP BY arm
            """
        ).fetchall()
    )
    assert ndcg["treatment"] > ndcg["control"] * 1.1


def test_split_is_respected() -> None:
    config = SimulationConfig(
        users=20_000,
        arms=("a", "b", "c"),
        split=(2.0, 3.0, 5.0),
        requests_per_user=1.0,
        pre_period_days=0,
        list_length=2,
    )
    table = simulate(config)
    con = _con(table)
    counts = dict(
        con.execute("SELECT arm, count(DISTINCT user_id) FROM ev GROUP BY arm").fetchall()
    )
    for arm, share in zip(config.arms, (0.2, 0.3, 0.5), strict=True):
        expected = share * config.users
        assert abs(counts[arm] - expected) < 4 * math.sqrt(config.users * share * (1 - share))
    devices = dict(
        con.execute(
            "SELECT device, count(*) FROM ev WHERE event_type = 'exposure' GROUP BY device"
        ).fetchall()
    )
    for device, share in SimulationConfig().segments["device"].items():
        sd = math.sqrt(config.users * share * (1 - share))
        assert abs(devices[device] - share * config.users) < 4 * sd


def test_users_for_rows_sizes_a_simulation() -> None:
    config = SimulationConfig(seed=3)
    users = users_for_rows(300_000, config)
    rows = simulate(SimulationConfig(users=users, seed=3)).num_rows
    assert abs(rows / 300_000 - 1) < 0.05


# --------------------------------------------------------------------------- files


def _read_back(path: Path, schema: pa.Schema) -> pa.Table:
    fmt = format_of(path)
    if fmt == "parquet":
        return pq.read_table(path)
    if fmt == "jsonl":
        return pa_json.read_json(
            path, parse_options=pa_json.ParseOptions(explicit_schema=schema)
        ).select(schema.names)
    return pa_csv.read_csv(
        path,
        convert_options=pa_csv.ConvertOptions(
            column_types=schema, strings_can_be_null=True, quoted_strings_can_be_null=False
        ),
    )


@pytest.mark.parametrize("name", ["events.csv", "events.csv.gz", "events.parquet", "events.jsonl"])
def test_files_round_trip(tmp_path: Path, small: pa.Table, name: str) -> None:
    path = tmp_path / name
    assert write_events(SMALL, path) == small.num_rows
    back = _read_back(path, small.schema)
    assert back.num_rows == small.num_rows
    for column in small.column_names:
        got, want = back.column(column).combine_chunks(), small.column(column).combine_chunks()
        assert got.cast(want.type).equals(want), column
    # a table writes the same rows as the configuration it came from
    again = tmp_path / ("table-" + name)
    assert write_events(small, again) == small.num_rows
    assert _read_back(again, small.schema).equals(back)


def test_text_formats_write_iso_utc_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    write_events(SimulationConfig(users=5), path)
    header, first = path.read_text().splitlines()[:2]
    assert header.split(",")[:4] == ["experiment", "arm", "user_id", "ts"]
    ts = first.split(",")[3]
    assert len(ts) == 24 and ts[10] == "T" and ts.endswith("Z")


def test_format_of() -> None:
    assert format_of("x.CSV.GZ") == "csv.gz"
    assert format_of(Path("a/b.parquet")) == "parquet"
    assert format_of("x.ndjson") == "jsonl"
    with pytest.raises(ValueError):
        format_of("x.xlsx")


def test_format_of_names_only_what_the_writer_writes() -> None:
    """Comma-separated CSV, gzip'd or not, Parquet and JSON Lines: names that
    ingest reads but that would mislead here (``.tsv``) are refused."""
    assert format_of("runs/x.pq") == "parquet"
    assert format_of("x.JSONL") == "jsonl"
    for name in ("x.tsv", "x.txt", "x.json", "x.csv.zst", "x.jsonl.gz", "x.parquet.gz", "csv"):
        with pytest.raises(ValueError, match=f"^cannot tell the format of {name}: use .csv, "):
            format_of(name)


def test_id_and_label_columns() -> None:
    assert strings("u", np.array([3, 10])).to_pylist() == ["u3", "u10"]
    assert strings("r", np.array([1, 2]), valid=np.array([True, False])).to_pylist() == ["r1", None]
    assert labels(("a", "b"), np.array([1, 0, 1])).to_pylist() == ["b", "a", "b"]


def test_csv_quotes_labels_that_need_it(tmp_path: Path) -> None:
    config = SimulationConfig(
        users=20, experiment='reco, "v3"', arms=("a,b", "c"), true_ctr_lift={}
    )
    path = tmp_path / "q.csv"
    rows = write_events(config, path)
    back = pa_csv.read_csv(path)
    assert back.num_rows == rows
    assert set(back.column("experiment").to_pylist()) == {'reco, "v3"'}
    assert set(back.column("arm").to_pylist()) <= {"a,b", "c"}


def test_prefetch_passes_items_and_errors_through() -> None:
    from abeval.simulate.writers import _prefetch

    def items() -> Iterator[int]:
        yield from range(5)
        raise RuntimeError("boom")

    got: list[int] = []
    with pytest.raises(RuntimeError, match="boom"):
        for x in _prefetch(items()):
            got.append(x)
    assert got == [0, 1, 2, 3, 4]
    early = _prefetch(iter(range(1000)))
    assert next(early) == 0
    assert isinstance(early, Generator)
    early.close()  # stops the producer instead of leaving it blocked
