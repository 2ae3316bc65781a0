"""Runs the off-policy estimates' SQL (:mod:`abeval.store.sql.ope_parts`) on one
experiment and returns sums that add over users: per arm the impressions and
the observed CTR's sums (:class:`ArmCounts`), per direction the per-user sums,
the weights per position and the step estimators' support (:class:`DirectionSums`).

Passes over the events: the arm counts (:meth:`OpeSource.arm_counts`: impressions,
clicked ones and the varying-propensity check of every arm) are one statement of
their own; the impressions the directions read (``o_imp``: integer keys, no text
but the user's id) are kept as a table only when a direction is estimated, and a
target file's rows get their integer keys once (``o_file``), looked up in the
events for the requests and items the file names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from abeval.store.shared_ctes import drop, materialize
from abeval.store.sql.ope_cascade import (
    CASCADE_PARTS,
    DR_PARTS,
    FOLDS,
    SMOOTH,
    group_of,
    step_user_columns,
)
from abeval.store.sql.ope_parts import (
    CLICKED,
    COUNT_PARTS,
    EMPIRICAL_PI,
    FILE_PI,
    FILE_ROWS,
    FILE_TABLE,
    IMPRESSIONS,
    TOP_VARIABLES,
    USER_VARIABLES,
    user_part,
    weight_parts,
)
from abeval.store.sql.parts import Cte, With
from abeval.store.sql.population import given_population, population_parts

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


_NONE: Mapping[str, tuple[str, str, str]] = MappingProxyType({})


def _pairs(v: Sequence[str]) -> list[tuple[str, str]]:
    return [(v[i], v[j]) for i in range(len(v)) for j in range(i, len(v))]


@dataclass(frozen=True)
class UserSums:
    """Per-arm sums over users of the per-user variables and of their pairwise
    products: they add over shards of users."""

    users: int
    sums: dict[str, float]
    products: dict[tuple[str, str], float]


@dataclass(frozen=True)
class PositionSums:
    """Weights of the source's impressions at one position (``None`` = all)."""

    position: int | None
    impressions: int
    sum_w: float
    sum_w2: float
    max_w: float | None
    capped: int
    target_mass: float
    unseen_mass: float


@dataclass(frozen=True)
class ArmCounts:
    """One arm's impressions (with and without a propensity) and the per-user
    sums of impressions ``n`` and clicked impressions ``c`` over all of them."""

    arm: str
    impressions: int
    with_propensity: int
    observed: UserSums
    #: The (item, position) pairs it logged with a propensity, and of them those
    #: logged with different propensities on different requests (beyond
    #: :data:`PROPENSITY_TOLERANCE`): a personalised logging policy.
    logged_pairs: int = 0
    varying_pairs: int = 0


@dataclass(frozen=True)
class StepSupport:
    """Whether the step estimators can be formed: source impressions with a
    propensity, how many of them carry ``propensity_given_above``, the target's
    file rows with ``probability_given_above``; and, once computed, the
    ``snrips`` groups and the (request, position) pairs whose candidates'
    step probabilities sum below 1 (Cascade-DR's direct term is short there)."""

    impressions: int
    with_given_above: int
    target_given_above: int
    groups: tuple[int, ...] = ()
    short_pairs: int = 0

    @property
    def ok(self) -> bool:
        return 0 < self.impressions == self.with_given_above and self.target_given_above > 0


@dataclass(frozen=True)
class DirectionSums:
    """What the store returns for one direction (source logs → target)."""

    source: str
    target: str
    from_file: bool
    user: UserSums
    positions: tuple[PositionSums, ...]
    steps: StepSupport | None = None
    #: Per weighted-click variable, its sum over the 1% of users with the
    #: largest sums of the matching weights (:data:`~abeval.store.sql.ope_parts.TOP_VARIABLES`).
    top: dict[str, float] = field(default_factory=dict)


