"""What a metric definition is, and the per-list aggregates its SQL formula may use.

Each metric module defines one :class:`MetricDefinition`. A ranking metric gives
its per-list formula as a SQL expression over per-list aggregates (hits@K, the
sum of precisions at relevant ranks, DCG@K, IDCG@K, R, the first relevant rank,
AUC pair counts); :class:`ListAggregates` hands out the column names and records
which aggregates the kernel (:mod:`abeval.metrics.kernel`) must compute, so one
pass over the lists computes every requested metric at every cutoff.

SQL written here must be portable (DuckDB, PostgreSQL 15): ``LN(x) / LN(2)``, not
``log2``; explicit ``CAST(... AS DOUBLE PRECISION)`` before division.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from abeval.metrics.spec import MetricSpec

Kind = Literal["ranking", "beyond", "rating"]
Cutoff = Literal["required", "optional", "none"]

DOUBLE = "DOUBLE PRECISION"


def as_double(expr: str) -> str:
    return f"CAST({expr} AS {DOUBLE})"


def log2(expr: str) -> str:
    """Portable base-2 logarithm (PostgreSQL has no ``log2``)."""
    return f"(LN({as_double(expr)}) / LN({as_double('2')}))"


def gain_sql(gain: str, rel: str) -> str:
    """The NDCG gain g(rel) as SQL: ``linear`` r, ``exp2`` 2^r − 1, ``binary`` 1 for r > 0."""
    if gain == "linear":
        return f"(CASE WHEN {rel} > 0 THEN {as_double(rel)} ELSE 0 END)"
    if gain == "exp2":
        return (
            f"(CASE WHEN {rel} > 0 THEN POWER({as_double('2')}, {as_double(rel)}) - 1 ELSE 0 END)"
        )
    if gain == "binary":
        return f"(CASE WHEN {rel} > 0 THEN {as_double('1')} ELSE 0 END)"
    raise ValueError(f"unknown gain {gain!r}")


def cutoff_name(k: int | None) -> str:
    return "all" if k is None else str(int(k))


def parse_cutoffs(text: str) -> tuple[int, ...]:
    """Cutoffs written as ``5,10,20``: sorted, without repeats.

    Raises ValueError with the fix when a part is not a whole number of at
    least 1, or when no cutoff is given."""
    try:
        ks = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        raise ValueError("give cutoffs as whole numbers, as in 5,10,20") from None
    if not ks or min(ks) < 1:
        raise ValueError("give cutoffs of at least 1, as in 5,10,20")
    return tuple(sorted(ks))


@dataclass(frozen=True)
class Aggregate:
    """One per-list aggregate: ``kind`` at cutoff ``k`` (None = whole list) with ``gain``."""

    kind: str
    k: int | None = None
    gain: str | None = None

    @property
    def column(self) -> str:
        parts = [self.kind]
        if self.gain is not None:
            parts.append(self.gain)
        if self.kind in ("hits", "ap_sum", "dcg", "idcg"):
            parts.append(cutoff_name(self.k))
        return "_".join(parts)


class ListAggregates:
    """Column names of the per-list aggregates, recording which are needed.

    All columns are DOUBLE PRECISION and never NULL, except ``first_relevant``,
    which is NULL when no relevant item is in the list.
    """

    def __init__(self) -> None:
        self.needed: set[Aggregate] = set()

    def _use(self, agg: Aggregate) -> str:
        self.needed.add(agg)
        return agg.column

    def relevant(self) -> str:
        """R: the number of relevant items for the list (gain > 0 in ``judged``)."""
        return self._use(Aggregate("r"))

    def hits(self, k: int | None) -> str:
        """hits@K: relevant items at ranks 1..K of the list."""
        return self._use(Aggregate("hits", k))

    def ap_sum(self, k: int | None) -> str:
        """Σ over relevant ranks i ≤ K of precision@i (hits@i / i)."""
        return self._use(Aggregate("ap_sum", k))

    def dcg(self, k: int | None, gain: str) -> str:
        """DCG@K = Σ_{i ≤ K} g(rel(i)) / log2(i + 1)."""
        return self._use(Aggregate("dcg", k, gain))

    def idcg(self, k: int | None, gain: str) -> str:
        """IDCG@K: DCG@K of the list's judged gains sorted descending."""
        return self._use(Aggregate("idcg", k, gain))

    def first_relevant(self) -> str:
        """Rank of the first relevant item in the list, NULL when there is none."""
        return self._use(Aggregate("first_relevant"))

    def hits_at_r(self) -> str:
        """hits@R: relevant items at ranks 1..R, R the list's own number of relevant items."""
        return self._use(Aggregate("hits_r"))

    def bpref_sum(self) -> str:
        """Σ over the relevant ranked items r of 1 − min(n_r, R) / min(N, R): n_r the
        judged non-relevant items ranked above r, N those of the list (1 when n_r = 0)."""
        return self._use(Aggregate("bpref_sum"))

    def auc_pairs(self) -> str:
        """(relevant, non-relevant) pairs within the list."""
        return self._use(Aggregate("auc_pairs"))

    def auc_correct(self) -> str:
        """Pairs with the relevant item ranked above the non-relevant one (ties count half)."""
        return self._use(Aggregate("auc_correct"))


