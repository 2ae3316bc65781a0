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


class UnreadableDefinition(ValueError):
    """A recorded definition this abeval cannot read; the message says why."""


#: The fields of a recorded definition (:meth:`TeamMetric.to_json`).
_FIELDS = ("kind", "numerator", "denominator", "where", "lower_is_better", "cap", "description")


@dataclass(frozen=True)
class EventSum:
    """Per user: the number of events of ``event`` (or, ``value``: the sum of
    their values)."""

    event: str
    value: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"event": self.event, "value": self.value}

    @classmethod
    def from_json(cls, side: str, d: Any) -> EventSum:
        """One side of a recorded definition (an :class:`UnreadableDefinition` if not one)."""
        if (
            not isinstance(d, Mapping)
            or set(d) - {"event", "value"}
            or not isinstance(d.get("event"), str)
            or not d.get("event")
            or not isinstance(d.get("value", False), bool)
        ):
            raise UnreadableDefinition(
                f"{side} {d!r} is not an event type with value true or false"
            )
        return cls(d["event"], d.get("value", False))

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
        """The metric a recorded definition describes; an :class:`UnreadableDefinition`
        saying what is wrong when it is not one this abeval writes (edited by hand,
        written by a newer abeval, a field of the wrong type)."""
        if not isinstance(d, Mapping):
            shown = repr(d if len(repr(d)) <= 60 else f"{str(d)[:57]}...")
            raise UnreadableDefinition(f"the stored definition {shown} is not a JSON object")
        extra = sorted(set(d) - set(_FIELDS))
        if extra:
            raise UnreadableDefinition(
                f"field {extra[0]!r} is not one this abeval reads (written by a newer abeval?)"
            )
        kind = d.get("kind")
        if kind not in KINDS:
            raise UnreadableDefinition(f"kind {kind!r} is not proportion, mean or ratio")
        den = d.get("denominator")
        if (kind == "ratio") != (den is not None):
            raise UnreadableDefinition(
                "a ratio needs a denominator" if kind == "ratio" else f"a {kind} has no denominator"
            )
        where = d.get("where")
        where = {} if where is None else where
        if not isinstance(where, Mapping) or not all(
            isinstance(v, str | int) and not isinstance(v, bool) for v in where.values()
        ):
            raise UnreadableDefinition(f"where {where!r} is not attributes mapped to text")
        cap = d.get("cap")
        if cap is not None and (
            kind == "proportion"
            or isinstance(cap, bool)
            or not isinstance(cap, int | float)
            or not 0 < cap < 1
        ):
            raise UnreadableDefinition(
                f"cap {cap!r} is not a quantile between 0 and 1 of a mean or ratio"
            )
        for key, want in (("lower_is_better", bool), ("description", str)):
            if d.get(key) is not None and not isinstance(d.get(key), want):
                raise UnreadableDefinition(f"{key} {d.get(key)!r} is not {want.__name__}")
        return cls(
            name=name,
            kind=kind,
            numerator=EventSum.from_json("numerator", d.get("numerator")),
            denominator=EventSum.from_json("denominator", den) if den is not None else None,
            where=tuple(sorted((str(k), str(v)) for k, v in where.items())),
            lower_is_better=bool(d.get("lower_is_better", False)),
            cap=float(cap) if cap is not None else None,
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


def catalog(definitions: Iterable[TeamMetric], failed: Mapping[str, str] | None = None) -> Catalog:
    """The catalog of a store that recorded ``definitions``: the built-in metrics,
    then these by name (a name of a built-in is left out: ``abeval metrics add``
    refuses it). Variables ``t<i>_n`` (numerator), ``t<i>_d`` (denominator) and ``t<i>_p``
    (the 0/1 indicator of a proportion) for the i-th metric by name: short names,
    so that the moments' column labels stay within PostgreSQL's 63 characters.
    A metric ``failed`` names (name → reason) is in the catalog with a variable that
    counts nothing, ``f<i>_n``, so that every part of a result has its row, which
    says the reason."""
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
    for j, (name, why) in enumerate(sorted((failed or {}).items())):
        summed.append(Variable(f"f{j}_n", ""))
        metrics[name] = OnlineMetric(name, "mean", f"f{j}_n", None, name, why)
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
        failed=dict(failed or {}),
    )


def recorded_definitions(conn: Connection) -> list[TeamMetric]:
    return recorded_metrics(conn)[0]


def recorded_metrics(conn: Connection) -> tuple[list[TeamMetric], dict[str, str]]:
    """The recorded metrics this abeval can read, and the reason of each it cannot
    (name → reason with the fix: :func:`unreadable`)."""
    from abeval.store.metric_definitions import load

    metrics, failed = [], {}
    for r in load(conn):
        try:
            metrics.append(TeamMetric.from_json(r.name, r.definition))
        except UnreadableDefinition as exc:
            failed[r.name] = unreadable(r.name, str(exc))
    return metrics, failed


def unreadable(name: str, why: str) -> str:
    """A failed team metric's reason in one sentence, with the fix."""
    return (
        f"its recorded definition cannot be read: {why}; remove it with "
        f"`abeval metrics remove {name}` or record it again with `abeval metrics add FILE`"
    )


def read_catalog(conn: Connection) -> Catalog:
    """The store's catalog: the built-in metrics and the team-defined ones it
    records, with the event types they read that no ingested row has yet, and
    those whose definition cannot be read (their rows say why)."""
    from dataclasses import replace

    from abeval.store.metric_definitions import missing_event_types

    definitions, failed = recorded_metrics(conn)
    events = {e for d in definitions for e in d.events()}
    unseen = missing_event_types(conn, sorted(events)) if events else ()
    return replace(catalog(definitions, failed), unseen=frozenset(unseen))


def without(catalog_: Catalog, failed: Mapping[str, str]) -> Catalog:
    """``catalog_`` with the team metrics ``failed`` names (name → reason) failed:
    none of their variables is computed and their rows say the reason."""
    from dataclasses import replace

    kept = [d for n, d in catalog_.definitions.items() if n not in failed]
    return replace(catalog(kept, {**catalog_.failed, **failed}), unseen=catalog_.unseen)


def refused_metrics(conn: Connection, catalog_: Catalog) -> dict[str, str]:
    """The team metrics of ``catalog_`` whose filters the engine refuses on the
    store's events (name → reason): each metric's conditions counted over the
    events alone, one statement each (read after a report's pass failed)."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    from abeval.store.backends import backend_of

    refused = {}
    variables = catalog_.team_variables.keyed_for(backend_of(conn)).summed
    for i, name in enumerate(catalog_.definitions):
        conditions = [v.condition() for v in variables if v.name in (f"t{i}_n", f"t{i}_d")]
        where = " OR ".join(f"({c})" for c in conditions) or "FALSE"
        try:
            conn.execute(text(f"SELECT COUNT(*) FROM events e WHERE {where}")).fetchall()
        except DBAPIError as exc:
            conn.rollback()
            why = str(exc.orig or exc).strip().splitlines()[0][:300]
            refused[name] = (
                f"the store refused its filter on the events ({why}); check the events' "
                f"attributes, or remove it with `abeval metrics remove {name}`"
            )
    return refused


def failed_reason(name: str, catalog: Catalog) -> str | None:
    """Why the team metric ``name`` failed (None when it did not)."""
    return catalog.failed.get(name)


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
