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
:func:`read_catalog` reads them into the store's
:class:`~abeval.analysis.online_metrics.Catalog` (the built-ins and these), the
one table every part of a report looks a metric up in, passed to the analysis
and carried by its results.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from abeval.analysis.capping import check_cappable
from abeval.analysis.online_metrics import BUILTIN_METRICS, Catalog, OnlineMetric, check_known
from abeval.store.sql.online_variables import Variable, VariableSet

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.analysis.report_model import ReportOptions

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


def catalog(definitions: Iterable[TeamMetric]) -> Catalog:
    """The catalog of a store that recorded ``definitions``: the built-in metrics,
    then these by name (a name of a built-in is left out: ``abeval metrics add``
    refuses it). Variables ``t<i>_n`` (numerator), ``t<i>_d`` (denominator) and ``t<i>_p``
    (the 0/1 indicator of a proportion) for the i-th metric by name: short names,
    so that the moments' column labels stay within PostgreSQL's 63 characters."""
    metrics: dict[str, OnlineMetric] = {}
    summed: list[Variable] = []
    indicators: list[tuple[str, str]] = []
    ratios: list[tuple[str, str]] = []
    caps: dict[str, float] = {}
    labels: dict[str, str] = {}
    defs = {d.name: d for d in sorted(definitions, key=lambda d: d.name)}
    for i, d in enumerate(defs.values()):
        num, den = f"t{i}_n", f"t{i}_d"
        summed.append(Variable(num, d.numerator.event, d.numerator.value, d.where))
        numerator, denominator = num, None
        labels[num] = d.numerator.text()
        if d.kind == "proportion":
            numerator = f"t{i}_p"
            indicators.append((numerator, num))
            labels[numerator] = f"users with any {d.numerator.event}"
        elif d.kind == "ratio" and d.denominator is not None:
            summed.append(Variable(den, d.denominator.event, d.denominator.value, d.where))
            denominator = den
            ratios.append((num, den))
            labels[den] = d.denominator.text()
        if d.cap is not None:
            caps[num] = d.cap
        metrics[d.name] = OnlineMetric(
            d.name,
            d.kind,
            numerator,
            denominator,
            d.name,
            d.description or d.formula(),
            d.lower_is_better,
        )
    return Catalog(
        metrics={
            **BUILTIN_METRICS,
            **{n: m for n, m in metrics.items() if n not in BUILTIN_METRICS},
        },
        definitions=defs,
        # each metric reads its own variables alone: apart from the others'
        team_variables=VariableSet(
            tuple(summed),
            tuple(indicators),
            apart=(*(v.name for v in summed), *(n for n, _ in indicators)),
            pairs=tuple(ratios),
        ),
        caps=caps,
        labels=labels,
    )


def recorded_definitions(conn: Connection) -> list[TeamMetric]:
    from abeval.store.metric_definitions import load

    return [TeamMetric.from_json(r.name, r.definition) for r in load(conn)]


def read_catalog(conn: Connection) -> Catalog:
    """The store's catalog: the built-in metrics and the team-defined ones it
    records, with the event types they read that no ingested row has yet."""
    from dataclasses import replace

    from abeval.store.metric_definitions import missing_event_types

    definitions = recorded_definitions(conn)
    events = {e for d in definitions for e in d.events()}
    unseen = missing_event_types(conn, sorted(events)) if events else ()
    return replace(catalog(definitions), unseen=frozenset(unseen))


def no_events(name: str, catalog: Catalog) -> str | None:
    """The message of a team metric's report row when an event type it reads has
    no ingested row yet (``metrics add`` records such a metric with a warning)."""
    definition = catalog.definitions.get(name)
    if definition is None:
        return None
    missing = [e for e in definition.events() if e in catalog.unseen]
    return f"no events of type {' or '.join(missing)} yet" if missing else None


def check_names(o: ReportOptions, catalog: Catalog) -> None:
    """Every metric a report's options name is a metric of the store's ``catalog``
    (an :class:`~abeval.errors.OptionError` naming the option if not); a cap names
    a built-in metric that can be capped, or a recorded mean or ratio."""
    check_known(o.primary, "primary", catalog)
    check_known(o.guardrails, "guardrails", catalog)
    check_known(o.secondary or (), "secondary", catalog)
    check_known([name for name, _ in o.caps], "cap", catalog)
    check_cappable(o.caps, catalog)
