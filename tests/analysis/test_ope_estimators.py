"""Every OPE estimator and diagnostic (docs/metrics.md#off-policy-estimates)
against an independent numpy implementation on random data.

The store computes per-user sums in SQL and :mod:`abeval.stats.ope` applies the
delta method through the covariance of those sums; the reference here works from
the impressions themselves with pandas and numpy, and gets its standard errors
from per-user influence values (linearisation), a different route to the same
clustered variance.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ope_helpers import random_logs, write_impressions, write_target_file

from abeval.analysis.ope import OpeOptions, OpeSection, ope_results
from abeval.stats.distributions import norm_isf
from abeval.stats.skew_interval import hall_interval
from abeval.store import open_store
from abeval.store.ingest import ingest_file

EXP = "rand"
CAP = 3.0


def _skewness(z: np.ndarray) -> float:
    d = z - z.mean()
    return float((d**3).mean() / (d**2).mean() ** 1.5)


def _ratio_se(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Σa/Σb over users, its clustered standard error from the residuals and
    their skewness (Hall's interval reads it)."""
    r = a.sum() / b.sum()
    m = len(a)
    resid = (a - r * b) / b.mean()
    return r, float(np.sqrt(resid.var(ddof=1) / m)), _skewness(resid)


def _influence_se(value: float, parts: dict[str, tuple[np.ndarray, int]]) -> tuple[float, float]:
    """SE of Π mean(x)^p from the per-user influence values value · Σ p (x_u/x̄ − 1),
    and their skewness."""
    m = len(next(iter(parts.values()))[0])
    z = sum(p * (x / x.mean() - 1) for x, p in parts.values()) * value
    return float(np.sqrt(z.var(ddof=1) / m)), _skewness(z)


def reference(
    logs: pd.DataFrame, source: str, target: str, pi: pd.Series, cap: float
) -> dict[str, object]:
    """The numbers of one direction, from the impressions (``pi`` indexed like
    ``logs``: π_target of each source impression)."""
    src = logs[logs.arm == source].copy()
    src["w"] = pi.reindex(src.index).fillna(0.0) / src.propensity
    src["c"] = src.clicked.astype(float)
    src["wc"] = src.w * src.c
    src["k"] = np.minimum(src.w, cap)
    src["kc"] = src.k * src.c
    src["n"] = 1.0
    users = src.groupby("user")[["wc", "w", "n", "kc", "k", "c"]].sum()
    out: dict[str, object] = {}
    for name, (num, den) in {
        "ips": ("wc", "n"),
        "snips": ("wc", "w"),
        "capped_ips": ("kc", "n"),
        "ncis": ("kc", "k"),
    }.items():
        value, se, skew = _ratio_se(users[num].to_numpy(), users[den].to_numpy())
        lift = users[num].sum() * users.n.sum() / (users[den].sum() * users.c.sum())
        parts = {"num": (users[num].to_numpy(), 1), "den": (users[den].to_numpy(), -1)}
        parts |= {"n": (users.n.to_numpy(), 1), "c": (users.c.to_numpy(), -1)}
        if den == "n":  # n/n cancels
            parts = {"num": parts["num"], "c": parts["c"]}
        out[name] = (value, se, skew, lift - 1, *_influence_se(lift, parts), len(users))
    w = src.w.to_numpy()
    out["mean_weight"] = w.mean()
    out["ess"] = w.sum() ** 2 / (w**2).sum()
    out["max_weight"] = w.max()
    out["capped_share"] = float((w > cap).mean())
    out["positions"] = {
        k: (g.w.mean(), g.w.sum() ** 2 / (g.w**2).sum(), g.w.max())
        for k, g in src.groupby("position")
    }
    return out


def _empirical_pi(logs: pd.DataFrame, source: str, target: str) -> tuple[pd.Series, float]:
    """π_target of each source impression from the target's frequencies, and the
    support deficit: target impressions on (item, position) pairs the source never showed."""
    tgt = logs[logs.arm == target]
    share = tgt.groupby(["item", "position"]).size() / tgt.groupby("position").size()
    src = logs[logs.arm == source]
    keys = pd.MultiIndex.from_frame(src[["item", "position"]])
    pi = pd.Series(share.reindex(keys).to_numpy(), index=src.index)
    shown = set(zip(src.item, src.position, strict=True))
    unseen = sum(1 for a, k in zip(tgt.item, tgt.position, strict=True) if (a, k) not in shown)
    return pi, unseen / len(tgt)


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, OpeSection, Path]:
    tmp = tmp_path_factory.mktemp("ope")
    logs = random_logs(7)
    events = write_impressions(tmp / "events.csv", EXP, logs.itertuples(index=False, name=None))
    db = tmp / "s.duckdb"
    with open_store(str(db)) as store:
        ingest_file(store, events)
        with store.connect() as conn:
            section = ope_results(conn, EXP, "control", ["treatment"], OpeOptions(cap=CAP), 0.1)
    return logs, section, db


