"""Outlier capping (docs/metrics.md#outlier-capping): ``--cap revenue_per_user=0.99``.

A cap names a metric and a quantile. It caps the metric's per-user numerator at
that quantile of all analysed users, both arms pooled, before the sufficient
statistics are summed:

- revenue (revenue per user, average order value) is capped in place: every metric
  built on it reads the capped values, and no other metric reads revenue;
- a count (clicks, impressions, purchases: clicks per user, CTR ...) is capped in a
  copy of its own for the metric named (``cap_clicks_per_user``,
  :class:`~abeval.store.sql.online_variables.VariableSet` ``copies``), so that CTR,
  conversion and the ratios' denominators that read the raw count are unchanged;
- a team-defined metric's numerator is a variable of its own already;
- a proportion is 0 or 1 per user: there is nothing to cap.

The quantile and the count of users above it are computed in the engine
(:func:`abeval.store.sql.online_caps.cap_values`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from abeval.analysis.online_metrics import BUILTIN_METRICS, Catalog, capped_copy
from abeval.analysis.report_model import CapInfo
from abeval.errors import OptionError
from abeval.store.sql.online_caps import CapValue
from abeval.store.sql.online_variables import VariableSet

#: Variables capped in place: only revenue-based metrics read revenue.
CAPPED_VARIABLES = ("revenue",)
#: The built-in metrics that can be capped: every mean and ratio.
CAPPABLE = tuple(n for n, m in BUILTIN_METRICS.items() if m.kind != "proportion")


def cappable(catalog: Catalog) -> tuple[str, ...]:
    """Every metric a cap can name: the built-in means and ratios, then the team
    metrics of the store's ``catalog`` that are not proportions."""
    team = (
        n for n, m in catalog.metrics.items() if n not in BUILTIN_METRICS and m.kind != "proportion"
    )
    return (*CAPPABLE, *team)


def refusal(name: str, catalog: Catalog) -> str | None:
    """Why a cap cannot name the metric ``name`` (known), or None when it can."""
    metric = catalog.get(name)
    if metric is None or metric.kind != "proportion":
        return None
    return (
        f"cannot cap {name!r}: a proportion is 0 or 1 per user; "
        f"metrics that can be capped: {', '.join(cappable(catalog))}"
    )


def check_cappable(caps: Iterable[tuple[str, float]], catalog: Catalog) -> None:
    """An :class:`~abeval.errors.OptionError` for ``--cap`` on the first capped
    metric that is a proportion in the store's ``catalog``."""
    for name, quantile in caps:
        reason = refusal(name, catalog)
        if reason:
            raise OptionError("cap", f"{name}={quantile:g}", reason)


def parse_caps(values: Iterable[str]) -> tuple[tuple[str, float], ...]:
    """``["revenue_per_user=0.99", "aov=0.95,clicks_per_user=0.999"]`` → (metric,
    quantile) pairs; ValueError with the fix for anything else."""
    out: dict[str, float] = {}
    for value in values:
        for part in value.split(","):
            if not part.strip():
                continue
            name, sep, q = part.partition("=")
            name = name.strip()
            if not sep or not name:
                raise ValueError(
                    f"cannot read {part.strip()!r}; write METRIC=QUANTILE, such as "
                    "revenue_per_user=0.99"
                )
            try:
                quantile = float(q)
            except ValueError:
                quantile = math.nan
            if not 0 < quantile < 1:
                raise ValueError(
                    f"the quantile of {name} must be between 0 and 1 (exclusive), got {q.strip()!r}"
                )
            if out.get(name, quantile) != quantile:
                raise ValueError(
                    f"{name} is capped twice, at {out[name]:g} and {quantile:g}; give one quantile"
                )
            out[name] = quantile
    variables: dict[str, tuple[str, float]] = {}
    for name, quantile in out.items():
        if name not in BUILTIN_METRICS:  # a team-defined metric: checked once the store is read
            continue
        variable = BUILTIN_METRICS[name].numerator
        if variable not in CAPPED_VARIABLES:  # a copy of its own, or a team metric's own
            continue
        if variable in variables and variables[variable][1] != quantile:
            other = variables[variable][0]
            raise ValueError(f"{other} and {name} both cap {variable}; give them the same quantile")
        variables[variable] = (name, quantile)
    return tuple(out.items())


def _copied(name: str) -> bool:
    """Whether a cap on ``name`` caps a copy of its numerator (a built-in count)."""
    metric = BUILTIN_METRICS.get(name)
    return metric is not None and metric.numerator not in CAPPED_VARIABLES


def variable_quantiles(caps: Iterable[tuple[str, float]], catalog: Catalog) -> dict[str, float]:
    """The per-user variable each capped metric caps, with its quantile: revenue
    itself, a count's copy for the metric (:func:`copies`), a team metric's numerator
    (in the store's ``catalog``)."""
    return {
        capped_copy(name) if _copied(name) else catalog[name].numerator: quantile
        for name, quantile in caps
    }


def copies(caps: Iterable[tuple[str, float]]) -> VariableSet:
    """The copies of the counts that the caps on built-in count metrics cap: the
    metric's numerator under the name :func:`capped_copy` gives."""
    return VariableSet(
        (),
        (),
        tuple((capped_copy(n), BUILTIN_METRICS[n].numerator) for n, _ in caps if _copied(n)),
    )


def copy_labels(caps: Iterable[tuple[str, float]]) -> dict[str, str]:
    """What the report calls each copy: the count it copies (``clicks``)."""
    return {capped_copy(n): BUILTIN_METRICS[n].numerator for n, _ in caps if _copied(n)}


def cap_infos(
    values: Mapping[str, CapValue], catalog: Catalog, labels: Mapping[str, str] | None = None
) -> tuple[CapInfo, ...]:
    """What the report says of each cap: the metrics (of the store's ``catalog``) it
    applies to, its value, and how many users it touched per arm."""
    copied = {capped_copy(n): n for n in CAPPABLE if _copied(n)}
    return tuple(
        CapInfo(
            variable=(labels or {}).get(v.variable, v.variable),
            metrics=(copied[v.variable],)
            if v.variable in copied
            else tuple(n for n, m in catalog.metrics.items() if m.numerator == v.variable),
            quantile=v.quantile,
            cap=v.cap,
            users_capped=dict(v.users_capped),
            users_capped_total=sum(v.users_capped.values()),
            lift_kept=lift_kept(v),
        )
        for v in values.values()
    )


def lift_kept(v: CapValue) -> float | None:
    """The share of a true lift the capped metric reads, for a lift that scales
    every user's value by 1 + ρ: d/dρ Σ min((1 + ρ)xᵢ, cap) = Σ_{xᵢ ≤ cap} xᵢ, so
    the capped relative lift is about ρ·κ with::

        κ = Σ_{xᵢ ≤ cap} xᵢ / Σ min(xᵢ, cap) = 1 − cap·(users above) / Σ min(xᵢ, cap)

    over both arms (the pooled cap moves with the lift by the same amount in both
    arms, so it adds nothing to the difference; docs/metrics.md#outlier-capping,
    measured in benchmarks/bench_capping.py). None without a cap or a capped sum."""
    total = sum(v.capped_sums.values())
    if v.cap is None or not total > 0 or not math.isfinite(total):
        return None
    kept = 1.0 - v.cap * sum(v.users_capped.values()) / total
    return kept if math.isfinite(kept) else None
