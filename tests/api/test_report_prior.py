"""``abeval report --prior history`` and ``store.report(X, prior="history")``
(issue 32 item 4): the Bayesian view under each metric's prior learned from the
store's other experiments.

On the agreement tests' small store (four simulated experiments with a CTR
lift, and ``bare``): with the threshold lowered to 3 the report of ``exp-a``
learns a normal prior for CTR from ``exp-b``, ``exp-c`` and ``exp-d``; its mean
and sd are checked against τ's grid computed here from the definition
(docs/metrics.md), and the posterior against the conjugate normal update of the
flat one computed here with numpy. At the real threshold the store has too few
experiments: the flat view stays and the report says why in one line.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from agreement_store import build_store
from json_close import close
from typer.testing import CliRunner

import abeval
from abeval.cli import app
from abeval.errors import OptionError
from abeval.stats.program import MIN_EXPERIMENTS

runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_store(tmp_path_factory.mktemp("prior"))


def _ctr(report: Any) -> Any:
    return next(m for m in report.metrics if m.metric == "ctr")


def _expected_prior(lifts: np.ndarray, ses: np.ndarray) -> tuple[float, float]:
    """A new experiment's effect under the normal prior, τ averaged over its grid:
    the restricted likelihood of τ at 100 cell midpoints of [0, 3·sd(y) + max(s)],
    and given τ the weighted mean and its variance."""
    v = ses**2
    upper = 3 * lifts.std() + ses.max()
    taus = upper * (np.arange(100) + 0.5) / 100
    w = 1 / (v[None, :] + taus[:, None] ** 2)  # (grid, k)
    mu = (w * lifts).sum(axis=1) / w.sum(axis=1)
    loglik = -0.5 * (
        np.log(1 / w).sum(axis=1) + np.log(w.sum(axis=1)) + (w * (lifts - mu[:, None]) ** 2).sum(1)
    )
    weight = np.exp(loglik - loglik.max())
    weight /= weight.sum()
    mean = float(weight @ mu)
    second = float(weight @ (taus**2 + 1 / w.sum(axis=1) + mu**2))
    return mean, math.sqrt(second - mean**2)


def test_the_learned_normal_prior_gives_the_conjugate_posterior(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("abeval.analysis.learned_priors.MIN_EXPERIMENTS", 3)
    with abeval.open(db, read_only=True) as store:
        flat = store.report("exp-a")
        learned = store.report("exp-a", prior="history")
        program = store.program()
    others = [r for r in program.lifts if r.metric == "ctr" and r.experiment != "exp-a"]
    assert sorted(r.experiment for r in others) == ["exp-b", "exp-c", "exp-d"]
    prior = next(p for p in learned.settings.priors if p.metric == "ctr")
    assert (learned.settings.prior, prior.kind, prior.status, prior.experiments) == (
        "history", "normal", "used", 3,
    )  # fmt: skip
    mean, sd = _expected_prior(np.array([r.lift for r in others]), np.array([r.se for r in others]))
    assert prior.mean == pytest.approx(mean, rel=1e-9, abs=1e-12)
    assert prior.sd == pytest.approx(sd, rel=1e-9)
    before, after = _ctr(flat).bayesian.relative, _ctr(learned).bayesian.relative
    precision = 1 / before.sd**2 + 1 / sd**2
    expected_mean = (before.mean / before.sd**2 + mean / sd**2) / precision
    assert after.mean == pytest.approx(expected_mean, rel=1e-9)
    assert after.sd == pytest.approx(precision**-0.5, rel=1e-9)
    half = 1.959963984540054 * precision**-0.5
    assert after.ci == pytest.approx((expected_mean - half, expected_mean + half), rel=1e-9)
    # shrunk towards the history's mean, and the frequentist numbers untouched
    assert abs(after.mean - mean) < abs(before.mean - mean)
    # (each report reads the events afresh: DuckDB's threads may add in another order)
    close(_ctr(learned).comparison.to_dict(), _ctr(flat).comparison.to_dict(), tol=1e-12)
    assert [d.decision for d in learned.decisions] == [d.decision for d in flat.decisions]


def test_too_few_experiments_keep_the_flat_view_and_say_why(db: str) -> None:
    with abeval.open(db, read_only=True) as store:
        flat = store.report("exp-a")
        learned = store.report("exp-a", prior="history")
    assert MIN_EXPERIMENTS > 3
    ctr = next(p for p in learned.settings.priors if p.metric == "ctr")
    assert (ctr.status, ctr.experiments, ctr.mean, ctr.sd) == ("too_few", 3, None, None)
    assert ctr.message == (
        "ctr: the store holds 3 other experiments with a lift of it and a prior needs at "
        f"least {MIN_EXPERIMENTS}: the flat prior is used"
    )
    close(_ctr(learned).bayesian.to_dict(), _ctr(flat).bayesian.to_dict(), tol=1e-12)
    lines = [x for x in abeval.render.text(learned).splitlines() if x.startswith("PRIOR")]
    assert len(lines) == 1
    assert lines[0].startswith("PRIOR of the Bayesian view (P(win)): flat (no metric has enough")
    assert ctr.message in lines[0]
    assert not [x for x in abeval.render.text(flat).splitlines() if x.startswith("PRIOR")]


def test_the_prior_is_in_the_json_settings(db: str) -> None:
    result = runner.invoke(
        app, ["report", "-e", "exp-b", "--db", db, "-f", "json", "--prior", "history",
              "--no-offline", "--no-ope"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == "2.2"
    assert doc["settings"]["prior"] == "history"
    ctr = next(p for p in doc["settings"]["priors"] if p["metric"] == "ctr")
    assert set(ctr) == {"metric", "kind", "experiments", "status", "mean", "sd", "message"}
    assert (ctr["status"], ctr["experiments"]) == ("too_few", 3)
    flat = runner.invoke(app, ["report", "-e", "exp-b", "--db", db, "-f", "json",
                               "--no-offline", "--no-ope"])  # fmt: skip
    assert json.loads(flat.stdout)["settings"]["prior"] == "flat"
    assert json.loads(flat.stdout)["settings"]["priors"] == []


def test_a_bad_prior_is_one_line_naming_the_choices(db: str) -> None:
    result = runner.invoke(app, ["report", "-e", "exp-a", "--db", db, "--prior", "bayes"])
    assert result.exit_code != 0
    assert result.output.strip() == "Error: --prior 'bayes': choose from flat, history"
    with pytest.raises(OptionError, match="prior"):
        abeval.api.report_options(prior="bayes")
