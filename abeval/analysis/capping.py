"""Outlier capping (docs/metrics.md#outlier-capping): ``--cap revenue_per_user=0.99``.

A cap names a metric and a quantile. It caps the metric's per-user numerator
variable (revenue for revenue per user and for average order value) at that
quantile of all analysed users, both arms pooled, before the sufficient
statistics are summed; every metric built on the variable reads the capped values.
The quantile and the count of users above it are computed in the engine
(:func:`abeval.store.online_sql.cap_values`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from abeval.analysis.online_metrics import BUILTIN_METRICS, METRICS
from abeval.analysis.report_model import CapInfo
from abeval.store.online_sql import CapValue

#: Metrics whose numerator can be capped: those built on revenue (revenue per user,
#: average order value). The counts are not capped: clicks, impressions and
#: purchases also feed CTR, conversion and the denominators of the ratios.
CAPPED_VARIABLES = ("revenue",)
CAPPABLE = tuple(n for n, m in METRICS.items() if m.numerator in CAPPED_VARIABLES)


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
            if not sep:
                raise ValueError(
                    f"cannot read {part!r}; write METRIC=QUANTILE, such as revenue_per_user=0.99"
                )
            if name not in CAPPABLE and name in BUILTIN_METRICS:
                raise ValueError(f"cannot cap {name!r}; capped metrics: {', '.join(CAPPABLE)}")
            try:
                quantile = float(q)
            except ValueError:
                quantile = math.nan
            if not 0 < quantile < 1:
                raise ValueError(
                    f"the quantile of {name} must be between 0 and 1 (exclusive), got {q.strip()!r}"
                )
            out[name] = quantile
    variables: dict[str, tuple[str, float]] = {}
    for name, quantile in out.items():
        if name not in METRICS:  # a team-defined metric: checked once the store is read
            continue
        variable = METRICS[name].numerator
        if variable in variables and variables[variable][1] != quantile:
            other = variables[variable][0]
            raise ValueError(f"{other} and {name} both cap {variable}; give them the same quantile")
        variables[variable] = (name, quantile)
    return tuple(out.items())


def variable_quantiles(caps: Iterable[tuple[str, float]]) -> dict[str, float]:
    """The per-user variable each capped metric caps, with its quantile."""
    return {METRICS[name].numerator: quantile for name, quantile in caps}


def cap_infos(
    values: Mapping[str, CapValue], labels: Mapping[str, str] | None = None
) -> tuple[CapInfo, ...]:
    """What the report says of each cap: the metrics it applies to, its value, and
    how many users it touched per arm."""
    return tuple(
        CapInfo(
            variable=(labels or {}).get(v.variable, v.variable),
            metrics=tuple(n for n, m in METRICS.items() if m.numerator == v.variable),
            quantile=v.quantile,
            cap=v.cap,
            users_capped=dict(v.users_capped),
            users_capped_total=sum(v.users_capped.values()),
        )
        for v in values.values()
    )
