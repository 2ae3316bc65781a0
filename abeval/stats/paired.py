"""Paired comparison of two models over the same users.

Each user has a value under the baseline and under the other model (for example
the NDCG of each model's list for that user). The tests are on the per-user
differences d = other − baseline:

* the paired t test of mean(d) = 0, with its (1 − α) interval of the mean
  difference (Student's t with n − 1 degrees of freedom);
* the sign-flip randomisation test: under the null that the two models are
  exchangeable for each user, every sign of each nonzero difference is equally
  likely, so p = (1 + #{|Σ s·d| ≥ |Σ d|}) / (1 + resamples) over seeded random
  sign vectors s;
* wins, ties and losses (differences beyond ±1e-12 count as a win or a loss).

:func:`adjust_holm` applies Holm's step-down adjustment
(:func:`abeval.stats.multiple.adjust_pvalues`) over a family of comparisons,
separately for the t test and for the randomisation test.

Pure functions on arrays; ``abeval evaluate`` fetches the per-user values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from abeval.stats.results import finite

if TYPE_CHECKING:
    import numpy as np

#: A difference this close to 0 is a tie (and is left out of the sign flips).
TIE_TOLERANCE = 1e-12

#: Sign vectors drawn at once are capped at about this many entries (memory).
_CHUNK_ENTRIES = 20_000_000


@dataclass(frozen=True)
class PairedComparison:
    """One model against a baseline on one metric, paired over users.

    ``p_t_holm`` and ``p_randomization_holm`` are None until :func:`adjust_holm`
    fills them in; every number is None when fewer than two users have a value
    under both models (``status`` is then ``undefined``)."""

    metric: str
    model: str
    baseline: str
    users: int  # users with a value under both models
    baseline_mean: float | None
    model_mean: float | None
    difference: float | None  # mean over users of model − baseline
    ci_low: float | None
    ci_high: float | None
    t_statistic: float | None
    p_t: float | None
    p_t_holm: float | None
    p_randomization: float | None
    p_randomization_holm: float | None
    wins: int
    ties: int
    losses: int
    status: str = "ok"
    message: str = ""
    # The paired t test's standard error of ``difference``, sd(d) / sqrt(n).
    difference_se: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in self.__dict__.items():
            out[key] = finite(value) if isinstance(value, float) else value
        return out


def paired_comparison(
    metric: str,
    model: str,
    baseline: str,
    base: np.ndarray,
    other: np.ndarray,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
) -> PairedComparison:
    """Paired t test and sign-flip randomisation test of mean(other − base) = 0
    (the module docstring gives the definitions); ``base`` and ``other`` hold one
    value per user, in the same user order."""
    d = other - base
    n = int(d.size)
    wins, losses = int((d > TIE_TOLERANCE).sum()), int((d < -TIE_TOLERANCE).sum())
    ties = n - wins - losses
    if n < 2:
        return PairedComparison(
            metric,
            model,
            baseline,
            n,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            wins,
            ties,
            losses,
            status="undefined",
            message="fewer than two users with a value under both models",
        )
    mean, se, t_stat, p_t, (lo, hi), message = _t_test(d, alpha)
    return PairedComparison(
        metric=metric,
        model=model,
        baseline=baseline,
        users=n,
        baseline_mean=float(base.mean()),
        model_mean=float(other.mean()),
        difference=mean,
        ci_low=lo,
        ci_high=hi,
        t_statistic=t_stat,
        p_t=p_t,
        p_t_holm=None,
        p_randomization=sign_flip_p_value(d, resamples, seed),
        p_randomization_holm=None,
        wins=wins,
        ties=ties,
        losses=losses,
        message=message,
        difference_se=se,
    )


def _t_test(
    d: np.ndarray, alpha: float
) -> tuple[float, float, float | None, float, tuple[float, float], str]:
    """(mean, standard error, t, two-sided p, interval, message) of the paired t test on ``d``
    (at least two values). When every difference is the same the test is
    degenerate: no t, p = 1 for a zero mean else 0, the interval is the mean."""
    from scipy import stats

    n = int(d.size)
    mean = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(n)
    if se == 0:
        message = "every user has the same difference: the t test is degenerate"
        return mean, se, None, 1.0 if mean == 0 else 0.0, (mean, mean), message
    t_stat = mean / se
    p_t = float(2 * stats.t.sf(abs(t_stat), n - 1))
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * se
    return mean, se, t_stat, p_t, (mean - half, mean + half), ""


def sign_flip_p_value(d: np.ndarray, resamples: int, seed: int) -> float:
    """p of the sign-flip randomisation test of mean(d) = 0: (1 + hits) /
    (1 + resamples), where a hit is a random sign vector whose |Σ s·d| reaches
    |Σ d| (up to a relative 1e-9); 1 when every difference is a tie."""
    import numpy as np

    nz = d[np.abs(d) > TIE_TOLERANCE]
    if nz.size == 0:
        return 1.0
    rng = np.random.default_rng(seed)
    observed = abs(float(nz.sum()))
    threshold = observed - 1e-9 * max(1.0, observed)
    chunk = max(1, min(resamples, _CHUNK_ENTRIES // max(nz.size, 1)))
    hits = done = 0
    while done < resamples:
        b = min(chunk, resamples - done)
        signs = rng.integers(0, 2, size=(b, nz.size), dtype=np.int8) * 2 - 1
        hits += int((np.abs(signs @ nz) >= threshold).sum())
        done += b
    return (1 + hits) / (1 + resamples)


def adjust_holm(comparisons: Sequence[PairedComparison]) -> list[PairedComparison]:
    """The comparisons with ``p_t_holm`` and ``p_randomization_holm`` filled in:
    Holm over every comparison that has the raw p-value, one family per test."""
    out = list(comparisons)
    for i, p in _holm(out, "p_t"):
        out[i] = replace(out[i], p_t_holm=p)
    for i, p in _holm(out, "p_randomization"):
        out[i] = replace(out[i], p_randomization_holm=p)
    return out


def _holm(comparisons: Sequence[PairedComparison], attr: str) -> list[tuple[int, float]]:
    """(index, Holm-adjusted p) of each comparison whose ``attr`` p-value is not None."""
    # Not at import: abeval.stats.multiple loads scipy, which `abeval evaluate` of
    # one model never needs (its start-up time counts, docs/architecture.md).
    from abeval.stats.multiple import adjust_pvalues

    family = [i for i, c in enumerate(comparisons) if getattr(c, attr) is not None]
    p_values = [float(getattr(comparisons[i], attr)) for i in family]
    return [(i, float(p)) for i, p in zip(family, adjust_pvalues(p_values, "holm"), strict=True)]