class OpeSource:
    """Runs the OPE queries of one experiment: the arm counts in one pass over the
    events; the directions over the impressions, kept as a table the first time one
    is estimated, and the target file's rows on the integer keys, kept the first
    time one reads them. :func:`close_ope` drops what it kept."""

    def __init__(self, conn: Connection, experiment: str, ctes: With, tables: list[str]) -> None:
        self.conn = conn
        self.experiment = experiment
        #: The parts the queries start from (the population and the clicked pairs,
        #: then what :meth:`keep` added), as kept tables or parts.
        self.ctes = ctes
        #: The tables kept so far, for :func:`close_ope`.
        self.tables = tables

    def rows(self, parts: Sequence[Cte], select: str, **params: Any) -> Sequence[Any]:
        """``select`` after the shared parts and ``parts``, ``:experiment`` bound."""
        return self._run(self.ctes.then(*parts), select, params)

    def keep(self, parts: Sequence[Cte]) -> None:
        """Add ``parts`` to the shared ones, the last kept as a table; nothing when
        it is there already."""
        name = parts[-1].name
        if name in self.ctes.names:
            return
        params = self._params()
        self.ctes, kept = materialize(self.conn, self.ctes.then(*parts), (name,), params, _PREFIX)
        self.tables += kept

    def _params(self, **params: Any) -> dict[str, Any]:
        return {"experiment": self.experiment, **params}

    def _run(self, ctes: With, select: str, params: dict[str, Any]) -> Sequence[Any]:
        from sqlalchemy import text

        return self.conn.execute(text(ctes.sql(select)), self._params(**params)).fetchall()

    def arm_counts(self) -> dict[str, ArmCounts]:
        """Impressions per arm, those with a propensity, and the observed CTR's sums."""
        rows = self._run(
            self.ctes.then(*COUNT_PARTS),
            "SELECT a.arm, a.users, a.n, a.np, a.c, a.nn, a.nc, a.cc, v.pairs, v.varying "
            "FROM o_arm a LEFT JOIN o_varying v ON v.arm = a.arm ORDER BY a.arm",
            {"tol": PROPENSITY_TOLERANCE},
        )
        out = {}
        for arm, users, n, np_, c, nn, nc, cc, logged, varies in rows:
            observed = UserSums(
                users=int(users),
                sums={"n": float(n), "c": float(c)},
                products={("n", "n"): float(nn), ("n", "c"): float(nc), ("c", "c"): float(cc)},
            )
            out[str(arm)] = ArmCounts(
                str(arm), int(n), int(np_), observed, int(logged or 0), int(varies or 0)
            )
        return out

    def direction(
        self,
        source: str,
        target: str,
        cap: float,
        from_file: bool,
        products_of_three: Mapping[str, tuple[str, str, str]] = _NONE,
    ) -> DirectionSums:
        """The per-arm user sums and the per-position weight sums of one direction;
        with the step estimators' sums when the logs and the target carry step
        probabilities (:class:`StepSupport`), and, under its name, Σ_u x_u·y_u·z_u
        of each of ``products_of_three`` whose variables the logs have."""
        self.keep((IMPRESSIONS,))
        if from_file:
            self.keep(FILE_ROWS)
        pi = FILE_PI if from_file else EMPIRICAL_PI
        base = (pi, *weight_parts(from_file))
        params = {
            "source": source,
            "target": target,
            "cap": float(cap),
            "folds": FOLDS,
            "smooth": SMOOTH,
        }
        steps = self._step_support(base, params) if from_file else None
        names = list(USER_VARIABLES)
        if steps is not None and steps.ok:
            groups = tuple(
                int(g)
                for (g,) in self.rows(
                    base, f"SELECT DISTINCT {group_of()} FROM o_src ORDER BY 1", **params
                )
            )
            ctes = (*base, *CASCADE_PARTS, *DR_PARTS, user_part(groups))
            names += [name for name, _ in step_user_columns(groups)]
        else:
            ctes = (*base, user_part(None))
        pairs = _pairs(names)
        ranked = [(w, wc) for w, wc in TOP_VARIABLES if w in names]
        # Σ x_u·y_u·z_u of the asked products of three variables the logs have.
        threes = [(k, t) for k, t in sorted(products_of_three.items()) if set(t) <= set(names)]
        select = ", ".join(
            ["COUNT(*)"]
            + [f"SUM({v})" for v in names]
            + [f"SUM({a} * {b})" for a, b in pairs]
            # The top 1% of users by w: rank k with 100·k <= m + 99, i.e. k <= ceil(m / 100).
            + [f"SUM(CASE WHEN 100 * t_{w} <= t_m + 99 THEN {wc} ELSE 0 END)" for w, wc in ranked]
            # Σ w_u³ of each weight, for the skewness of the weights over users.
            + [f"SUM({w} * {w} * {w})" for w, _ in ranked]
            + [f"SUM({x} * {y} * {z})" for _, (x, y, z) in threes]
            # Cascade-DR's (request, position) pairs short of candidates, in the same pass.
            + (["SUM(short)"] if "dr" in names else [])
        )
        windows = ", ".join(
            ["COUNT(*) OVER () AS t_m"]
            + [f"ROW_NUMBER() OVER (ORDER BY {w} DESC) AS t_{w}" for w, _ in ranked]
        )
        row = self.rows(
            ctes, f"SELECT {select} FROM (SELECT o_user.*, {windows} FROM o_user) u", **params
        )[0]
        users = int(row[0])
        values = [float(x) if x is not None else 0.0 for x in row[1:]]
        nv, npairs = len(names), len(pairs)
        user = UserSums(
            users=users,
            sums=dict(zip(names, values[:nv], strict=True)),
            products=dict(zip(pairs, values[nv : nv + npairs], strict=True)),
        )
        end = nv + npairs + len(ranked)
        top = dict(zip((wc for _, wc in ranked), values[nv + npairs : end], strict=True))
        cubes = values[end : end + len(ranked)]
        # Named as abeval.stats.ope.cube names them ("w^3": Σ_u w_u³).
        user.sums.update({f"{w}^3": v for (w, _), v in zip(ranked, cubes, strict=True)})
        end += len(ranked)
        thrice = values[end : end + len(threes)]
        user.sums.update({k: v for (k, _), v in zip(threes, thrice, strict=True)})
        end += len(threes)
        if steps is not None and steps.ok:
            steps = StepSupport(
                steps.impressions,
                steps.with_given_above,
                steps.target_given_above,
                groups,
                int(values[end]),
            )
        positions = self._positions((*base, user_part(None)), params)
        return DirectionSums(source, target, from_file, user, positions, steps, top)

    def _step_support(self, base: Sequence[Cte], params: dict[str, Any]) -> StepSupport:
        n, g = self.rows(base, "SELECT COUNT(*), COUNT(g) FROM o_src", **params)[0]
        (rho,) = self.rows(base, "SELECT COUNT(rho) FROM o_pi", **params)[0]
        return StepSupport(int(n), int(g), int(rho))

    def _positions(self, ctes: Sequence[Cte], params: dict[str, Any]) -> tuple[PositionSums, ...]:
        weights = self.rows(
            ctes,
            "SELECT position, COUNT(*), SUM(w), SUM(w * w), MAX(w), "
            "SUM(CASE WHEN w > :cap THEN 1 ELSE 0 END) FROM o_w GROUP BY position",
            **params,
        )
        deficit = self.rows(
            ctes,
            "SELECT pi.position, SUM(pi.mass), SUM(CASE WHEN sh.item_no IS NULL "
            "THEN pi.mass ELSE CAST(0 AS DOUBLE PRECISION) END) FROM o_pi pi "
            "LEFT JOIN o_shown sh ON sh.item_no = pi.item_no AND sh.position = pi.position "
            "GROUP BY pi.position",
            **params,
        )
        mass = {int(p): (float(t or 0.0), float(u or 0.0)) for p, t, u in deficit}
        out = []
        for position, n, sw, sw2, mw, capped in weights:
            t, u = mass.get(int(position), (0.0, 0.0))
            out.append(
                PositionSums(
                    int(position), int(n), float(sw), float(sw2), float(mw), int(capped), t, u
                )
            )
        seen = {p.position for p in out}
        for position, (t, u) in mass.items():
            if position not in seen:
                out.append(PositionSums(position, 0, 0.0, 0.0, None, 0, t, u))
        return tuple(sorted(out, key=lambda p: p.position or 0))


