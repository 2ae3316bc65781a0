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
from pathlib import Path

import numpy as np
import pytest
from ope_helpers import Impression, write_impressions

from abeval.analysis.ope import OpeOptions, ope_results
from abeval.store import open_store
from abeval.store.ingest import ingest_file

DATA = Path(__file__).parent / "data" / "obp"
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
def section(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("obp")
    events = write_impressions(
        tmp / "events.csv", EXP, _rows("random", "random") + _rows("bts", "bts")
    )
    with open_store(str(tmp / "s.duckdb")) as store:
        ingest_file(store, events)
        with store.connect() as conn:
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


def test_both_directions_and_counts(section) -> None:  # type: ignore[no-untyped-def]
    """Random's logs give Bernoulli TS's CTR; Bernoulli TS logged one (item, position)
    with different propensities on different requests, so its logs give no
    context-free estimate of Random's (docs/metrics.md#target-probabilities)."""
    assert [(d.source, d.target) for d in section.directions] == [("random", "bts")]
    assert {a.arm: (a.impressions, a.without_propensity) for a in section.arms} == {
        "bts": (10_000, 0),
        "random": (10_000, 0),
    }
    seen: dict[tuple[str, int], set[float]] = {}
    for r in _rows("bts", "bts"):
        seen.setdefault((r[3], r[4]), set()).add(float(r[6]))  # type: ignore[arg-type]
    varying = sum(1 for v in seen.values() if max(v) - min(v) > 1e-9 * max(v))
    assert varying > 0
    (skipped,) = section.not_estimated
    assert (skipped.source, skipped.target, skipped.status) == (
        "bts",
        "random",
        "personalised_logging",
    )
    assert (skipped.pairs, skipped.varying) == (len(seen), varying)
