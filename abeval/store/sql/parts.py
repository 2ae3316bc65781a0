"""SQL composed from named parts: common table expressions as objects.

A :class:`Cte` is one common table expression: its name, the ``SELECT`` that
defines it and the names of the other parts it reads. A :class:`With` is an
ordered collection of them that renders itself (``WITH a AS (...), b AS (...)``);
each part reads only parts before it, checked when the collection is made, so a
part can be swapped by name (:meth:`With.replace`) and the parts one of them needs
taken with it (:meth:`With.upto`) without reading any SQL text.

:func:`abeval.store.shared_ctes.materialize` evaluates chosen parts once into
temporary tables through the store's backend (``Backend.materialize`` of
:mod:`abeval.store.backends`; on Spark a cached view,
:mod:`abeval.store.backends.spark.dialect`) and returns the collection with those parts
reading their tables. Queries are composed by
adding parts and rendering; no SQL text is searched or edited, and values stay
bind parameters (``:name``) bound at execution.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass


class PartError(LookupError):
    """A part that is not there, defined twice, or read before it is defined: a
    bug in how abeval composes its SQL, named in the message."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Cte:
    """``name AS (body)``; ``reads``: the names of the parts of the same ``WITH``
    that ``body`` reads (tables of the store are not listed)."""

    name: str
    body: str
    reads: tuple[str, ...] = ()

    def render(self) -> str:
        return f"{self.name} AS ({self.body})"


@dataclass(frozen=True)
class With:
    """Common table expressions in order, each reading only those before it."""

    parts: tuple[Cte, ...] = ()

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for part in self.parts:
            if part.name in seen:
                raise PartError(f"common table expression {part.name!r} is defined twice")
            missing = [r for r in part.reads if r not in seen]
            if missing:
                raise PartError(
                    f"common table expression {part.name!r} reads {', '.join(missing)}, "
                    "which no part before it defines"
                )
            seen.add(part.name)

    def __iter__(self) -> Iterator[Cte]:
        return iter(self.parts)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parts)

    def __getitem__(self, name: str) -> Cte:
        for part in self.parts:
            if part.name == name:
                return part
        have = ", ".join(self.names) or "none"
        raise PartError(f"no common table expression {name!r} here (the parts: {have})")

    def require(self, *names: str) -> None:
        """Nothing when every one of ``names`` is a part here; else :class:`PartError`
        naming the first missing one and the parts there are."""
        for name in names:
            self[name]

    def then(self, *parts: Cte) -> With:
        """These parts followed by ``parts``."""
        return With((*self.parts, *parts))

    def replace(self, part: Cte) -> With:
        """The same parts with the one named ``part.name`` replaced by ``part``."""
        self.require(part.name)
        return With(tuple(part if p.name == part.name else p for p in self.parts))

    def upto(self, name: str) -> With:
        """The part ``name`` and the parts it needs (directly or not), in order."""
        self.require(name)
        needed = {name}
        for part in reversed(self.parts):  # a part reads only parts before it
            if part.name in needed:
                needed.update(part.reads)
        return With(tuple(p for p in self.parts if p.name in needed))

    def reading(self, tables: Mapping[str, str]) -> With:
        """The parts named in ``tables`` (name → table) reading that table instead."""
        out = self
        for name, table in tables.items():
            out = out.replace(Cte(name, f"SELECT * FROM {table}"))
        return out

    def render(self) -> str:
        """The definitions, to follow ``WITH`` (empty when there are none)."""
        return ",\n".join(p.render() for p in self.parts)

    def sql(self, select: str) -> str:
        """The statement ``WITH <the parts> select``."""
        return f"WITH {self.render()}\n{select}" if self.parts else select
