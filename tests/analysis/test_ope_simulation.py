"""Off-policy estimates on simulated logs whose truth is known
(docs/metrics.md#off-policy-estimates).

The source arm shows, at each of two positions, one of five items of its own
drawn from a known logging policy and logs that probability as the propensity;
a click happens with a known probability per (item, position). The target
policy's true probabilities are given as a ``--target-propensities`` file for
every item at every position of every source request, so the target's true CTR
per impression is Σ_k Σ_a π_target(a, k) q(a, k) / 2. Over many independent
experiments IPS must be unbiased and its clustered intervals must cover the
truth at about the nominal rate. A constructed case must raise every warning.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ope_helpers import Impression, write_impressions, write_target_file

from abeval.analysis.ope import OpeOptions, ope_results
from abeval.store import open_store
from abeval.store.ingest import ingest_file

RUNS = 120
USERS = 150
LOGGING = np.array([[0.30, 0.25, 0.20, 0.15, 0.10], [0.10, 0.15, 0.20, 0.25, 0.30]])
TARGET = np.array([[0.05, 0.10, 0.15, 0.30, 0.40], [0.40, 0.30, 0.15, 0.10, 0.05]])
CLICK = np.array([[0.02, 0.05, 0.10, 0.20, 0.30], [0.25, 0.15, 0.10, 0.05, 0.02]])
TRUTH = float((TARGET * CLICK).sum(axis=1).mean())


def _experiment(
    rng: np.random.Generator, name: str
) -> tuple[list[Impression], list[tuple[str, str, int, float]]]:
    rows: list[Impression] = []
    target_rows: list[tuple[str, str, int, float]] = []
    for arm, policy, users in (("control", LOGGING, USERS), ("treatment", TARGET, 10)):
        for u in range(users):
            # Users differ in how often they click: clustering matters.
            taste = rng.uniform(0.5, 1.5)
            for q in range(int(rng.integers(1, 5))):
                request = f"{name}-{arm}-{u}-{q}"
                for k in (0, 1):
                    a = int(rng.choice(5, p=policy[k]))
                    clicked = bool(rng.random() < min(1.0, taste * CLICK[k, a]))
                    user = f"{name}-{arm}-{u}"
                    rows.append(
                        (arm, user, request, f"i{k}{a}", k + 1, clicked, float(policy[k, a]))
                    )
                    if arm == "control":
                        target_rows += [
                            (request, f"i{k}{b}", k + 1, float(TARGET[k, b])) for b in range(5)
                        ]
    return rows, target_rows


@pytest.mark.slow
def test_ips_is_unbiased_and_its_intervals_cover(tmp_path: Path) -> None:
    rng = np.random.default_rng(2024)
    events: list[tuple[str, list[Impression]]] = []
    files = []
    for r in range(RUNS):
        rows, target_rows = _experiment(rng, f"sim{r}")
        events.append((f"sim{r}", rows))
        files.append(write_target_file(tmp_path / f"target{r}.csv", target_rows))
    path = tmp_path / "events.csv"
    with path.open("w") as f:
        for i, (name, rows) in enumerate(events):
            part = write_impressions(tmp_path / "part.csv", name, rows).read_text()
            f.write(part if i == 0 else part.split("\n", 1)[1])
    errors, covered = [], 0
    with open_store(str(tmp_path / "s.duckdb")) as store:
        ingest_file(store, path)
        with store.connect() as conn:
            for r, file in enumerate(files):
                options = OpeOptions(target_propensities=str(file))
                section = ope_results(conn, f"sim{r}", "control", ["treatment"], options, 0.05)
                d = section.directions[0]
                assert (d.source, d.target_probabilities) == ("control", "file")
                ips = next(e for e in d.estimates if e.estimator == "ips")
                assert ips.ctr.value is not None and ips.ctr.ci is not None
                errors.append(ips.ctr.value - TRUTH)
                covered += ips.ctr.ci[0] <= TRUTH <= ips.ctr.ci[1]
                # True probabilities over the whole support: no deficit.
                assert d.diagnostics.support_deficit == 0
    e = np.array(errors)
    assert abs(e.mean()) < 3 * e.std(ddof=1) / np.sqrt(RUNS)
    # 95% intervals: the share covering has a binomial sd of 2% over 120 runs.
    assert 0.88 <= covered / RUNS <= 0.995


def test_a_deficient_case_raises_every_warning(tmp_path: Path) -> None:
    """The source shows item a0 once with propensity 0.001 among 400 impressions of
    items a1..a4, and never shows b0; the target puts probability 0.5 on a0 and 0.3
    on b0 (the file), so one weight of 500 dominates (ESS < 1% of N), the weights
    average far below 1 and 30% of the target's mass is off the source's support."""
    rows: list[Impression] = []
    target: list[tuple[str, str, int, float]] = []
    for u in range(400):
        request = f"r{u}"
        item, p = ("a0", 0.001) if u == 0 else (f"a{1 + u % 4}", 0.25)
        rows.append(("control", f"u{u}", request, item, 1, u % 7 == 0, p))
        target += [(request, "a0", 1, 0.5), (request, "b0", 1, 0.3), (request, item, 1, 0.2)]
        if item == "a0":
            target.pop()
    rows += [("treatment", f"t{u}", f"t{u}", "a0", 1, u % 3 == 0, 0.5) for u in range(20)]
    events = write_impressions(tmp_path / "e.csv", "deficient", rows)
    file = write_target_file(tmp_path / "t.csv", target)
    with open_store(str(tmp_path / "s.duckdb")) as store:
        ingest_file(store, events)
        with store.connect() as conn:
            options = OpeOptions(target_propensities=str(file))
            section = ope_results(conn, "deficient", "control", ["treatment"], options, 0.05)
    g = section.directions[0].diagnostics
    # Weights: 500 once, then 0.2 / 0.25 = 0.8 for the 399 others.
    w = np.array([500.0] + [0.8] * 399)
    assert g.ess == pytest.approx(w.sum() ** 2 / (w**2).sum(), rel=1e-12)
    assert g.ess_share < 0.01  # type: ignore[operator]
    assert g.mean_weight == pytest.approx(w.mean(), rel=1e-12)
    # Mass on b0 (never shown): 0.3 per request, of 0.5 + 0.3 + 0.2 = 1 per request
    # (0.8 on the request that showed a0).
    assert g.support_deficit == pytest.approx(0.3 * 400 / (399 * 1.0 + 0.8), rel=1e-12)
    warnings = section.directions[0].warnings
    assert [w.split(" is ")[0] for w in warnings[:3]] == [
        "effective sample size",
        "mean weight",
        "support deficit",
    ]
    # Over users (one impression each): 400 users, one of weight 500, so Kish's
    # effective number of users is (Σw)² / Σw², and the top 1% (4 users, the
    # 500 and three of 0.8) carry the clicks of the user of weight 500 (who
    # clicked: u0, 0 % 7 == 0) and of those three among the 399 others.
    snips = next(e for e in section.directions[0].estimates if e.estimator == "snips")
    assert snips.users is not None
    ess = w.sum() ** 2 / (w**2).sum()
    assert snips.users.ess_users == pytest.approx(ess, rel=1e-12)
    assert snips.users.interval == "unreliable"
    assert warnings[3] == (
        f"snips: its weights are worth {ess:.1f} users (below 40), so its normal interval is "
        "unreliable (in simulation such intervals covered 87-93% of the time, not 95%)"
    )
    # Skewed too, (n - 2) / √(n - 1) for one large weight among equal ones: the
    # effective users already said the interval is unreliable, so no second line.
    g = (len(w) - 2) / np.sqrt(len(w) - 1)
    assert snips.users.skewness == pytest.approx(g, rel=1e-9)
    assert snips.users.reasons == ("few_users", "skewed")
    assert snips.users.top_share is not None and snips.users.top_share > 0.5
    assert warnings[4].startswith("snips: the 1% of users with the largest weights carry ")
