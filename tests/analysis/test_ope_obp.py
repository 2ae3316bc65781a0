"""Off-policy estimates on the Open Bandit Dataset sample (tests/data/obp/README.md).

The men's campaign of the sample shipped in the ``obp`` wheel: uniform Random
(control) and Bernoulli Thompson sampling (treatment), 10,000 impressions each,
one impression per request. The expected numbers are those of issue 12, worked
out there from the definitions, independently of abeval; π_target is Bernoulli
TS's empirical frequency of (item, position) per request at that position.
"""

from __future__ import annotations

import csv
import gzip
import json
from html import unescape
from pathlib import Path

import numpy as np
import pytest
from ope_helpers import Impression, write_impressions
from typer.testing import CliRunner

from abeval.analysis.ope import OpeOptions, ope_results
from abeval.cli import app
from abeval.stats.skew_interval import hall_interval
from abeval.store import open_store
from abeval.store.ingest import ingest_file

DATA = Path(__file__).parents[1] / "data" / "obp"
EXP = "obd-men"


def _rows(policy: str, arm: str) -> list[Impression]:
    with gzip.open(DATA / f"men_{policy}.csv.gz", "rt") as f:
        rows = list(csv.DictReader(f))
    return [
        (
            arm,
            f"{arm}-{r['row']}",
            f"{arm}-{r['row']}",
            r["item_id"],
            int(r["position"]),
            r["click"] == "1",
            float(r["propensity_score"]),
        )
        for r in rows
    ]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("obp")
    events = write_impressions(
        tmp / "events.csv", EXP, _rows("random", "random") + _rows("bts", "bts")
    )
    with open_store(str(tmp / "s.duckdb")) as store:
        ingest_file(store, events)
    return str(tmp / "s.duckdb")


@pytest.fixture(scope="module")
def section(db: str):  # type: ignore[no-untyped-def]
    with open_store(db, read_only=True) as store, store.connect() as conn:
        return ope_results(conn, EXP, "random", ["bts"], OpeOptions(), 0.05)


def test_the_extract_is_the_sample_described_in_the_readme() -> None:
    random, bts = _rows("random", "random"), _rows("bts", "bts")
    assert len(random) == len(bts) == 10_000
    assert {r[4] for r in random} == {1, 2, 3}
    assert len({r[3] for r in random}) == 34
    assert np.allclose([r[6] for r in random], 1 / 34)


def test_bernoulli_ts_predicted_from_random_logs(section) -> None:  # type: ignore[no-untyped-def]
    d = next(d for d in section.directions if (d.source, d.target) == ("random", "bts"))
    assert d.target_probabilities == "empirical"
    by = {e.estimator: e.ctr.value for e in d.estimates}
    assert by["ips"] == pytest.approx(0.005656, abs=5e-7)
    assert by["snips"] == pytest.approx(0.005740, abs=5e-7)
    # No weight reaches the default cap of 100: capping changes nothing.
    assert by["capped_ips"] == pytest.approx(by["ips"], rel=1e-12)
    assert by["ncis"] == pytest.approx(by["snips"], rel=1e-12)
    g = d.diagnostics
    assert g.impressions == 10_000
    assert g.mean_weight == pytest.approx(0.9854, abs=5e-5)
    assert g.ess == pytest.approx(2869.3, abs=0.05)
    assert g.max_weight == pytest.approx(7.484, abs=5e-4)
    assert g.capped_share == 0
    assert d.target_ctr == pytest.approx(0.006900, abs=1e-12)
    assert d.source_ctr == pytest.approx(0.0046, abs=1e-12)
    # ESS is 28.7% of N, the mean weight within [0.9, 1.1], every (item, position)
    # of Bernoulli TS shown by Random: no warning.
    assert d.warnings == ()


def _weights_from(source: str, target: str) -> tuple[np.ndarray, np.ndarray]:
    """From the raw rows: each ``source`` impression's weight π/μ, π the ``target``
    campaign's share of (item, position) among its impressions at that position,
    μ the impression's own logged propensity; and its click."""
    with gzip.open(DATA / f"men_{target}.csv.gz", "rt") as f:
        tgt = list(csv.DictReader(f))
    with gzip.open(DATA / f"men_{source}.csv.gz", "rt") as f:
        src = list(csv.DictReader(f))
    pairs: dict[tuple[str, str], int] = {}
    at: dict[str, int] = {}
    for r in tgt:
        pairs[(r["item_id"], r["position"])] = pairs.get((r["item_id"], r["position"]), 0) + 1
        at[r["position"]] = at.get(r["position"], 0) + 1
    pi = np.array([pairs.get((r["item_id"], r["position"]), 0) / at[r["position"]] for r in src])
    mu = np.array([float(r["propensity_score"]) for r in src])
    return pi / mu, np.array([float(r["click"]) for r in src])


def _varying(policy: str) -> tuple[int, int]:
    """(item, position) pairs the raw rows log, and those with two propensities."""
    seen: dict[tuple[str, int], set[float]] = {}
    for r in _rows(policy, policy):
        seen.setdefault((r[3], r[4]), set()).add(float(r[6]))  # type: ignore[arg-type]
    return len(seen), sum(1 for v in seen.values() if max(v) - min(v) > 1e-9 * max(v))


