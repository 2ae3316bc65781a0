"""The per-user variables the online metrics sum, and the moments returned per arm.

A :class:`Variable` is a count (or a sum of ``value``) of one event type over a
user's events, optionally filtered on attributes; a :class:`VariableSet` is the
report's variables: :data:`BUILTIN` (impressions, clicks, purchases, revenue,
converted) plus those of a team's recorded metrics and the copies a cap makes.
:class:`Moments` is all that leaves the engine per arm (and day or segment):
n, the sum of every variable and the centred cross-products of every pair.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from abeval.store.quoting import quote_literal

if TYPE_CHECKING:
    from abeval.store.backends.base import Backend


@dataclass(frozen=True)
class Variable:
    """A per-user variable summed over the user's events: those of ``event_type``
    whose attributes equal ``where`` (attribute name → text), each adding 1 (a
    count) or its ``value`` (``value=True``: missing values add 0)."""

    name: str
    event_type: str
    value: bool = False
    where: tuple[tuple[str, str], ...] = ()

    def amount(self) -> str:
        return "COALESCE(e.value, 0)" if self.value else "1"

    def condition(self) -> str:
        parts = [f"e.event_type = {quote_literal(self.event_type)}"]
        parts += [f"CAST(e.attributes AS JSON) ->> {_text(k)} = {_text(v)}" for k, v in self.where]
        return " AND ".join(parts)


def _text(value: str) -> str:
    """``value`` as an SQL expression of text: a literal, with each ``:`` written
    ``chr(58)`` (a ``:name`` inside a literal is a bind parameter to SQLAlchemy's
    ``text()``, which the statements go through)."""
    if ":" not in value:
        return quote_literal(value)
    return "(" + " || chr(58) || ".join(quote_literal(p) for p in value.split(":")) + ")"


@dataclass(frozen=True)
class VariableSet:
    """The per-user variables a report sums: summed ones (:class:`Variable`),
    copies (name, summed variable: the same per-user values under a name of their
    own, which a cap on one metric caps alone, docs/metrics.md#outlier-capping) and
    indicators (name, summed variable: 1 when it is above 0). The built-in metrics
    read :data:`BUILTIN`; a team's recorded metrics add theirs
    (docs/metrics.md#team-defined-metrics).

    The moments pair every two variables except those ``apart`` (a team's: one
    metric's each), which pair only with their own pre-period copy and as ``pairs``
    say (a ratio's numerator and denominator), so that the moments grow linearly
    with a team's metrics (:func:`~abeval.store.sql.online_moments.cross_pairs`)."""

    summed: tuple[Variable, ...]
    indicators: tuple[tuple[str, str], ...]
    copies: tuple[tuple[str, str], ...] = ()
    apart: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()

    @property
    def columns(self) -> tuple[tuple[str, str], ...]:
        """(name, column of ``user_day`` it sums): the summed variables and the copies."""
        return (*((v.name, v.name) for v in self.summed), *self.copies)

    @property
    def names(self) -> tuple[str, ...]:
        return (*(n for n, _ in self.columns), *(n for n, _ in self.indicators))

    @property
    def all_names(self) -> tuple[str, ...]:
        return (*self.names, *(f"pre_{v}" for v in self.names))

    def plus(self, other: VariableSet) -> VariableSet:
        return VariableSet(
            self.summed + other.summed,
            self.indicators + other.indicators,
            self.copies + other.copies,
            self.apart + other.apart,
            self.pairs + other.pairs,
        )

    def keyed_for(self, backend: Backend) -> VariableSet:
        """These variables with their attribute names written as the engine's
        ``->>`` reads them as names (:meth:`Backend.json_key
        <abeval.store.backends.base.Backend.json_key>`)."""
        summed = tuple(
            replace(v, where=tuple((backend.json_key(k), x) for k, x in v.where))
            for v in self.summed
        )
        return replace(self, summed=summed)


BUILTIN = VariableSet(
    summed=(
        Variable("impressions", "impression"),
        Variable("clicks", "click"),
        Variable("purchases", "purchase"),
        Variable("revenue", "purchase", value=True),
    ),
    indicators=(("converted", "purchases"),),
)

POST_VARIABLES = tuple(v.name for v in BUILTIN.summed)

VARIABLES = BUILTIN.names

PRE_VARIABLES = tuple(f"pre_{v}" for v in VARIABLES)

ALL_VARIABLES = BUILTIN.all_names


@dataclass(frozen=True)
class Moments:
    """n users, Σ of each variable, and centred cross-products Σ(a − ā)(b − b̄)."""

    n: int
    sums: dict[str, float]
    cross: dict[tuple[str, str], float]

    def ss(self, a: str) -> float:
        return self.cross.get((a, a), 0.0)

    def cp(self, a: str, b: str) -> float:
        if (a, b) in self.cross:
            return self.cross[(a, b)]
        return self.cross.get((b, a), 0.0)


def as_float(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, Decimal):
        return float(value)
    return float(value)
