"""The online metrics (docs/metrics.md#online-metrics): one definition each, in terms
of the per-user variables that the store aggregates.

A metric is a mean of a per-user value, a proportion of users, or a ratio of two
per-user sums (delta method). :func:`arm_stats` turns an arm's moments into the
statistics layer's sufficient statistics, with the same metric over the
pre-period as CUPED covariate when asked.

:data:`BUILTIN_METRICS` is a read-only constant. The metrics of one store (the
built-ins and its team-defined ones) are a :class:`Catalog`, read from the store
with each result, passed to what looks a metric up and carried by the results;
names are checked against the catalog given (:func:`parse_online_metrics`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

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
from abeval.store.sql.online_variables import BUILTIN, Moments, VariableSet

if TYPE_CHECKING:
    from abeval.analysis.team_metrics import TeamMetric

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


#: The built-in online metrics (read-only): every store's catalog starts from them.
BUILTIN_METRICS: Mapping[str, OnlineMetric] = MappingProxyType(
    {
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
)


#: The per-user variables of a store without team-defined metrics.
NO_VARIABLES = VariableSet((), ())


def _frozen(items: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    """A read-only copy of ``items``."""
    return MappingProxyType(dict(items or {}))


@dataclass(frozen=True)
class Catalog:
    """One store's metrics, as its results are computed and shown: every online
    metric (the built-ins, then the store's team-defined ones by name), and what the
    team-defined ones need beside the built-ins: their definitions, the per-user
    variables they sum, the caps their definitions give (variable → quantile) and
    what the report calls those variables (``t0_n`` → ``Σ value of add_to_cart``,
    ``t1_p`` → ``users with any add_to_cart``).

    Read from the store when a result is computed
    (:func:`abeval.analysis.team_metrics.read_catalog`), passed to the analysis and
    carried by the results, so that two stores open in one process never see each
    other's metrics. :data:`BUILTIN_CATALOG` is a store without team metrics."""

    metrics: Mapping[str, OnlineMetric] = field(default_factory=lambda: BUILTIN_METRICS)
    definitions: Mapping[str, TeamMetric] = field(default_factory=_frozen)
    #: The team metrics' per-user variables (the built-in ones are :data:`BUILTIN`).
    team_variables: VariableSet = NO_VARIABLES
    caps: Mapping[str, float] = field(default_factory=_frozen)
    labels: Mapping[str, str] = field(default_factory=_frozen)
    #: Event types the team metrics read that no ingested row has yet: their
    #: report rows say so (``no_events``) instead of showing zeros.
    unseen: frozenset[str] = frozenset()
    #: Team metrics that failed (name → the reason, one sentence with the fix): a
    #: definition that cannot be read, or an expression the engine refused on the
    #: data. Their rows have the status ``failed``; the other metrics are computed.
    failed: Mapping[str, str] = field(default_factory=_frozen)

    def __post_init__(self) -> None:
        for name in ("metrics", "definitions", "caps", "labels", "failed"):
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, _frozen(value))

    def __repr__(self) -> str:
        team = ", ".join(self.definitions) or "none"
        return f"<metric catalog: {len(BUILTIN_METRICS)} built-in metrics; team-defined: {team}>"

    def __contains__(self, name: object) -> bool:
        return name in self.metrics

    def __getitem__(self, name: str) -> OnlineMetric:
        return self.metrics[name]

    def get(self, name: str) -> OnlineMetric | None:
        return self.metrics.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        """Every metric's name: the built-ins, then the team-defined ones."""
        return tuple(self.metrics)

    @property
    def variables(self) -> VariableSet:
        """Every per-user variable a report sums: the built-in ones and the team's."""
        return BUILTIN.plus(self.team_variables)

    def label(self, name: str) -> str:
        """The metric's label (``ctr`` → ``CTR``; a team metric's is its name); the
        name itself when the catalog has no such metric."""
        found = self.metrics.get(name)
        return found.label if found is not None else name

    def lower_is_better(self, name: str) -> bool:
        """The metric's direction: True when a decrease is good (False when unknown)."""
        found = self.metrics.get(name)
        return found is not None and found.lower_is_better


#: The catalog of a store without team-defined metrics.
BUILTIN_CATALOG = Catalog()

#: What a name not (yet) known must look like to wait for the store's recorded metrics.
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,63}")


DEFAULT_PRIMARY = ("ctr", "conversion")
DEFAULT_GUARDRAILS = ("impressions_per_user",)


def parse_online_metrics(
    text: str | Sequence[str] | None,
    default: tuple[str, ...],
    parameter: str,
    *,
    catalog: Catalog | None = None,
) -> tuple[str, ...]:
    """``ctr,conversion`` (or a list of names) → names; an :class:`OptionError`
    naming ``parameter`` (``primary``) and suggesting the name meant for a misspelt one.
    Every name must be a metric of ``catalog`` (a store's, read already). Without a
    catalog, a name must be built in, or a lower-case identifier: it may name a
    team-defined metric of the store, which the report checks once it has read the
    store's catalog (:func:`check_known`)."""
    if text is None:
        return default
    parts = text.split(",") if isinstance(text, str) else list(text)
    names = tuple(n.strip() for n in parts if n.strip())
    known = (catalog or BUILTIN_CATALOG).metrics
    for name in names:
        lenient = catalog is None and _IDENTIFIER.fullmatch(name)
        if name not in known and not lenient:
            hint = did_you_mean(name, known, n=2)
            raise OptionError(
                parameter,
                text,
                f"unknown metric {name!r}; {hint}known: {', '.join(known)}",
                allowed=tuple(known),
            )
    return names


def check_known(names: Sequence[str], parameter: str, catalog: Catalog) -> None:
    """An :class:`OptionError` for the first of ``names`` that is no metric of
    ``catalog`` (built-in or recorded)."""
    if names:
        parse_online_metrics(",".join(names), (), parameter, catalog=catalog)


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


def direction(c: Comparison) -> int:
    """+1 or −1 when the (multiplicity-adjusted, where set) interval of the lift
    excludes zero, else 0: what "significant" means everywhere in a report."""
    # an unbounded (Fieller) relative interval: the absolute one, same test, same sign
    lift = c.relative if c.relative.interval is not None else c.absolute
    ci = lift.interval
    if c.status != "ok" or ci is None:
        return 0
    return 1 if ci[0] > 0 else (-1 if ci[1] < 0 else 0)
