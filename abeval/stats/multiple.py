"""Multiple testing across metrics × treatment arms: adjusted p-values and intervals.

With m p-values sorted p₍₁₎ ≤ … ≤ p₍ₘ₎:

* Holm (1979), the default, controls the family-wise error rate::

      p̃₍ᵢ₎ = min(1, max_{j ≤ i} (m − j + 1)·p₍ⱼ₎)

* Benjamini–Hochberg (1995) controls the false discovery rate::

      p̃₍ᵢ₎ = min(1, min_{j ≥ i} m·p₍ⱼ₎ / j)

Matching intervals, so that an adjusted interval excludes 0 exactly when the
adjusted p-value is below α:

* Holm, ``holm_intervals="stepwise"`` (default): the hypothesis of rank i gets
  level 1 − α/(m − i + 1) (the Bonferroni level of its Holm step) while the
  step-down procedure is still rejecting; from the first rank s that Holm does
  not reject on, every remaining hypothesis gets the level where it stopped,
  1 − α/(m − s + 1). These intervals agree with Holm's decisions but are not
  simultaneous intervals (compatible simultaneous intervals for Holm exist,
  Strassburger and Bretz 2008, but only bound a rejected effect by 0 on one
  side, which is of little use in a report).
* Holm, ``holm_intervals="bonferroni"``: the simple conservative choice, every
  interval at 1 − α/m. These cover all m effects at once with probability
  ≥ 1 − α, but may include 0 for a result Holm declares significant.
* Benjamini–Hochberg: the false-coverage-rate intervals of Benjamini and
  Yekutieli (2005), every interval at 1 − R·α/m where R is the number of BH
  rejections (R = 1 when there are none, so that every interval still includes
  0). The expected share of selected intervals that miss their effect is ≤ α.

A relative lift tested with Fieller's interval (the default) has the absolute
lift's p-value, so the two families get the same adjusted p-values and levels;
its adjusted interval is Fieller's at the adjusted level, which excludes 0
exactly when the adjusted p-value is below α (docs/metrics.md#relative-lift).

With ``looks`` (each hypothesis's information fractions of a group-sequential
design, :mod:`abeval.stats.spending`) each step's level is spent over the looks: a
hypothesis passes a step of level a when its |z| reaches the boundary c_K(a)
of the last look, and its interval is effect ± c_K(a)·se, the repeated
confidence interval at its level (Holm's step-down over group-sequential tests
at the levels of each step: Maurer and Bretz 2013, "Multiple testing in group
sequential trials using graphical approaches", Statistics in Biopharmaceutical
Research 5(4)). Each hypothesis's p-value is then its repeated p-value
(:func:`abeval.stats.spending.repeated_p_value`: the smallest level whose last
boundary its |z| reaches, the z of the absolute lift for a Fieller relative
lift), its unadjusted interval the repeated confidence interval at 1 − α, and
the adjustment above runs on those p-values: an adjusted p-value is below α
exactly when the adjusted interval excludes 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from abeval.stats.frequentist import critical_value, fieller_lift
from abeval.stats.results import Adjustment, Comparison, Lift
from abeval.stats.sequential import DEFAULT_TUNING_N, sequential_rho
from abeval.stats.spending import repeated_p_value, spending_critical_value

HolmIntervals = Literal["stepwise", "bonferroni"]


def _order(p_values: Sequence[float]) -> list[int]:
    return sorted(range(len(p_values)), key=lambda i: p_values[i])


def _check(p_values: Sequence[float], method: str) -> None:
    if method not in ("holm", "bh"):
        raise ValueError(f"unknown adjustment {method!r}: use 'holm' or 'bh'")
    if any(not 0 <= p <= 1 for p in p_values):
        raise ValueError("p-values must be in [0, 1]")


def _repeated(
    lift: Lift, r: Comparison, scale: Literal["absolute", "relative"], looks: tuple[float, ...]
) -> Lift:
    """A fixed-horizon lift as the group-sequential design reads it: its repeated
    p-value and repeated confidence interval at 1 − α (module doc)."""
    fieller = scale == "relative" and r.relative_interval == "fieller" and r.fieller is not None
    tested = r.absolute if fieller else lift
    if tested.effect is None or not tested.se:
        return replace(lift, p_value=1.0)
    p = repeated_p_value(tested.effect / tested.se, looks)
    critical = spending_critical_value(looks, r.alpha)
    if fieller:
        assert r.fieller is not None
        return replace(lift, p_value=p, ci=fieller_lift(r.absolute, lift, r.fieller, critical).ci)
    if lift.effect is None or lift.se is None:
        return replace(lift, p_value=p)
    ci = (lift.effect - critical * lift.se, lift.effect + critical * lift.se)
    return replace(lift, p_value=p, ci=ci)


def adjust_pvalues(p_values: Sequence[float], method: Adjustment = "holm") -> list[float]:
    """Holm or Benjamini–Hochberg adjusted p-values, in the order given."""
    _check(p_values, method)
    m = len(p_values)
    order = _order(p_values)
    adjusted = [0.0] * m
    if method == "holm":
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, (m - rank) * p_values[i])
            adjusted[i] = min(1.0, running)
    else:
        running = 1.0
        for rank in range(m - 1, -1, -1):
            i = order[rank]
            running = min(running, m * p_values[i] / (rank + 1))
            adjusted[i] = max(running, p_values[i])  # never below p (rounding of m·p/m)
    return adjusted


def adjusted_alphas(
    p_values: Sequence[float],
    alpha: float = 0.05,
    method: Adjustment = "holm",
    *,
    holm_intervals: HolmIntervals = "stepwise",
) -> list[float]:
    """Per-hypothesis α of the interval that matches the adjustment (module doc)."""
    _check(p_values, method)
    m = len(p_values)
    if m == 0:
        return []
    order = _order(p_values)
    if method == "bh":
        rejections = max(
            (rank + 1 for rank, i in enumerate(order) if p_values[i] <= (rank + 1) * alpha / m),
            default=0,
        )
        return [alpha * max(rejections, 1) / m] * m
    if holm_intervals == "bonferroni":
        return [alpha / m] * m
    levels = [0.0] * m
    stopped: float | None = None
    for rank, i in enumerate(order):
        step = alpha / (m - rank)
        if stopped is None and p_values[i] > step:
            stopped = step
        levels[i] = step if stopped is None else stopped
    return levels


def _adjust_lifts(
    results: Sequence[Comparison],
    scale: Literal["absolute", "relative"],
    method: Adjustment,
    holm_intervals: HolmIntervals,
    looks: Sequence[tuple[float, ...]] | None = None,
) -> list[Lift]:
    lifts = [getattr(r, scale) for r in results]
    family = [i for i, lift in enumerate(lifts) if lift.p_value is not None]
    if looks is not None:
        # each lift's repeated p-value and interval at 1 − α (module doc)
        lifts = [
            _repeated(lift, r, scale, looks[i]) if i in family else lift
            for i, (lift, r) in enumerate(zip(lifts, results, strict=True))
        ]
    p = [lifts[i].p_value for i in family]
    adjusted = adjust_pvalues(p, method)
    levels = adjusted_alphas(p, results[0].alpha, method, holm_intervals=holm_intervals)
    out = list(lifts)
    for i, p_adj, level in zip(family, adjusted, levels, strict=True):
        lift, r = lifts[i], results[i]
        tuning_n = r.tuning_n or DEFAULT_TUNING_N
        # keep the mixture of the raw p-value, so the interval matches p_adjusted
        rho = sequential_rho(r.alpha, tuning_n) if r.method == "sequential" else None
        n = r.control_n + r.treatment_n
        if looks is not None:
            critical = spending_critical_value(looks[i], level)
        else:
            critical = critical_value(
                level, dof=lift.dof, method=r.method, n=n, tuning_n=tuning_n, rho=rho
            )
        if scale == "relative" and r.relative_interval == "fieller" and r.fieller is not None:
            fieller = fieller_lift(r.absolute, lift, r.fieller, critical)
            out[i] = replace(
                lift,
                p_adjusted=p_adj,
                ci_adjusted=fieller.ci,
                alpha_adjusted=level,
                interval_note=fieller.interval_note,
            )
            continue
        assert lift.effect is not None and lift.se is not None
        ci = (lift.effect - critical * lift.se, lift.effect + critical * lift.se)
        out[i] = replace(lift, p_adjusted=p_adj, ci_adjusted=ci, alpha_adjusted=level)
    return out


def adjust_comparisons(
    results: Sequence[Comparison],
    method: Adjustment = "holm",
    *,
    holm_intervals: HolmIntervals = "stepwise",
    looks: Sequence[tuple[float, ...]] | None = None,
) -> list[Comparison]:
    """The ``results`` with adjusted p-values and matching intervals filled in
    (with ``looks``, one schedule per result, the group-sequential intervals of
    the module docstring; the results must be fixed-horizon ones).

    Absolute and relative lifts are two separate families. Results without a
    p-value (a degenerate status) are left out of the family (m counts only
    tested hypotheses) and come back with the adjusted fields None. All results
    must share one α.
    """
    if not results:
        return []
    if len({r.alpha for r in results}) != 1:
        raise ValueError("results to adjust together must share one alpha")
    if looks is not None and (
        len(looks) != len(results) or any(r.method != "welch" for r in results)
    ):
        raise ValueError("group-sequential looks: one schedule per fixed-horizon result")
    absolute = _adjust_lifts(results, "absolute", method, holm_intervals, looks)
    relative = _adjust_lifts(results, "relative", method, holm_intervals, looks)
    return [
        replace(r, absolute=a, relative=rel, adjustment=method)
        for r, a, rel in zip(results, absolute, relative, strict=True)
    ]
