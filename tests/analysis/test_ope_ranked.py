"""The step estimators (``rips``, ``snrips``, ``sips``, ``cascade_dr``,
docs/metrics.md#ranked-lists-cascade-and-whole-list-estimators) against an
independent pandas/numpy derivation on simulated Plackett–Luce logs, and on a
log small enough to work out by hand.

The store computes per-user sums in SQL and the statistics layer applies the
delta method analytically; the reference here computes the weights per
impression with cumulative products, refits the cross-fitted click model itself,
and takes standard errors from per-user influence values with a numerical
gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from abeval.analysis.ope import OpeDirection, OpeOptions, ope_results
from abeval.simulate.ranked import event_rows, example_world, impressions, target_rows
from abeval.store import open_store
from abeval.store.ingest import ingest_file

EXP = "ranked"
FOLDS, SMOOTH = 5, 20.0


def _store(
    tmp: Path, logs: pd.DataFrame, target: pd.DataFrame | None, db: str | None = None
) -> OpeDirection:
    events = tmp / "events.csv"
    event_rows(logs, EXP).to_csv(events, index=False)
    file = None
    if target is not None:
        file = tmp / "target.csv"
        target.to_csv(file, index=False)
    with open_store(db or str(tmp / "s.duckdb")) as store:
        ingest_file(store, events)
        with store.connect() as conn:
            options = OpeOptions(target_propensities=None if file is None else str(file))
            section = ope_results(conn, EXP, "control", ["treatment"], options, 0.05)
    return next(d for d in section.directions if d.source == "control")


def _delta(users: pd.DataFrame, f: Callable[[pd.Series], float]) -> tuple[float, float]:
    """f of the per-user means and its standard error from influence values
    grad f · (x_u − x̄), the gradient by central differences."""
    means = users.mean()
    value = f(means)
    grad = pd.Series(0.0, index=means.index)
    for x in means.index:
        h = 1e-6 * max(abs(means[x]), 1e-12)
        up, down = means.copy(), means.copy()
        up[x] += h
        down[x] -= h
        grad[x] = (f(up) - f(down)) / (2 * h)
    psi = (users - means).to_numpy() @ grad.to_numpy()
    return value, float(psi.std(ddof=1) / np.sqrt(len(users)))


def _reference(logs: pd.DataFrame, target: pd.DataFrame) -> dict[str, tuple[float, ...]]:
    src = logs[logs.arm == "control"].sort_values(["request", "position"]).copy()
    file = target.set_index(["request_id", "item_id", "position"])
    key = pd.MultiIndex.from_arrays([src.request, src.item, src.position])
    src["rho"] = file.probability_given_above.reindex(key).fillna(0.0).to_numpy()
    src["r"] = src.rho / src.propensity_given_above
    src["W"] = src.groupby("request").r.cumprod()
    src["Wprev"] = src.W / src.r
    src["Wlist"] = src.groupby("request").r.transform("prod")
    src["c"] = src.clicked.astype(float)
    # The cross-fitted click model: folds by the order of the user ids.
    ids = np.sort(src.user.unique())
    fold = pd.Series((np.arange(len(ids)) + 1) % FOLDS, index=ids)
    src["fold"] = src.user.map(fold)
    cand = target.merge(src[["request", "fold"]].drop_duplicates(), left_on="request_id",
                        right_on="request")  # fmt: skip
    cand["q"] = np.nan
    src["q"] = np.nan
    for f in range(FOLDS):
        other = src[src.fold != f]
        rate = other.groupby(["item", "position"]).c.agg(["sum", "count"])
        prior = other.groupby("position").c.mean()
        for frame, item in ((cand, "item_id"), (src, "item")):
            mine = frame.fold == f
            k = pd.MultiIndex.from_arrays([frame.loc[mine, item], frame.loc[mine, "position"]])
            c = rate["sum"].reindex(k).fillna(0).to_numpy()
            n = rate["count"].reindex(k).fillna(0).to_numpy()
            p = prior.reindex(frame.loc[mine, "position"]).to_numpy()
            frame.loc[mine, "q"] = (c + SMOOTH * p) / (n + SMOOTH)
    cand["dm"] = cand.probability_given_above * cand.q
    dm = cand.groupby(["request_id", "position"]).dm.sum()
    src["dm"] = dm.reindex(pd.MultiIndex.from_arrays([src.request, src.position])).to_numpy()
    src["dr"] = src.Wprev * src.dm + src.W * (src.c - src.q)
    src["rc"], src["sc"], src["n"] = src.W * src.c, src.Wlist * src.c, 1.0
    positions = sorted(src.position.unique())
    for k in positions:
        at = (src.position == k).astype(float)
        src[f"a{k}"], src[f"b{k}"], src[f"n{k}"] = src.W * src.c * at, src.W * at, at
    cols = ["rc", "sc", "dr", "n", "c"] + [f"{x}{k}" for k in positions for x in "abn"]
    users = src.groupby("user")[cols].sum()

    def snrips(m: pd.Series) -> float:
        return sum(m[f"a{k}"] / m[f"b{k}"] * m[f"n{k}"] for k in positions) / m["n"]

    ctr: dict[str, Callable[[pd.Series], float]] = {
        "rips": lambda m: m.rc / m.n,
        "snrips": snrips,
        "sips": lambda m: m.sc / m.n,
        "cascade_dr": lambda m: m.dr / m.n,
    }
    out = {}
    for name, f in ctr.items():
        value, se = _delta(users, f)
        lift, lift_se = _delta(users, lambda m, f=f: f(m) / (m.c / m.n) - 1)  # type: ignore[misc]
        out[name] = (value, se, lift, lift_se)
    return out


@pytest.fixture(scope="module")
def ranked(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, pd.DataFrame, Path]:
    world = example_world("cascade", seed=3)
    rng = np.random.default_rng(5)
    logs = pd.concat(
        [impressions(world, rng, "control", 300), impressions(world, rng, "treatment", 60, True)]
    )
    target = target_rows(world, logs[logs.arm == "control"], "treatment")
    return logs, target, tmp_path_factory.mktemp("ranked")


def test_step_estimators_match_numpy(ranked) -> None:  # type: ignore[no-untyped-def]
    logs, target, tmp = ranked
    (tmp / "a").mkdir()
    d = _store(tmp / "a", logs, target)
    assert d.target_probabilities == "file"
    ref = _reference(logs, target)
    by = {e.estimator: e for e in d.estimates}
    for name, (value, se, lift, lift_se) in ref.items():
        e = by[name]
        assert e.ctr.status == "ok", e.ctr.message
        assert e.ctr.value == pytest.approx(value, rel=1e-9)
        assert e.ctr.se == pytest.approx(se, rel=1e-5)
        assert e.predicted_lift.value == pytest.approx(lift, rel=1e-8)
        assert e.predicted_lift.se == pytest.approx(lift_se, rel=1e-5)
    # The click model each estimator assumes (docs/metrics.md).
    kinds = {
        "position_based": ("ips", "snips", "capped_ips", "ncis"),
        "cascade": ("rips", "snrips", "cascade_dr"),
        "any": ("sips",),
    }
    expected = {name: kind for kind, names in kinds.items() for name in names}
    assert {e.estimator: e.assumption for e in d.estimates} == expected
    assert (d.headline, d.headline_reason) == ("cascade_dr", "given_above")


def test_without_candidate_rows_cascade_dr_is_refused_and_snips_leads(ranked) -> None:  # type: ignore[no-untyped-def]
    logs, target, tmp = ranked
    src = logs[logs.arm == "control"]
    logged = set(zip(src.request, src.item, src.position, strict=True))
    only = target[
        [k in logged for k in zip(target.request_id, target.item_id, target.position, strict=True)]
    ]
    (tmp / "b").mkdir()
    d = _store(tmp / "b", logs, only)
    by = {e.estimator: e for e in d.estimates}
    assert by["cascade_dr"].ctr.status == "incomplete_candidates"
    assert by["rips"].ctr.status == "ok"
    assert (d.headline, d.headline_reason) == ("snips", "incomplete_candidates")


def test_a_two_request_log_by_hand(tmp_path: Path) -> None:
    """Two users, one request of two positions each, target file by hand:
    request 1 shows (x, y) with steps (0.5, 0.4) and target steps (0.25, 0.8):
    W = (0.5, 1.0), list weight 1.0; request 2 shows (y, x) with steps (0.5, 0.6)
    and target steps (0.75, 0.3): W = (1.5, 0.75). Clicks: request 1 at
    position 2, request 2 at position 1."""
    rows = [
        ("control", "u1", "q1", "x", 1, False, 0.5, 0.5),
        ("control", "u1", "q1", "y", 2, True, 0.5, 0.4),
        ("control", "u2", "q2", "y", 1, True, 0.5, 0.5),
        ("control", "u2", "q2", "x", 2, False, 0.5, 0.6),
        ("treatment", "u3", "t1", "x", 1, True, 0.5, 0.5),
        ("treatment", "u3", "t1", "y", 2, False, 0.5, 0.5),
    ]
    cols = ["arm", "user", "request", "item", "position", "clicked", "propensity",
            "propensity_given_above"]  # fmt: skip
    logs = pd.DataFrame(rows, columns=cols)
    target = pd.DataFrame(
        [
            ("treatment", "q1", "x", 1, 0.5, 0.25),
            ("treatment", "q1", "y", 2, 0.5, 0.8),
            ("treatment", "q2", "y", 1, 0.5, 0.75),
            ("treatment", "q2", "x", 2, 0.5, 0.3),
        ],
        columns=["arm", "request_id", "item_id", "position", "probability",
                 "probability_given_above"],
    )  # fmt: skip
    d = _store(tmp_path, logs, target)
    by = {e.estimator: e.ctr.value for e in d.estimates}
    # rips: (W·c) = 1.0 (q1 pos 2) + 1.5 (q2 pos 1), over 4 impressions.
    assert by["rips"] == pytest.approx((1.0 + 1.5) / 4)
    # sips: list weights 0.5·2 = 1.0 and 1.5·0.5 = 0.75.
    assert by["sips"] == pytest.approx((1.0 * 1 + 0.75 * 1) / 4)
    # snrips: position 1: 1.5 / (0.5 + 1.5); position 2: 1.0 / (1.0 + 0.75); each
    # position holds half the impressions.
    assert by["snrips"] == pytest.approx((1.5 / 2.0 + 1.0 / 1.75) / 2)
    # ips: w = 1 everywhere (target marginals 0.5 = propensities): the source's CTR.
    assert by["ips"] == pytest.approx(0.5)


@pytest.mark.postgres
def test_postgres_gives_the_same_step_estimates(ranked, postgres_database: str) -> None:  # type: ignore[no-untyped-def]
    logs, target, tmp = ranked
    (tmp / "pg").mkdir()
    d = _store(tmp / "pg", logs, target, postgres_database)
    ref = _reference(logs, target)
    by = {e.estimator: e for e in d.estimates}
    for name, (value, se, _, _) in ref.items():
        assert (by[name].ctr.value, by[name].ctr.se) == pytest.approx((value, se), rel=1e-5)
    assert d.headline == "cascade_dr"


def test_weights_over_users_match_numpy(ranked) -> None:  # type: ignore[no-untyped-def]
    """Kish's effective number of users, the share of the weighted clicks of
    the 1% of users with the largest weight sums and the weights' skewness, for
    ips and rips."""
    import scipy.stats

    from abeval.stats.ope import MAX_MEAN_SKEW

    logs, target, tmp = ranked
    (tmp / "u").mkdir()
    d = _store(tmp / "u", logs, target)
    src = logs[logs.arm == "control"].sort_values(["request", "position"]).copy()
    file = target.set_index(["request_id", "item_id", "position"])
    key = pd.MultiIndex.from_arrays([src.request, src.item, src.position])
    src["ips"] = file.probability.reindex(key).fillna(0.0).to_numpy() / src.propensity
    rho = file.probability_given_above.reindex(key).fillna(0.0).to_numpy()
    src["rips"] = (rho / src.propensity_given_above).groupby(src.request).cumprod()
    by = {e.estimator: e for e in d.estimates}
    for name in ("ips", "rips"):
        per_user = src.assign(wc=src[name] * src.clicked).groupby("user")[[name, "wc"]].sum()
        w = per_user[name].to_numpy()
        top = per_user.sort_values(name, ascending=False).head(int(np.ceil(len(w) / 100)))
        u = by[name].users
        assert u is not None
        assert u.ess_users == pytest.approx(w.sum() ** 2 / (w**2).sum(), rel=1e-9)
        assert u.ess_users_share == pytest.approx(u.ess_users / len(w), rel=1e-12)
        assert u.top_share == pytest.approx(top.wc.sum() / per_user.wc.sum(), rel=1e-9)
        # The skewness of the users' weights (scipy's biased sample skewness) and
        # of their mean, which decides the interval with the effective users.
        g = scipy.stats.skew(w, bias=True)
        assert u.skewness == pytest.approx(g, rel=1e-6)
        assert u.mean_skewness == pytest.approx(g / np.sqrt(len(w)), rel=1e-6)
        skewed = g / np.sqrt(len(w)) > MAX_MEAN_SKEW
        assert ("skewed" in u.reasons) == skewed
        assert u.interval == ("unreliable" if skewed or u.ess_users < 40 else "normal")


def test_few_users_make_the_headline_interval_unreliable(tmp_path: Path) -> None:
    from abeval.stats.ope import MIN_ESS_USERS

    world = example_world("position_based", seed=1)
    rng = np.random.default_rng(2)
    logs = pd.concat(
        [impressions(world, rng, "control", 12), impressions(world, rng, "treatment", 5, True)]
    )
    d = _store(tmp_path, logs, target_rows(world, logs[logs.arm == "control"], "treatment"))
    head = next(e for e in d.estimates if e.estimator == d.headline)
    assert head.users is not None and head.users.ess_users is not None
    assert head.users.ess_users <= 12 < MIN_ESS_USERS
    assert head.users.interval == "unreliable"
    expected = f"{d.headline}: its weights are worth {head.users.ess_users:.1f} users (below "
    assert any(w.startswith(expected) for w in d.warnings), d.warnings