@dataclass(frozen=True)
class GroupRow:
    """A beyond-accuracy metric's row of a group, as SQL expressions over a relation
    with one row per group (the columns of :class:`~abeval.metrics.beyond.BeyondQuery`'s
    rows); ``present`` says whether the group has the row at all."""

    value: str
    counted: str
    left_out: str = "0"
    extra: str = "0"
    n: str = "NULL"
    s: str = "NULL"
    ss: str = "NULL"
    present: str = "TRUE"


@dataclass(frozen=True)
class GroupRows:
    """Several specs' :class:`GroupRow` over one relation: ``ctes`` define it,
    ``relation`` names it (one row per group), ``rows`` are in the specs' order."""

    ctes: tuple[str, ...]
    relation: str
    rows: tuple[GroupRow, ...]


@dataclass(frozen=True)
class ExposureSums:
    """A metric of exposure at one cutoff as part of the one aggregate by group of
    ``exposure``: ``sums`` are aggregates over its rows, each ``expression AS name``
    (names starting with the prefix given); ``row`` reads those names and
    ``catalogue_items``, the size of ``catalogue``."""

    sums: tuple[str, ...]
    row: GroupRow


PerList = Callable[["MetricSpec", ListAggregates], str]
Undefined = Callable[["MetricSpec", ListAggregates], "tuple[str, str] | None"]
GroupSql = Callable[["MetricSpec", "BeyondInputs", str], "tuple[list[str], str]"]
SharedGroupSql = Callable[["Sequence[MetricSpec]", "BeyondInputs", str], GroupRows]
ExposureSql = Callable[["MetricSpec", "BeyondInputs", str], ExposureSums]


