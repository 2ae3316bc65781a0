"""The online metrics (docs/metrics.md#online-metrics): one definition each, in terms
of the per-user variables that the store aggregates.

A metric is a mean of a per-user value, a proportion of users, or a ratio of two
per-user sums (delta method). :func:`arm_stats` turns an arm's moments into the
statistics layer's sufficient statistics, with the same metric over the
pre-period as CUPED covariate when asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from abeval.errors import OptionError, did_you_mean
from abeval.stats import (
    Comparison,
    CupedStats,
    MeanStats,
    ProportionStats,
    RatioCupedStats,
    RatioStats,
)
from abeval.stats.sufficient import ArmStats
from abeval.store.sql.online_variables import Moments

Kind = Literal["mean", "proportion", "ratio"]


@dataclass(frozen=True)
class OnlineMetric:
    """One online metric: its ``kind``, the per-user variables it is built from
    (``numerator``, and ``denominator`` for a ratio), the ``label`` and
    ``description`` shown to users, and ``lower_is_better`` (a decrease is the
    good direction): the one place the Bayesian chance to win, the verdicts and
    the pages' colours take the metric's direction from."""

    name: str
    kind: Kind
    numerator: str
    denominator: str | None
    label: str
    description: str
    lower_is_better: bool = False


#: The built-in online metrics.
BUILTIN_METRICS: dict[str, OnlineMetric] = {
    m.name: m
    for m in (
        OnlineMetric(
            "ctr",
            "ratio",
            "clicks",
            "impressions",
            "CTR",
            "Σ clicks / Σ impressions over users (delta method)",
        ),
        OnlineMetric(
            "conversion",
            "proportion",
            "converted",
            None,
            "Conversion",
            "share of users with a purchase",
        ),
        OnlineMetric(
            "revenue_per_user",
            "mean",
            "revenue",
            None,
            "Revenue per user",
            "mean revenue per user",
        ),
        OnlineMetric(
            "clicks_per_user",
            "mean",
            "clicks",
            None,
            "Clicks per user",
            "mean clicks per user",
        ),
        OnlineMetric(
            "purchases_per_user",
            "mean",
            "purchases",
            None,
            "Purchases per user",
            "mean purchases per user",
        ),
        OnlineMetric(
            "impressions_per_user",
            "mean",
            "impressions",
            None,
            "Impressions per user",
            "mean impressions per user",
        ),
        OnlineMetric(
            "aov",
            "ratio",
            "revenue",
            "purchases",
            "Average order value",
            "Σ revenue / Σ purchases over users (delta method)",
        ),
    )
}

#: Every online metric a report can use: the built-ins and the team-defined metrics
#: of the store read last (:func:`use_metrics`, from
#: :func:`abeval.analysis.team_metrics.use_recorded`).
METRICS: dict[str, OnlineMetric] = dict(BUILTIN_METRICS)

#: What a name not (yet) known must look like to wait for the store's recorded metrics.
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,63}")


_STRICT: list[bool] = [False]


@contextmanager
def names_known() -> Iterator[None]:
    """Inside, :func:`parse_metrics` refuses any name not in :data:`METRICS`: for a
    caller that has read the store's recorded metrics already."""
    _STRICT.append(True)
    try:
        yield
    finally:
        _STRICT.pop()


def use_metrics(recorded: dict[str, OnlineMetric]) -> None:
    """Make :data:`METRICS` the built-ins and ``recorded`` (a store's team-defined
    metrics; their names never clash with a built-in, ``abeval metrics add`` refuses it)."""
    METRICS.clear()
    METRICS.update(BUILTIN_METRICS)
    METRICS.update({n: m for n, m in recorded.items() if n not in BUILTIN_METRICS})


DEFAULT_PRIMARY = ("ctr", "conversion")
DEFAULT_GUARDRAILS = ("impressions_per_user",)


