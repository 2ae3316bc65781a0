"""The SQL kernel of the beyond-accuracy metrics: one value per group over top K.

Each metric module gives its rows ``grp, value, counted, left_out, n, s, ss,
extra`` as SQL (see :class:`~abeval.metrics.base.MetricDefinition`): the metrics
of exposure as parts of one aggregate by group, diversity at every cutoff from
one relation, serendipity as its own SELECT. This module puts them in one
statement, so one round trip computes them all, each relation read once for all
the specs it serves, and turns the rows into
:class:`~abeval.metrics.results.OfflineMetricResult`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from abeval.metrics.base import DOUBLE, BeyondInputs, GroupRows
from abeval.metrics.results import OfflineMetricResult
from abeval.metrics.spec import MetricSpec
from abeval.stats.sufficient import MeanStats

_EXTRA = {
    "coverage": "catalogue_items",
    "gini": "slots",
    "entropy": "distinct_items",
    "novelty": "slots",
}


@dataclass(frozen=True)
class BeyondQuery:
    specs: tuple[MetricSpec, ...]
    ctes: str
    select: str

    def sql(self, prefix_ctes: str = "") -> str:
        """The full statement; ``prefix_ctes`` are the caller's CTEs that define the inputs."""
        ctes = ",\n".join(c for c in (prefix_ctes, self.ctes) if c)
        return (f"WITH {ctes}\n" if ctes else "") + self.select

    def results(
        self,
        rows: Sequence[Mapping[str, Any]],
        groups: Mapping[str, tuple[int, int]],
        *,
        extra_convention: Mapping[str, str] | None = None,
    ) -> list[OfflineMetricResult]:
        """Results per metric per group; ``groups`` maps each group to (users, lists)."""
        by_key = {(int(r["metric_index"]), str(r["grp"])): r for r in rows}
        out: list[OfflineMetricResult] = []
        for grp in sorted(groups):
            users, lists = groups[grp]
            for i, spec in enumerate(self.specs):
                d = spec.definition
                convention = dict(spec.convention)
                convention["cutoff"] = str(spec.k)
                convention.update(extra_convention or {})
                row = by_key.get((i, grp))
                counts: dict[str, int] = {}
                left_out: dict[str, int] = {}
                value: float | None = None
                stats: MeanStats | None = None
                if row is not None:
                    counts[d.counted] = int(row["counted"] or 0)
                    if d.name in _EXTRA:
                        counts[_EXTRA[d.name]] = int(row["extra"] or 0)
                    if d.left_out_reason:
                        left_out[d.left_out_reason] = int(row["left_out"] or 0)
                    value = None if row["value"] is None else float(row["value"])
                    if d.per_user:
                        stats = MeanStats(
                            int(row["n"] or 0), float(row["s"] or 0), float(row["ss"] or 0)
                        )
                n_users = stats.n if stats is not None else users
                status, message = "ok", ""
                if value is None:
                    status, message = "undefined", _undefined_message(d.name)
                out.append(
                    OfflineMetricResult(
                        metric=spec.label,
                        group=grp,
                        value=value,
                        stats=stats,
                        users=n_users,
                        lists=lists,
                        left_out=left_out,
                        counts=counts,
                        convention=convention,
                        status=status,
                        message=message,
                    )
                )
        return out


def _undefined_message(name: str) -> str:
    return {
        "coverage": "the catalogue is empty",
        "gini": "no catalogue item is shown",
        "novelty": "no list has an item in the top K",
        "diversity": "no list has two items in the top K",
        "serendipity": "no relevant shown item belongs to a user with history",
    }.get(name, "nothing to measure")