@dataclass(frozen=True)
class BeyondInputs:
    """Relations a beyond-accuracy metric reads, by name (tables or CTEs).

    - ``ranked(grp, user_id, list_id, item_id, rank, gain)``: as for the ranking kernel.
    - ``catalogue(item_id)``: distinct catalogue items (coverage, Gini).
    - ``popularity(item_id, share)``: share of reference users who interacted
      with the item (novelty).
    - ``interactions(user_id, item_id)``: distinct reference interactions, for
      co-occurrence similarity.
    - ``items(item_id, category)`` or ``items(item_id, features)``: item
      features, for ``similarity`` ``category`` or ``features`` (``features`` is a
      DuckDB list of numbers: ``evaluate`` only).
    - ``history(user_id, item_id)``: what each user interacted with before
      (serendipity); None when there is no history.
    - ``exposure(grp, item_id, slots_K..., inside, share, order_K..., total_K...)``:
      per group and shown item, ``slots_K`` the top-K slots it takes for each K the
      metrics of exposure ask for (coverage, Gini, entropy, novelty), ``inside`` 1
      when the item is in ``catalogue`` (else 0), ``share`` its popularity (NULL
      without one), ``order_K`` its place in the group's items sorted by ``inside``,
      ``slots_K`` and ``item_id`` (from 1) and ``total_K`` the group's top-K slots;
      each column but ``slots_K`` only where a metric reads it (``exposure_needs``);
      defined by :func:`abeval.metrics.beyond.beyond_query` from one grouping of
      ``ranked``.
    - ``list_key``: the columns of ``ranked`` that name a list: ``grp, list_id``, or
      ``list_id`` alone where a list id is never in two groups (the replay's request
      numbers: a request has one user, in one arm), which lets diversity join and
      group a list's rows on one integer instead of two columns (``evaluate``'s list
      ids are the users, repeated in every model's group).
    - ``reference_users``: how many users ``popularity``'s share is taken over;
      novelty gives an item without popularity the add-one share
      1 / (reference_users + 1) (docs/metrics.md#novelty).
    """

    ranked: str = "ranked"
    catalogue: str = "catalogue"
    popularity: str = "popularity"
    interactions: str = "interactions"
    items: str | None = None
    similarity: str = "cooccurrence"
    history: str | None = None
    reference_users: int | None = None
    exposure: str = "exposure"
    list_key: tuple[str, ...] = ("grp", "list_id")


@dataclass(frozen=True)
class MetricDefinition:
    """The one definition of a metric.

    - ``kind``: ``ranking`` (a value per list, averaged per user then per group),
      ``beyond`` (a value per group over the top K of its lists) or ``rating``.
    - ``cutoff``: whether the name takes ``@K``.
    - ``options``: the :class:`~abeval.metrics.spec.Conventions` fields that apply.
    - ``skips_empty``: left out of the averages for lists with R = 0 under
      ``empty=skip`` (recall, AP, NDCG, MRR, AUC; docs/metrics.md#ranking-conventions).
    - ``per_list``: the per-list SQL expression (ranking metrics).
    - ``undefined``: an extra SQL condition under which a list has no value, and
      the reason counted in the output (AUC without a pair).
    - A beyond-accuracy metric gives one of three (``counted`` and
      ``left_out_reason`` name its two counts; ``per_user`` says that ``n, s, ss``
      are per-user sufficient statistics):
      - ``exposure_sql``: ``(spec, inputs, prefix)`` → its part of the one aggregate
        by group of ``exposure`` (:class:`ExposureSums`), reading the columns
        ``exposure_needs`` names besides ``slots_K`` (coverage, Gini, entropy,
        novelty: every cutoff of all four in one pass);
      - ``shared_group_sql``: ``(specs, inputs, prefix)`` → every spec of the metric
        from one relation with a row per group (:class:`GroupRows`; diversity's
        item pairs, built once for every cutoff);
      - ``group_sql``: ``(spec, inputs, prefix)`` → (CTE definitions, a SELECT of
        ``grp, value, counted, left_out, n, s, ss, extra``).
    - ``rating_sql``: for rating metrics, an aggregate over ``prediction`` and ``rating``.
    - ``doc``: the module docstring (formula and reference).
    - ``lower_is_better``: a smaller value is better (RMSE, MAE); the pages colour
      a difference by it.
    - ``constant_when``: when the definition alone makes the metric the same for
      every list (recall@K once K reaches the list length); the report says it
      beside a replayed metric that cannot vary.
    """

    name: str
    kind: Kind
    cutoff: Cutoff
    title: str
    formula: str
    reference: str
    doc: str = ""
    options: tuple[str, ...] = ()
    skips_empty: bool = False
    per_list: PerList | None = None
    undefined: Undefined | None = None
    group_sql: GroupSql | None = None
    shared_group_sql: SharedGroupSql | None = None
    exposure_sql: ExposureSql | None = None
    exposure_needs: tuple[str, ...] = ()
    counted: str = ""
    left_out_reason: str = ""
    per_user: bool = False
    rating_sql: str = ""
    aliases: tuple[str, ...] = ()
    lower_is_better: bool = False
    constant_when: str = ""