@pytest.mark.parametrize(("source", "target"), [("control", "treatment"), ("treatment", "control")])
def test_estimators_match_numpy(case, source: str, target: str) -> None:  # type: ignore[no-untyped-def]
    logs, section, _ = case
    d = next(d for d in section.directions if (d.source, d.target) == (source, target))
    pi, deficit = _empirical_pi(logs, source, target)
    ref = reference(logs, source, target, pi, CAP)
    z = norm_isf(0.05)
    for e in d.estimates:
        value, se, skew, lift, lift_se, lift_skew, m = ref[e.estimator]  # type: ignore[misc]
        assert e.ctr.value == pytest.approx(value, rel=1e-9)
        assert e.ctr.se == pytest.approx(se, rel=1e-7)
        # The skewness of the influence values, from the SQL's sums of three products.
        assert e.ctr.skewness == pytest.approx(skew, rel=1e-6, abs=1e-9)
        assert e.predicted_lift.skewness == pytest.approx(lift_skew, rel=1e-6, abs=1e-9)
        corrected = e.users is not None and e.users.interval == "skew_corrected"
        assert (e.ctr.kind, e.predicted_lift.kind) == (
            ("skew_corrected",) * 2 if corrected else ("normal",) * 2
        )
        if corrected:  # Hall's interval (its formula is checked in tests/stats)
            assert e.ctr.ci == pytest.approx(hall_interval(value, se, skew, m, 0.1), rel=1e-6)
        else:
            assert e.ctr.ci == pytest.approx((value - z * se, value + z * se), rel=1e-7)
        assert e.predicted_lift.value == pytest.approx(lift, rel=1e-9)
        assert e.predicted_lift.se == pytest.approx(lift_se, rel=1e-7)
    g = d.diagnostics
    assert g.mean_weight == pytest.approx(ref["mean_weight"], rel=1e-9)
    assert g.ess == pytest.approx(ref["ess"], rel=1e-9)
    assert g.ess_share == pytest.approx(ref["ess"] / g.impressions, rel=1e-9)  # type: ignore[operator]
    assert g.max_weight == pytest.approx(ref["max_weight"], rel=1e-12)
    assert g.capped_share == pytest.approx(ref["capped_share"], abs=1e-12)
    assert 0 < g.capped_share < 1  # type: ignore[operator]
    assert g.support_deficit == pytest.approx(deficit, abs=1e-12)
    for p in d.positions:
        mean, ess, largest = ref["positions"][p.position]  # type: ignore[index]
        assert (p.mean_weight, p.ess, p.max_weight) == pytest.approx((mean, ess, largest), rel=1e-9)


def test_observed_ctr_and_online_lift_match_numpy(case) -> None:  # type: ignore[no-untyped-def]
    logs, section, _ = case
    users = logs.assign(c=logs.clicked.astype(float), n=1.0).groupby(["arm", "user"])[["c", "n"]]
    sums = users.sum()
    ratio = {arm: _ratio_se(g.c.to_numpy(), g.n.to_numpy())[:2] for arm, g in sums.groupby("arm")}
    d = section.directions[0]
    (rt, st), (rs, ss) = ratio["treatment"], ratio["control"]
    assert d.target_ctr == pytest.approx(rt, rel=1e-12)
    assert d.online_lift.value == pytest.approx(rt / rs - 1, rel=1e-9)
    se = np.sqrt((st / rs) ** 2 + (rt * ss / rs**2) ** 2)
    assert d.online_lift.se == pytest.approx(se, rel=1e-7)
    for e in d.estimates:
        assert e.relative_error == pytest.approx(e.ctr.value / rt - 1, rel=1e-9)  # type: ignore[operator]


def test_warnings_fire_exactly_when_a_threshold_is_crossed(case) -> None:  # type: ignore[no-untyped-def]
    _, section, _ = case
    # By construction the control never shows item 5 at position 3.
    assert section.directions[0].diagnostics.support_deficit > 0.05  # type: ignore[operator]
    for d in section.directions:
        g = d.diagnostics
        assert any("support deficit is" in w for w in d.warnings) == (g.support_deficit > 0.05)  # type: ignore[operator]
        assert any("mean weight is" in w for w in d.warnings) == (
            not 0.9 <= g.mean_weight <= 1.1  # type: ignore[operator]
        )
        assert any("effective sample size" in w for w in d.warnings) == (g.ess_share < 0.01)  # type: ignore[operator]
        assert all(
            f"{d.target} from {d.source}'s logs: {w}" in section.warnings for w in d.warnings
        )


