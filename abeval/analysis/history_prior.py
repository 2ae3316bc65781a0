"""The Bayesian view's prior learned from the store's other experiments
(``abeval report --prior history``; docs/metrics.md#a-prior-learned-from-history).

Per metric, the lifts and standard errors of the store's *other* experiments are
read as ``abeval program`` reads them (:func:`abeval.analysis.program_store.store_program`,
each experiment's report under its saved configuration) and their distribution of
true effects fitted by :func:`abeval.stats.program.fit_prior`. The Bayesian view
takes it as a normal prior on the relative lift: for the normal prior, the
distribution of a new experiment's true effect averaged over τ's grid (mean
Σ w·μ_τ, variance Σ w·(τ² + se(μ_τ)² + μ_τ²) − mean², so a τ estimated at 0
still leaves the mean's own uncertainty); for the mixture with nulls, the normal
with the mixture's mean and sd. With fewer than
:data:`~abeval.stats.program.MIN_EXPERIMENTS` other experiments of a metric, that
metric keeps the flat prior and the reason is said. The store is read by
:func:`abeval.analysis.learned_priors.learned_priors`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from abeval.stats.program import MIN_EXPERIMENTS, Prior
from abeval.stats.results import JsonResult

if TYPE_CHECKING:
    from abeval.stats.bayesian import NormalPrior

#: The Bayesian view's prior (``--prior``): flat, or learned from the store's history.
PriorChoice = Literal["flat", "history"]
PRIOR_CHOICES: tuple[PriorChoice, ...] = ("flat", "history")
#: Whether a metric's learned prior is used (``too_few``: the flat prior stays).
LearnedStatus = Literal["used", "too_few"]


@dataclass(frozen=True)
class LearnedPrior(JsonResult):
    """One metric's prior learned from the store's other experiments: the fitted
    ``kind`` (``normal``, ``mixture``, ``none``), the number of other experiments
    with a lift of it, and the normal N(``mean``, ``sd``²) on the relative lift the
    Bayesian view uses (None, with ``message`` saying why, when ``too_few``)."""

    metric: str
    kind: str
    experiments: int
    status: LearnedStatus
    mean: float | None = None
    sd: float | None = None
    message: str | None = None

    def normal(self) -> NormalPrior | None:
        """The prior as the Bayesian view takes it (None: flat)."""
        from abeval.stats.bayesian import NormalPrior

        if self.status != "used" or self.mean is None or not self.sd:
            return None
        return NormalPrior(self.mean, self.sd * self.sd)


def learned_prior(
    metric: str, lifts: list[float], ses: list[float], min_experiments: int = MIN_EXPERIMENTS
) -> LearnedPrior:
    """``metric``'s prior from the other experiments' relative ``lifts`` and ``ses``
    (module docstring)."""
    from abeval.stats.program import fit_prior

    k = len(lifts)
    if k < min_experiments:
        message = _too_few(metric, k, min_experiments)
        return LearnedPrior(metric, "none", k, "too_few", message=message)
    prior = fit_prior(lifts, ses, min_experiments=min_experiments)
    mean, sd = predictive(prior)
    return LearnedPrior(metric, prior.kind, k, "used", mean=mean, sd=sd)


def predictive(prior: Prior) -> tuple[float, float]:
    """The mean and sd of a new experiment's true effect under a fitted prior (module
    docstring)."""
    assert prior.mean is not None and prior.sd is not None
    if prior.kind != "normal" or not prior.tau_grid:
        return prior.mean, prior.sd
    mean = sum(w * mu for _, w, mu, _ in prior.tau_grid)
    second = sum(w * (tau * tau + se * se + mu * mu) for tau, w, mu, se in prior.tau_grid)
    return mean, math.sqrt(max(second - mean * mean, 0.0))


def _too_few(metric: str, k: int, needed: int) -> str:
    others = f"{k} other experiment{'' if k == 1 else 's'}"
    return (
        f"{metric}: the store holds {others} with a lift of it and a prior needs at least "
        f"{needed}: the flat prior is used"
    )
