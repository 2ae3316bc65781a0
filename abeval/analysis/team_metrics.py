"""Team-defined metrics (docs/metrics.md#team-defined-metrics): what a definition
is, how it becomes per-user variables and an online metric, and how the recorded
ones join the built-ins for a report.

A definition counts, or sums the ``value`` of, a user's events of one type (with
optional attribute filters ``where``) from the first exposure inside the window,
exactly as the built-in variables are counted (:mod:`abeval.store.sql.online_variables`):

- ``proportion``: the share of users with at least one matching event;
- ``mean``: the per-user count (or, with ``value = "sum"``, the sum of values);
- ``ratio``: Σ numerator / Σ denominator over users (delta method).

The recorded definitions live in the store (:mod:`abeval.store.metric_definitions`);
:func:`use_recorded` reads them and adds them to
:data:`abeval.analysis.online_metrics.METRICS`, the one table every part of a
report looks a metric up in, and returns the variables the SQL must sum.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from abeval.analysis import online_metrics
from abeval.analysis.capping import check_cappable
from abeval.analysis.online_metrics import OnlineMetric, check_known
from abeval.analysis.report_model import ReportOptions
from abeval.store.sql.online_variables import BUILTIN, Variable, VariableSet

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

Kind = Literal["proportion", "mean", "ratio"]
KINDS: tuple[Kind, ...] = ("proportion", "mean", "ratio")

#: A metric's name, like an event type: a lower-case identifier of at most 64 characters.
NAME = re.compile(r"[a-z_][a-z0-9_]{0,63}")
NAME_TEXT = "a lower-case identifier (letters, digits and _, at most 64 characters)"


@dataclass(frozen=True)
class EventSum:
    """Per user: the number of events of ``event`` (or, ``value``: the sum of
    their values)."""

    event: str
    value: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"event": self.event, "value": self.value}

    def text(self) -> str:
        return f"Σ value of {self.event}" if self.value else f"count of {self.event}"


@dataclass(frozen=True)
class TeamMetric:
    """One team-defined metric. ``denominator`` only for a ratio; ``where``
    (attribute → text) filters every event the metric reads; ``cap`` is the quantile
    the per-user numerator is capped at (mean and ratio)."""

    name: str
    kind: Kind
    numerator: EventSum
    denominator: EventSum | None = None
    where: tuple[tuple[str, str], ...] = ()
    lower_is_better: bool = False
    cap: float | None = None
    description: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "numerator": self.numerator.to_json(),
            "denominator": self.denominator.to_json() if self.denominator else None,
            "where": dict(self.where),
            "lower_is_better": self.lower_is_better,
            "cap": self.cap,
            "description": self.description,
        }

    @classmethod
    def from_json(cls, name: str, d: Mapping[str, Any]) -> TeamMetric:
        den = d.get("denominator")
        return cls(
            name=name,
            kind=d["kind"],
            numerator=EventSum(**d["numerator"]),
            denominator=EventSum(**den) if den else None,
            where=tuple(sorted((str(k), str(v)) for k, v in (d.get("where") or {}).items())),
            lower_is_better=bool(d.get("lower_is_better", False)),
            cap=d.get("cap"),
            description=str(d.get("description") or ""),
        )

    def events(self) -> tuple[str, ...]:
        sides = (self.numerator, self.denominator) if self.denominator else (self.numerator,)
        return tuple(dict.fromkeys(s.event for s in sides))

    def formula(self) -> str:
        """The definition in one line (``abeval metrics``, the report's description)."""
        where = "".join(f", {k} = {v!r}" for k, v in self.where)
        if self.kind == "proportion":
            text = f"share of users with at least one {self.numerator.event} event{where}"
        elif self.kind == "mean":
            text = f"{self.numerator.text()} events per user{where}"
        else:
            den = self.denominator.text() if self.denominator else ""
            text = f"{self.numerator.text()} / {den} over users{where} (delta method)"
        if self.cap is not None:
            text += f"; per-user numerator capped at the {self.cap:g} quantile"
        return text


@dataclass(frozen=True)
class Catalog:
    """The recorded metrics of a store as the report uses them: the online metrics,
    the per-user variables they need (beside the built-in ones), and the caps their
    definitions give (variable → quantile)."""

    metrics: dict[str, OnlineMetric]
    variables: VariableSet
    caps: dict[str, float]
    definitions: dict[str, TeamMetric]
    #: What the report calls a capped variable (``t0_n`` → ``Σ value of add_to_cart``).
    labels: dict[str, str]


def catalog(definitions: Iterable[TeamMetric]) -> Catalog:
    """Variables ``t<i>_n`` (numerator), ``t<i>_d`` (denominator) and ``t<i>_p``
    (the 0/1 indicator of a proportion) for the i-th metric by name: short names,
    so that the moments' column labels stay within PostgreSQL's 63 characters."""
    metrics: dict[str, OnlineMetric] = {}
    summed: list[Variable] = []
    indicators: list[tuple[str, str]] = []
    caps: dict[str, float] = {}
    labels: dict[str, str] = {}
    defs = {d.name: d for d in sorted(definitions, key=lambda d: d.name)}
    for i, d in enumerate(defs.values()):
        num, den = f"t{i}_n", f"t{i}_d"
        summed.append(Variable(num, d.numerator.event, d.numerator.value, d.where))
        numerator, denominator = num, None
        if d.kind == "proportion":
            numerator = f"t{i}_p"
            indicators.append((numerator, num))
        elif d.kind == "ratio" and d.denominator is not None:
            summed.append(Variable(den, d.denominator.event, d.denominator.value, d.where))
            denominator = den
        if d.cap is not None:
            caps[num] = d.cap
        labels[num] = d.numerator.text()
        metrics[d.name] = OnlineMetric(
            d.name,
            d.kind,
            numerator,
            denominator,
            d.name,
            d.description or d.formula(),
            d.lower_is_better,
        )
    return Catalog(metrics, VariableSet(tuple(summed), tuple(indicators)), caps, defs, labels)


def recorded_definitions(conn: Connection) -> list[TeamMetric]:
    from abeval.store.metric_definitions import load

    return [TeamMetric.from_json(r.name, r.definition) for r in load(conn)]


def use_recorded(conn: Connection) -> tuple[Catalog, VariableSet]:
    """The store's recorded metrics, made known to every lookup of
    :data:`~abeval.analysis.online_metrics.METRICS` (replacing those of a store
    read before); and every variable a report sums (built-in and recorded)."""
    found = catalog(recorded_definitions(conn))
    online_metrics.use_metrics(found.metrics)
    return found, BUILTIN.plus(found.variables)


def check_names(o: ReportOptions) -> None:
    """Every metric a report's options name is known, now that the store's recorded
    metrics are (an :class:`~abeval.errors.OptionError` naming the option if not);
    a cap names a built-in metric that can be capped, or a recorded mean or ratio."""
    check_known(o.primary, "primary")
    check_known(o.guardrails, "guardrails")
    check_known(o.secondary or (), "secondary")
    check_known([name for name, _ in o.caps], "cap")
    check_cappable(o.caps)