def test_file_probabilities_match_numpy(case, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Per-request target probabilities from a file (random, one row per shown
    item and position; some impressions have none and weigh 0)."""
    logs, _, db = case
    rng = np.random.default_rng(11)
    src = logs[logs.arm == "control"]
    keep = rng.random(len(src)) < 0.9
    probs = rng.uniform(0.0, 0.6, size=len(src))
    rows = [
        (r.request, r.item, int(r.position), float(q))
        for r, q, k in zip(src.itertuples(), probs, keep, strict=True)
        if k
    ]
    path = write_target_file(tmp_path / "target.csv", rows)
    pi = pd.Series(np.where(keep, probs, np.nan), index=src.index)
    with open_store(str(db), read_only=True) as store, store.connect() as conn:
        options = OpeOptions(cap=CAP, target_propensities=str(path))
        section = ope_results(conn, EXP, "control", ["treatment"], options, 0.1)
    d = section.directions[0]
    assert (d.source, d.target, d.target_probabilities) == ("control", "treatment", "file")
    assert section.directions[1].target_probabilities == "empirical"
    ref = reference(logs, "control", "treatment", pi, CAP)
    for e in d.estimates[:4]:
        value, se, *_ = ref[e.estimator]  # type: ignore[misc]
        assert (e.ctr.value, e.ctr.se) == pytest.approx((value, se), rel=1e-7)
    # No step probabilities in these logs: the step estimators say so, the headline is snips.
    assert [(e.estimator, e.ctr.status) for e in d.estimates[4:]] == [
        (name, "no_given_above") for name in ("rips", "snrips", "sips", "cascade_dr")
    ]
    assert (d.headline, d.headline_reason) == ("snips", "no_source_given_above")
    assert d.diagnostics.ess == pytest.approx(ref["ess"], rel=1e-9)


def test_a_mean_too_close_to_zero_to_divide_by_is_a_status_not_an_overflow() -> None:
    from dataclasses import dataclass, field

    from abeval.stats.ope import log_linear

    @dataclass
    class Sums:
        users: int
        sums: dict[str, float]
        products: dict[tuple[str, str], float] = field(default_factory=dict)

    tiny = 2.2e-311  # a subnormal double: 1 / tiny is past the largest double
    s = Sums(
        users=2,
        sums={"wc": 1.0, "w": tiny},
        products={("wc", "wc"): 1.0, ("w", "w"): tiny, ("wc", "w"): tiny},
    )
    out = log_linear(s, {"wc": 1, "w": -1}, alpha=0.05)
    assert (out.value, out.status) == (None, "out_of_range")
    assert out.message == "a mean is too close to 0 to divide by"


def test_skewed_weights_over_many_users_mark_the_interval_and_warn() -> None:
    """2,000 users, one of weight 60 and the rest 1: worth about 757 users, far
    above 40, but the weights' skewness, (n - 2) / √(n - 1) for one large weight
    among equal ones, is about 44.7, so 1.00 for their mean: above 0.1."""
    from dataclasses import dataclass

    from abeval.analysis.ope import user_warnings
    from abeval.stats.ope import MAX_MEAN_SKEW, cube, estimate

    @dataclass(frozen=True)
    class Sums:
        users: int
        sums: dict[str, float]
        products: dict[tuple[str, str], float]

    n = 2000
    w = np.array([60.0] + [1.0] * (n - 1))
    c = np.zeros(n)
    c[::10] = 1.0
    x = {"w": w, "wc": w * c, "n": np.ones(n), "c": c}
    names = list(x)
    s = Sums(
        n,
        {**{k: float(v.sum()) for k, v in x.items()}, cube("w"): float((w**3).sum())},
        {(a, b): float((x[a] * x[b]).sum()) for i, a in enumerate(names) for b in names[i:]},
    )
    e = estimate(s, "snips", 0.05)
    u = e.users
    assert u is not None and u.ess_users is not None
    assert u.ess_users == pytest.approx(w.sum() ** 2 / (w**2).sum(), rel=1e-12)
    g = (n - 2) / np.sqrt(n - 1)
    assert u.skewness == pytest.approx(g, rel=1e-9)
    assert u.mean_skewness == pytest.approx(g / np.sqrt(n), rel=1e-9)
    assert u.ess_users > 40 and g / np.sqrt(n) > MAX_MEAN_SKEW
    assert (u.interval, u.reasons) == ("unreliable", ("skewed",))
    (warning,) = user_warnings(e)
    assert warning.startswith(
        f"snips: its weights over users are skewed ({g:.1f}, so {g / np.sqrt(n):.2f} for their "
        "mean, above 0.1): its normal interval is unreliable"
    )
    # Without the weights' cubes (an older caller): no skewness, today's rule.
    plain = Sums(n, {k: v for k, v in s.sums.items() if k != cube("w")}, s.products)
    u2 = estimate(plain, "snips", 0.05).users
    assert u2 is not None and (u2.skewness, u2.interval) == (None, "normal")