def file_pairs(conn: Connection, experiment: str) -> set[tuple[str, str]]:
    """The (source arm, target arm) pairs the loaded file has rows for: the source
    is the arm of the row's request."""
    from sqlalchemy import text

    rows = conn.execute(
        text(
            f"SELECT DISTINCT e.arm, f.arm FROM {FILE_TABLE} f JOIN (SELECT DISTINCT request_id, "
            "arm FROM events WHERE experiment = :experiment AND event_type = 'impression') e "
            "ON e.request_id = f.request_id WHERE f.arm IS NOT NULL"
        ),
        {"experiment": experiment},
    ).fetchall()
    return {(str(a), str(b)) for a, b in rows}


def has_propensities(conn: Connection, experiment: str) -> bool:
    """Whether any impression of the experiment carries a propensity."""
    from sqlalchemy import text

    return conn.execute(text(PROPENSITY_PROBE), {"experiment": experiment}).fetchone() is not None


#: Two logged propensities of one (item, position) differ when they differ by
#: more than this share of the larger (a file's decimals, not rounding, decide).
PROPENSITY_TOLERANCE = 1e-9


#: One row when an impression of the experiment carries a propensity, else none.
PROPENSITY_PROBE = (
    "SELECT 1 FROM events WHERE experiment = :experiment AND event_type = 'impression' "
    "AND propensity IS NOT NULL LIMIT 1"
)


_PREFIX = "abeval_ope_"


def open_ope(conn: Connection, experiment: str, population: str | None = None) -> OpeSource:
    """An :class:`OpeSource` over the experiment's population: ``population`` names
    a table already holding it over all the experiment's events (the report's
    online pass without a window), read instead of computed again; else it is
    computed once into a temporary table. :func:`close_ope` drops what it kept."""
    if population is not None:
        return OpeSource(conn, experiment, given_population(population).then(CLICKED), [])
    ctes, tables = materialize(
        conn,
        population_parts().then(CLICKED),
        ("population",),
        {"experiment": experiment},
        _PREFIX,
    )
    return OpeSource(conn, experiment, ctes, tables)


def close_ope(conn: Connection, source: OpeSource) -> None:
    drop(conn, [*source.tables, FILE_TABLE])