def _exposure(specs: Sequence[tuple[int, MetricSpec]], inp: BeyondInputs) -> GroupRows:
    """The metrics of exposure in ``specs`` (index, spec) from ``bx_grp``, one row per
    group: one grouping of ``ranked``'s top max(K) by group and item, every cutoff a
    column (``exposure``, with the catalogue and the popularity joined once per item
    and the windows a metric reads), then one aggregate of it by group holding every
    metric at every cutoff."""
    ks = sorted({int(s.k or 0) for _, s in specs})
    needs = {c for _, s in specs for c in s.definition.exposure_needs}
    k_needs = {(c, int(s.k or 0)) for _, s in specs for c in s.definition.exposure_needs}
    slots = ", ".join(f"COUNT(CASE WHEN rank <= {k} THEN 1 END) AS slots_{k}" for k in ks)
    cols = ["t.grp", "t.item_id", *(f"t.slots_{k}" for k in ks)]
    joins = ""
    if "inside" in needs or "order" in needs:
        cols.append("CASE WHEN c.item_id IS NULL THEN 0 ELSE 1 END AS inside")
        joins += f" LEFT JOIN {inp.catalogue} c ON c.item_id = t.item_id"
    if "share" in needs:
        cols.append("p.share")
        joins += f" LEFT JOIN {inp.popularity} p ON p.item_id = t.item_id"
    ctes = [
        f"{inp.exposure}_slots AS (SELECT grp, item_id, {slots} FROM {inp.ranked} "
        f"WHERE rank <= {max(ks)} GROUP BY grp, item_id)",
        f"{inp.exposure}_items AS (SELECT {', '.join(cols)} FROM {inp.exposure}_slots t{joins})",
    ]
    windows = [
        *(
            f"ROW_NUMBER() OVER (PARTITION BY grp ORDER BY inside, slots_{k}, item_id) AS order_{k}"
            for k in ks
            if ("order", k) in k_needs
        ),
        *(
            f"SUM(slots_{k}) OVER (PARTITION BY grp) AS total_{k}"
            for k in ks
            if ("total", k) in k_needs
        ),
    ]
    ctes.append(
        f"{inp.exposure} AS (SELECT *{''.join(f', {w}' for w in windows)} "
        f"FROM {inp.exposure}_items)"
    )
    sums = [f"COUNT(CASE WHEN slots_{k} > 0 THEN 1 END) AS shown_{k}" for k in ks]
    rows = []
    for i, spec in specs:
        assert spec.definition.exposure_sql is not None
        got = spec.definition.exposure_sql(spec, inp, f"b{i}")
        sums += got.sums
        rows.append(replace(got.row, present=f"shown_{int(spec.k or 0)} > 0"))
    ctes.append(f"bx_grp AS (SELECT grp, {', '.join(sums)} FROM {inp.exposure} GROUP BY grp)")
    relation = "bx_grp"
    if "catalogue_items" in needs:
        ctes.append(f"bx_catalogue AS (SELECT COUNT(*) AS catalogue_items FROM {inp.catalogue})")
        relation = "bx_grp CROSS JOIN bx_catalogue"
    return GroupRows(ctes=tuple(ctes), relation=relation, rows=tuple(rows))


def _branch(indices: Sequence[int], found: GroupRows) -> str:
    """One SELECT of every row of ``found`` (the specs at ``indices``): its relation
    crossed with the specs' indices, so that an engine that does not keep a CTE
    (Spark) computes the relation once for all of them."""
    which = " UNION ALL ".join(f"SELECT {i} AS metric_index" for i in indices)

    def pick(field: str, sql_type: str) -> str:
        whens = " ".join(
            f"WHEN {i} THEN {getattr(row, field)}"
            for i, row in zip(indices, found.rows, strict=True)
        )
        return f"CAST(CASE m.metric_index {whens} END AS {sql_type})"

    present = " ".join(
        f"WHEN {i} THEN {row.present}" for i, row in zip(indices, found.rows, strict=True)
    )
    return (
        f"SELECT m.metric_index, grp, {pick('value', DOUBLE)} AS value, "
        f"{pick('counted', 'BIGINT')} AS counted, {pick('left_out', 'BIGINT')} AS left_out, "
        f"{pick('n', 'BIGINT')} AS n, {pick('s', DOUBLE)} AS s, {pick('ss', DOUBLE)} AS ss, "
        f"{pick('extra', 'BIGINT')} AS extra FROM {found.relation} CROSS JOIN ({which}) m "
        f"WHERE CASE m.metric_index {present} END"
    )


def beyond_query(specs: Sequence[MetricSpec], inputs: BeyondInputs) -> BeyondQuery:
    """Build one statement computing every beyond-accuracy metric in ``specs``: the
    metrics of exposure at every cutoff from one aggregate (``exposure_sql``), each
    metric with ``shared_group_sql`` at every cutoff from its own shared CTEs
    (diversity's lists are read once for all its cutoffs), the others by
    ``group_sql``; the parts joined with ``UNION ALL``."""
    exposed: list[tuple[int, MetricSpec]] = []
    shared: dict[str, list[int]] = {}
    alone: list[int] = []
    for i, spec in enumerate(specs):
        d = spec.definition
        if d.kind != "beyond":
            raise ValueError(f"{spec.label} is not a beyond-accuracy metric")
        if d.exposure_sql is not None:
            exposed.append((i, spec))
        elif d.shared_group_sql is not None:
            shared.setdefault(d.name, []).append(i)
        elif d.group_sql is not None:
            alone.append(i)
        else:
            raise ValueError(f"{spec.label} has no SQL")
    ctes: list[str] = []
    parts: list[str] = []
    if exposed:
        found = _exposure(exposed, replace(inputs, exposure="bx_exposure"))
        ctes += found.ctes
        parts.append(_branch([i for i, _ in exposed], found))
    for indices in shared.values():
        make = specs[indices[0]].definition.shared_group_sql
        assert make is not None
        found = make([specs[i] for i in indices], inputs, f"b{indices[0]}")
        ctes += found.ctes
        parts.append(_branch(indices, found))
    for i in alone:
        make_one = specs[i].definition.group_sql
        assert make_one is not None
        more, select = make_one(specs[i], inputs, f"b{i}")
        ctes += more
        parts.append(f"SELECT {i} AS metric_index, q{i}.* FROM ({select}) q{i}")
    return BeyondQuery(
        specs=tuple(specs), ctes=",\n".join(ctes), select="\nUNION ALL\n".join(parts)
    )
