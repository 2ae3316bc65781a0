"""The SQL kernel of the beyond-accuracy metrics: one value per group over top K.

Each metric module gives CTEs and a SELECT of
``grp, value, counted, left_out, n, s, ss, extra`` (see
:class:`~abeval.metrics.base.MetricDefinition`); this module joins them with
``UNION ALL`` into one statement, so one round trip computes them all, and
turns the rows into :class:`~abeval.metrics.results.MetricResult`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from abeval.metrics.base import BeyondInputs
from abeval.metrics.results import MetricResult
from abeval.metrics.spec import MetricSpec
from abeval.stats.sufficient import MeanStats

#: The metrics of exposure, which read ``exposure``
#: (:class:`~abeval.metrics.base.BeyondInputs`), and the columns they need of it
#: besides their ``slots_K``.
_EXPOSURE: Mapping[str, tuple[str, ...]] = {
    "coverage": ("inside",),
    "gini": ("inside",),
    "entropy": (),
    "novelty": ("share",),
}

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
    ) -> list[MetricResult]:
        """Results per metric per group; ``groups`` maps each group to (users, lists)."""
        by_key = {(int(r["metric_index"]), str(r["grp"])): r for r in rows}
        out: list[MetricResult] = []
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
                    MetricResult(
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


def _exposure_ctes(specs: Sequence[MetricSpec], inp: BeyondInputs) -> list[str]:
    """``{inp.exposure}`` for the metrics of exposure in ``specs``: one grouping of
    ``ranked``'s top max(K) by group and item, every cutoff a column, then the
    catalogue and the popularity joined once per item where a metric reads them."""
    ks = sorted({int(s.k or 0) for s in specs})
    needs = {c for s in specs for c in _EXPOSURE[s.definition.name]}
    slots = ", ".join(f"COUNT(CASE WHEN rank <= {k} THEN 1 END) AS slots_{k}" for k in ks)
    cols = ["t.grp", "t.item_id", *(f"t.slots_{k}" for k in ks)]
    joins = ""
    if "inside" in needs:
        cols.append("CASE WHEN c.item_id IS NULL THEN 0 ELSE 1 END AS inside")
        joins += f" LEFT JOIN {inp.catalogue} c ON c.item_id = t.item_id"
    if "share" in needs:
        cols.append("p.share")
        joins += f" LEFT JOIN {inp.popularity} p ON p.item_id = t.item_id"
    return [
        f"{inp.exposure}_slots AS (SELECT grp, item_id, {slots} FROM {inp.ranked} "
        f"WHERE rank <= {max(ks)} GROUP BY grp, item_id)",
        f"{inp.exposure} AS (SELECT {', '.join(cols)} FROM {inp.exposure}_slots t{joins})",
    ]


def beyond_query(specs: Sequence[MetricSpec], inputs: BeyondInputs) -> BeyondQuery:
    """Build one statement computing every beyond-accuracy metric in ``specs``; the
    specs of a metric with ``shared_group_sql`` share their CTEs (diversity's lists
    are read once for all its cutoffs), and the metrics of exposure read one
    grouping of the lists by item (``exposure``) for all theirs."""
    by_metric: dict[str, list[int]] = {}
    for i, spec in enumerate(specs):
        d = spec.definition
        if d.kind != "beyond" or d.group_sql is None:
            raise ValueError(f"{spec.label} is not a beyond-accuracy metric")
        if d.shared_group_sql is not None:
            by_metric.setdefault(d.name, []).append(i)
    ctes: list[str] = []
    exposed = [s for s in specs if s.definition.name in _EXPOSURE]
    if exposed:
        inputs = replace(inputs, exposure="bx_exposure")
        ctes += _exposure_ctes(exposed, inputs)
    selects: dict[int, str] = {}
    for indices in (found for found in by_metric.values() if len(found) > 1):
        shared = specs[indices[0]].definition.shared_group_sql
        assert shared is not None
        got = shared([specs[i] for i in indices], inputs, f"b{indices[0]}")
        if got is not None:
            ctes += got[0]
            selects.update(zip(indices, got[1], strict=True))
    for i, spec in enumerate(specs):
        if i not in selects:
            assert spec.definition.group_sql is not None
            more, selects[i] = spec.definition.group_sql(spec, inputs, f"b{i}")
            ctes += more
    parts = [
        f"SELECT {i} AS metric_index, q{i}.* FROM ({selects[i]}) q{i}" for i in range(len(specs))
    ]
    return BeyondQuery(
        specs=tuple(specs), ctes=",\n".join(ctes), select="\nUNION ALL\n".join(parts)
    )