def test_random_predicted_from_bts_logs(section) -> None:  # type: ignore[no-untyped-def]
    """Bernoulli TS's propensities vary between requests, which does not matter:
    each weight divides by its impression's own propensity, and the target,
    uniform Random, logs one propensity per (item, position)."""
    assert _varying("bts")[1] > 0 and _varying("random")[1] == 0
    d = next(d for d in section.directions if (d.source, d.target) == ("bts", "random"))
    assert d.target_probabilities == "empirical" and d.varying_target is None
    w, c = _weights_from("bts", "random")
    by = {e.estimator: e for e in d.estimates}
    assert by["ips"].ctr.value == pytest.approx((w * c).mean(), rel=1e-9)
    assert by["snips"].ctr.value == pytest.approx((w * c).sum() / w.sum(), rel=1e-9)
    capped = np.minimum(w, 100.0)
    assert by["capped_ips"].ctr.value == pytest.approx((capped * c).mean(), rel=1e-9)
    g = d.diagnostics
    assert g.mean_weight == pytest.approx(w.mean(), rel=1e-9)
    assert g.ess == pytest.approx(w.sum() ** 2 / (w**2).sum(), rel=1e-9)
    assert g.max_weight == pytest.approx(w.max(), rel=1e-9)
    assert g.capped_share == pytest.approx((w > 100).mean(), abs=1e-12)
    # One request per user: the users' weights are the impressions'.
    users = by["snips"].users
    assert users is not None
    assert users.ess_users == pytest.approx(w.sum() ** 2 / (w**2).sum(), rel=1e-9)
    # Worth 624 users, but a handful of weights near 100-200 among 10,000 make them
    # skewed: the third central moment over the variance^1.5, over √users.
    c3 = ((w - w.mean()) ** 3).mean() / ((w - w.mean()) ** 2).mean() ** 1.5
    assert users.skewness == pytest.approx(c3, rel=1e-6)
    assert c3 / np.sqrt(len(w)) > 0.1 and users.reasons == ("skewed",)
    # Skewed only: Hall's interval on snips's per-user influence values is shown
    # instead of the normal one, and no warning (docs/metrics.md#ope-intervals).
    assert users.interval == "skew_corrected"
    r = (w * c).sum() / w.sum()
    psi = (w * c - r * w) / w.mean()
    dev = psi - psi.mean()
    gamma = (dev**3).mean() / (dev**2).mean() ** 1.5
    snips = by["snips"].ctr
    assert (snips.kind, snips.skewness) == ("skew_corrected", pytest.approx(gamma, rel=1e-6))
    se = psi.std(ddof=1) / np.sqrt(len(w))
    assert snips.ci == pytest.approx(hall_interval(r, se, gamma, len(w), 0.05), rel=1e-6)
    assert not any("skewed" in x for x in d.warnings)


def test_both_directions_and_counts(section) -> None:  # type: ignore[no-untyped-def]
    """Both directions are estimated; Bernoulli TS, the target of one, logged its
    (item, position) pairs with propensities that vary between requests, so that
    direction says so (docs/metrics.md#target-probabilities)."""
    assert [(d.source, d.target) for d in section.directions] == [
        ("random", "bts"),
        ("bts", "random"),
    ]
    assert {a.arm: (a.impressions, a.without_propensity) for a in section.arms} == {
        "bts": (10_000, 0),
        "random": (10_000, 0),
    }
    pairs, varying = _varying("bts")
    d = section.directions[0]
    assert d.varying_target is not None
    assert (d.varying_target.status, d.varying_target.pairs, d.varying_target.varying) == (
        "personalised_target",
        pairs,
        varying,
    )
    assert d.varying_target.share == pytest.approx(varying / pairs)


def test_the_varying_target_in_json_text_and_page(db: str, tmp_path: Path) -> None:
    """The code in JSON; in text and on the page a sentence naming the variation,
    the assumption and how to give the target's probabilities, and no code."""
    pairs, varying = _varying("bts")
    args = ["report", "-e", EXP, "--db", db, "--no-offline", "--control", "random"]
    result = CliRunner().invoke(app, [*args, "-f", "json"])
    assert result.exit_code == 0, result.output
    ope = json.loads(result.stdout)["ope"]
    by = {(d["source"], d["target"]): d["varying_target"] for d in ope["directions"]}
    assert by == {
        ("random", "bts"): {
            "status": "personalised_target",
            "pairs": pairs,
            "varying": varying,
            "share": pytest.approx(varying / pairs),
        },
        ("bts", "random"): None,
    }
    # The skewed weights of random from bts's logs: a code in JSON, a sentence in text.
    back = next(d for d in ope["directions"] if d["source"] == "bts")
    snips = next(e for e in back["estimates"] if e["estimator"] == "snips")
    assert (snips["users"]["interval"], snips["users"]["reasons"]) == (
        "skew_corrected",
        ["skewed"],
    )
    assert snips["ctr"]["kind"] == "skew_corrected"
    sentence = (
        f"bts from random's logs: bts's own logged probabilities vary between requests for "
        f"{varying / pairs:.0%} of (item, position) pairs ({varying} of {pairs}), so its "
        "context-free frequency stands in for probabilities that depend on the request: the "
        "estimate assumes clicks do not depend on what bts's lists vary with (the user, the "
        "time); to predict instead, give bts's probabilities with --target-propensities FILE, "
        f"or record them: abeval experiment set {EXP} --target-propensities FILE"
    )
    out = CliRunner().invoke(app, [*args, "-f", "text"]).stdout
    assert f"!! {sentence}" in out.splitlines()
    assert "personalised_target" not in out
    assert not any(line.startswith("!! ") and "skewed" in line for line in out.splitlines())
    assert "Hall's skewness-corrected interval, as the weights over users are skewed" in out
    assert "skew_corrected" not in out
    assert any(
        line.startswith("  * snips") and line.endswith("; interval corrected for skewness")
        for line in out.splitlines()
    )
    page = tmp_path / "r.html"
    assert CliRunner().invoke(app, [*args, "-o", str(page)]).exit_code == 0
    html = unescape(page.read_text())
    assert sentence in html and "personalised_target" not in html
    assert '<span class="sub" data-field="interval-status">interval corrected for skewness' in (
        page.read_text()
    )
