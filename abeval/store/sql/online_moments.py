"""Per-arm moments of the per-user variables: the query every online
comparison reads (:func:`arm_moments_sql`), with the columns and rows shared by
the per-segment query (:mod:`abeval.store.sql.online_segments`).

Per arm it returns n, the sum of each variable (post-exposure and pre-period),
its centred sum of squares and the centred cross-products ``(n − 1)·covar_samp``
of the pairs :func:`cross_pairs` names (those the metrics read), from the engine's
numerically stable ``VAR_SAMP``/``COVAR_SAMP``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any

from abeval.store.sql.online_pass import Caps, online_ctes, user_metrics_cte
from abeval.store.sql.online_variables import BUILTIN, Moments, VariableSet, as_float
from abeval.store.sql.parts import With
from abeval.store.sql.population import Window

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


Pairs = Sequence[tuple[str, str]]


def cross_pairs(variables: VariableSet, pre: bool = True) -> list[tuple[str, str]]:
    """The pairs of variables (with ``pre``, of post-exposure and pre-period ones)
    whose cross-products the metrics read, each in the order of
    ``variables.all_names``: every two variables not ``apart``; a variable apart
    with its own pre-period copy; and the two of each of ``pairs`` (numerator and
    denominator of a ratio) with each other and with each other's copies (CUPED
    of a ratio). Linear in the variables apart, which a team's metrics are: each
    metric reads its own variables alone."""
    names = variables.all_names if pre else variables.names
    order = {name: i for i, name in enumerate(names)}
    apart = set(variables.apart)
    own = {f"pre_{v}": v for v in variables.names}
    dense = [n for n in names if own.get(n, n) not in apart]
    wanted = set(combinations(dense, 2))
    for v in variables.apart:
        if pre:
            wanted.add((v, f"pre_{v}"))
    for a, b in variables.pairs:
        wanted.add((a, b))
        if pre:
            pa, pb = f"pre_{a}", f"pre_{b}"
            wanted.update(((pa, pb), (a, pb), (b, pa), (a, pa), (b, pb)))
    oriented = {(a, b) if order[a] < order[b] else (b, a) for a, b in wanted if a != b}
    return sorted(oriented, key=lambda p: (order[p[0]], order[p[1]]))


#: The most per-user variables one statement of moments sums (beside the built-in
#: ones): an engine's planning time grows faster than its columns (DuckDB's: 6 s of
#: 12, uninterruptible, for the daily series of 200 metrics in one statement), so
#: a team's many metrics are summed in statements of this many variables each.
GROUP_SIZE = 32


def groups(variables: VariableSet, size: int = GROUP_SIZE) -> list[VariableSet]:
    """``variables`` in parts whose moments need no variable of another (see
    :func:`cross_pairs`): the first holds every variable not ``apart`` (the
    built-in ones and the copies), then each metric's variables (a ratio's two, a
    proportion's count and indicator) stay together, about ``size`` to a part. One
    part, ``variables`` itself, when they fit."""
    if len(variables.apart) <= size:
        return [variables]
    apart = set(variables.apart)
    joined = {n: n for n in variables.names}

    def root(n: str) -> str:
        while joined[n] != n:
            n = joined[n]
        return n

    for a, b in (*variables.pairs, *variables.indicators):
        joined[root(a)] = root(b)
    members: dict[str, list[str]] = {}
    for n in variables.names:
        if n in apart:
            members.setdefault(root(n), []).append(n)
    chosen: list[set[str]] = [{n for n in variables.names if n not in apart}]
    filled = 0
    for names in members.values():
        if filled + len(names) > size and filled:
            chosen.append(set())
            filled = 0
        chosen[-1].update(names)
        filled += len(names)
    return [_subset(variables, names) for names in chosen if names]


def _subset(variables: VariableSet, names: set[str]) -> VariableSet:
    return VariableSet(
        tuple(v for v in variables.summed if v.name in names),
        tuple(i for i in variables.indicators if i[0] in names),
        tuple(c for c in variables.copies if c[0] in names),
        tuple(n for n in variables.apart if n in names),
        tuple(p for p in variables.pairs if p[0] in names),
    )


def merged(parts: Sequence[Moments]) -> Moments:
    """The moments of one arm (segment, day) read in parts of its variables."""
    sums: dict[str, float] = {}
    cross: dict[tuple[str, str], float] = {}
    for m in parts:
        sums.update(m.sums)
        cross.update(m.cross)
    return Moments(n=parts[0].n, sums=sums, cross=cross)


def moment_columns(
    variables: tuple[str, ...], series: str = "", pairs: Pairs | None = None
) -> list[str]:
    """n and, per variable (column ``series`` + name), its sum and variance, and
    the covariance of each of ``pairs`` (default: every two), named after ``series``."""
    cols = [f"COUNT(*) AS {series}n"]
    cols += [f"SUM(CAST({series}{v} AS DOUBLE PRECISION)) AS {series}s_{v}" for v in variables]
    cols += [f"VAR_SAMP(CAST({series}{v} AS DOUBLE PRECISION)) AS {series}v_{v}" for v in variables]
    cols += [
        f"COVAR_SAMP(CAST({series}{a} AS DOUBLE PRECISION), "
        f"CAST({series}{b} AS DOUBLE PRECISION)) AS {series}c_{a}__{b}"
        for a, b in (combinations(variables, 2) if pairs is None else pairs)
    ]
    return cols


def moments_from_row(
    row: Any, variables: tuple[str, ...], series: str = "", pairs: Pairs | None = None
) -> Moments:
    """The moments of one row of :func:`moment_columns` (the same ``pairs``)."""
    m = row._mapping
    n = int(m[f"{series}n"])
    sums = {v: as_float(m[f"{series}s_{v}"]) for v in variables}
    cross: dict[tuple[str, str], float] = {}
    for v in variables:
        cross[(v, v)] = as_float(m[f"{series}v_{v}"]) * (n - 1) if n > 1 else 0.0
    for a, b in combinations(variables, 2) if pairs is None else pairs:
        cross[(a, b)] = as_float(m[f"{series}c_{a}__{b}"]) * (n - 1) if n > 1 else 0.0
    return Moments(n=n, sums=sums, cross=cross)


def arm_moments_sql(
    cuped_days: int,
    base: With | None = None,
    caps: Caps | None = None,
    window: Window | None = None,
    variables: VariableSet = BUILTIN,
) -> str:
    """The per-arm moments query; ``base`` replaces
    :func:`~abeval.store.sql.online_pass.online_ctes` (see
    :func:`~abeval.store.sql.online_pass.shared`)."""
    ctes = (base or online_ctes(cuped_days, window, variables)).then(
        *user_metrics_cte(caps=caps, variables=variables)
    )
    columns = moment_columns(variables.all_names, "", cross_pairs(variables))
    return ctes.sql(f"SELECT arm, {', '.join(columns)} FROM user_metrics GROUP BY arm ORDER BY arm")


def arm_moments(
    conn: Connection,
    experiment: str,
    cuped_days: int,
    base: With | None = None,
    caps: Caps | None = None,
    variables: VariableSet = BUILTIN,
) -> dict[str, Moments]:
    """Per arm: the moments of every per-user variable (post and pre-period), the
    post-exposure variables capped at ``caps``; one statement per part of the
    variables (:func:`groups`)."""
    from sqlalchemy import text

    read: dict[str, list[Moments]] = {}
    for part in groups(variables):
        sql = arm_moments_sql(cuped_days, base, caps, variables=part)
        rows = conn.execute(text(sql), {"experiment": experiment})
        pairs = cross_pairs(part)
        for r in rows:
            read.setdefault(str(r.arm), []).append(moments_from_row(r, part.all_names, "", pairs))
    return {arm: merged(parts) for arm, parts in read.items()}