def parse_metrics(
    text: str | Sequence[str] | None,
    default: tuple[str, ...],
    parameter: str,
    *,
    strict: bool = False,
) -> tuple[str, ...]:
    """``ctr,conversion`` (or a list of names) → names; an :class:`OptionError`
    naming ``parameter`` (``primary``) and suggesting the name meant for a misspelt one.
    Unless ``strict``, a lower-case identifier not known yet is kept: it may name a
    team-defined metric of the store, which the report checks once it has read them
    (:func:`check_known`)."""
    if text is None:
        return default
    parts = text.split(",") if isinstance(text, str) else list(text)
    names = tuple(n.strip() for n in parts if n.strip())
    for name in names:
        lenient = not (strict or _STRICT[-1]) and _IDENTIFIER.fullmatch(name)
        if name not in METRICS and not lenient:
            hint = did_you_mean(name, METRICS, n=2)
            raise OptionError(
                parameter,
                text,
                f"unknown metric {name!r}; {hint}known: {', '.join(METRICS)}",
                allowed=tuple(METRICS),
            )
    return names


def check_known(names: Sequence[str], parameter: str) -> None:
    """An :class:`OptionError` for the first of ``names`` that is no metric of
    :data:`METRICS` (built-in or recorded)."""
    if names:
        parse_metrics(",".join(names), (), parameter, strict=True)


def capped_copy(metric: str) -> str:
    """The name of the copy of a built-in metric's count numerator that a cap on the
    metric caps alone (docs/metrics.md#outlier-capping): ``cap_clicks_per_user``."""
    return f"cap_{metric}"


def numerator(metric: OnlineMetric, m: Moments) -> str:
    """The variable ``metric``'s numerator reads in ``m``: the capped copy when the
    report capped the metric (the moments carry it), else its own."""
    copy = capped_copy(metric.name)
    return copy if copy in m.sums else metric.numerator


def _ratio(m: Moments, num: str, den: str) -> RatioStats:
    return RatioStats(
        n=m.n,
        m_sum=m.sums[num],
        m_ss=m.ss(num),
        d_sum=m.sums[den],
        d_ss=m.ss(den),
        cross=m.cp(num, den),
    )


def arm_stats(metric: OnlineMetric, m: Moments, cuped: bool) -> ArmStats:
    """Sufficient statistics of ``metric`` in one arm; CUPED-ready when ``cuped``."""
    num = numerator(metric, m)
    if metric.kind == "ratio":
        den = metric.denominator or ""
        post = _ratio(m, num, den)
        if not cuped:
            return post
        pn, pd = f"pre_{num}", f"pre_{den}"
        pre = _ratio(m, pn, pd)
        return RatioCupedStats(
            post=post,
            pre=pre,
            m_pm=m.cp(num, pn),
            m_pd=m.cp(num, pd),
            d_pm=m.cp(den, pn),
            d_pd=m.cp(den, pd),
        )
    cls = ProportionStats if metric.kind == "proportion" else MeanStats
    post_mean = cls(n=m.n, sum=m.sums[num], ss=m.ss(num))
    if not cuped:
        return post_mean
    pre_name = f"pre_{num}"
    pre_mean = MeanStats(n=m.n, sum=m.sums[pre_name], ss=m.ss(pre_name))
    return CupedStats(post=post_mean, pre=pre_mean, cross=m.cp(num, pre_name))


def has_pre_period(m: Moments, metric: OnlineMetric) -> bool:
    """True when the pre-period covariate varies in this arm (CUPED can help)."""
    names = [f"pre_{numerator(metric, m)}"]
    if metric.denominator:
        names.append(f"pre_{metric.denominator}")
    return all(m.ss(n) > 0 for n in names)


def online_lower_is_better(metric: str) -> bool:
    """The direction of the online metric called ``metric`` (False when unknown)."""
    found = METRICS.get(metric)
    return found is not None and found.lower_is_better


def direction(c: Comparison) -> int:
    """+1 or −1 when the (multiplicity-adjusted, where set) interval of the lift
    excludes zero, else 0: what "significant" means everywhere in a report."""
    # an unbounded (Fieller) relative interval: the absolute one, same test, same sign
    lift = c.relative if c.relative.interval is not None else c.absolute
    ci = lift.interval
    if c.status != "ok" or ci is None:
        return 0
    return 1 if ci[0] > 0 else (-1 if ci[1] < 0 else 0)
