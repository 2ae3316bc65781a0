"""The parts of the off-policy estimates' SQL (docs/metrics.md#off-policy-estimates).

One pass per direction (source arm's logs → target arm's click-through rate)
turns the source's impressions into per-user sums and then into per-arm sums
that add: the user count, the sum of every per-user variable and of every
product of two of them. Nothing else leaves the database.

Per user of the source arm, over the impressions that carry a ``propensity``
(from the user's first exposure on, as for CTR):

==========  ==========================================================
``wc``      Σ w·c, w = π_target(item, position) / propensity, c = clicked
``w``       Σ w
``n``       impressions
``kc``      Σ min(w, λ)·c (λ = the cap)
``k``       Σ min(w, λ)
``c``       clicked impressions
==========  ==========================================================

An impression is *clicked* when the experiment has a click with its
``request_id`` and ``item_id`` (matched on their integer keys, ``request_no``
and ``item_no``: :mod:`abeval.store.ingest.keys`). π_target comes from the temporary table of a
``--target-propensities`` file (rows of the source's requests) or, without one,
from the target arm's own impressions: the share of the target's impressions at
position k that show item a. All SQL is portable (DuckDB, PostgreSQL 15); every
value is a bind parameter.

The parts here are SQL only; :mod:`abeval.store.sql.ope_source` runs them.
"""

from __future__ import annotations

from abeval.store.sql.ope_cascade import step_user_columns
from abeval.store.sql.parts import Cte

USER_VARIABLES = ("wc", "w", "n", "kc", "k", "c")


#: (weights, weighted clicks): the diagnostics add up the weighted clicks of the
#: 1% of users with the largest sums of weights.
TOP_VARIABLES = (("w", "wc"), ("k", "kc"), ("r", "rc"), ("s", "sc"))


#: The temporary table of the target's probabilities (a ``--target-propensities``
#: file or those recorded with the experiment), filled by :mod:`abeval.store.ope_target`.
FILE_TABLE = "abeval_ope_target"


# The clicked (request, item) pairs. It reads the events itself, not ``exp_events``
# (all the experiment's events: the off-policy section has no window): DuckDB
# materialises a part that two parts read, and ``exp_events`` read by this part and
# by the impressions' cost 1.8 s of the 2.4 s of ``o_imp`` at 10M events.
CLICKED = Cte(
    "o_clk",
    """
    SELECT DISTINCT request_no, item_no FROM events
    WHERE experiment = :experiment AND event_type = 'click'
      AND request_no IS NOT NULL AND item_no IS NOT NULL
""",
)


def _impressions(name: str, columns: str) -> Cte:
    """The analysed users' impressions from their exposure on (``columns`` of
    ``e``, the event, and ``p``, the population, then ``clicked``)."""
    return Cte(
        name,
        f"""
    SELECT /*+ BROADCAST(p) */ {columns},
        CASE WHEN k.item_no IS NULL THEN 0 ELSE 1 END AS clicked
    FROM exp_events e JOIN population p ON p.user_id = e.user_id
    LEFT JOIN o_clk k ON k.request_no = e.request_no AND k.item_no = e.item_no
    WHERE e.event_type = 'impression' AND e.item_no IS NOT NULL AND e.position IS NOT NULL
      AND e.ts >= p.first_ts
""",
        ("exp_events", "population", "o_clk"),
    )


#: The impressions the estimators read, kept as a table once a direction is
#: estimated (:meth:`~abeval.store.sql.ope_source.OpeSource.direction`).
IMPRESSIONS = _impressions(
    "o_imp",
    "p.arm, e.user_id, e.request_no, e.item_no, e.position, e.propensity, e.propensity_given_above",
)


BASE = (CLICKED, IMPRESSIONS)


#: The arm counts, in one pass over the events of their own
#: (:meth:`~abeval.store.sql.ope_source.OpeSource.arm_counts`): per user,
#: impressions ``n``, clicked ones ``c`` and those with a propensity; per arm, the
#: users and the sums and products; in the same statement each arm's (item,
#: position) pairs and those whose propensity varies between requests.
COUNT_PARTS = (
    _impressions("o_cnt", "p.arm, e.user_id, e.item_no, e.position, e.propensity"),
    Cte(
        "o_arm_user",
        "SELECT arm, user_id, CAST(COUNT(*) AS DOUBLE PRECISION) AS n, "
        "CAST(SUM(clicked) AS DOUBLE PRECISION) AS c, "
        "SUM(CASE WHEN propensity IS NOT NULL THEN 1 ELSE 0 END) AS np "
        "FROM o_cnt GROUP BY arm, user_id",
        ("o_cnt",),
    ),
    Cte(
        "o_arm",
        "SELECT arm, COUNT(*) AS users, SUM(n) AS n, SUM(np) AS np, SUM(c) AS c, "
        "SUM(n * n) AS nn, SUM(n * c) AS nc, SUM(c * c) AS cc FROM o_arm_user GROUP BY arm",
        ("o_arm_user",),
    ),
    Cte(
        "o_pairs",
        "SELECT arm, item_no, position, MIN(propensity) AS lo, MAX(propensity) AS hi "
        "FROM o_cnt WHERE propensity IS NOT NULL GROUP BY arm, item_no, position",
        ("o_cnt",),
    ),
    Cte(
        "o_varying",
        "SELECT arm, COUNT(*) AS pairs, "
        "SUM(CASE WHEN hi - lo > :tol * hi THEN 1 ELSE 0 END) AS varying "
        "FROM o_pairs GROUP BY arm",
        ("o_pairs",),
    ),
)


# π_target(a, k) and its "mass" (the count or probability that the support
# deficit weighs) per (item, position), or per (request, item, position) from a file.
EMPIRICAL_PI = Cte(
    "o_pi",
    """
    SELECT item_no, position, CAST(COUNT(*) AS DOUBLE PRECISION) AS mass,
        CAST(COUNT(*) AS DOUBLE PRECISION) / SUM(COUNT(*)) OVER (PARTITION BY position) AS pi,
        CAST(NULL AS DOUBLE PRECISION) AS rho
    FROM o_imp WHERE arm = :target GROUP BY item_no, position
""",
    ("o_imp",),
)


# The file's rows on the integer keys, kept as a table the first time a direction
# reads them (:meth:`~abeval.store.sql.ope_source.OpeSource.direction`): the
# numbers are looked up, in the experiment's events, for the requests and items
# the file names only. A row whose request is no request of the experiment is
# dropped (no source impression has it); one whose item is in no event of the
# experiment keeps a NULL item_no (no impression shows it: its probability counts
# as unseen, as before the numbers).
def _file_keys(name: str, text: str, number: str) -> Cte:
    """The numbers, in the experiment's events, of the ``text`` keys the file names."""
    return Cte(
        name,
        f"""
    SELECT DISTINCT {text}, {number} FROM events
    WHERE experiment = :experiment AND {number} IS NOT NULL
      AND {text} IN (SELECT {text} FROM {FILE_TABLE})
""",
    )


FILE_ROWS = (
    _file_keys("o_freq", "request_id", "request_no"),
    _file_keys("o_fitem", "item_id", "item_no"),
    Cte(
        "o_file",
        f"""
    SELECT f.arm, r.request_no, i.item_no, f.position, f.probability, f.probability_given_above
    FROM {FILE_TABLE} f JOIN o_freq r ON r.request_id = f.request_id
    LEFT JOIN o_fitem i ON i.item_id = f.item_id
""",
        ("o_freq", "o_fitem"),
    ),
)


FILE_PI = Cte(
    "o_pi",
    """
    SELECT f.request_no, f.item_no, f.position, f.probability AS mass, f.probability AS pi,
        f.probability_given_above AS rho
    FROM o_file f
    WHERE f.arm = :target
      AND f.request_no IN (SELECT request_no FROM o_imp WHERE arm = :source)
""",
    ("o_file", "o_imp"),
)


_SOURCE = (
    Cte(
        "o_src",
        """
    SELECT user_id, request_no, item_no, position, clicked, propensity,
        propensity_given_above AS g FROM o_imp
    WHERE arm = :source AND propensity IS NOT NULL AND propensity > 0
""",
        ("o_imp",),
    ),
    Cte("o_shown", "SELECT DISTINCT item_no, position FROM o_src", ("o_src",)),
)


def weight_parts(from_file: bool) -> tuple[Cte, ...]:
    key = (
        "pi.request_no = s.request_no AND pi.item_no = s.item_no AND pi.position = s.position"
        if from_file
        else "pi.item_no = s.item_no AND pi.position = s.position"
    )
    weights = Cte(
        "o_w",
        "\n    SELECT s.user_id, s.request_no, s.item_no, s.position, "
        "s.clicked, COALESCE(pi.pi, CAST(0 AS DOUBLE PRECISION)) / s.propensity AS w, s.g, "
        "pi.rho\n"
        f"    FROM o_src s LEFT JOIN o_pi pi ON {key}\n",
        ("o_src", "o_pi"),
    )
    return (*_SOURCE, weights)


def user_part(steps: tuple[int, ...] | None) -> Cte:
    """Per-user sums over ``o_w``, or with ``steps`` (the ``snrips`` groups) over
    ``o_dr`` with the step estimators' variables too."""
    extra = "".join(f",\n        {sql} AS {name}" for name, sql in step_user_columns(steps or ()))
    extra += ",\n        SUM(short) AS short"
    rows = "o_w" if steps is None else "o_dr"
    return Cte(
        "o_user",
        f"""
    SELECT user_id, SUM(w * clicked) AS wc, SUM(w) AS w, CAST(COUNT(*) AS DOUBLE PRECISION) AS n,
        SUM(LEAST(w, :cap) * clicked) AS kc, SUM(LEAST(w, :cap)) AS k,
        CAST(SUM(clicked) AS DOUBLE PRECISION) AS c{extra if steps is not None else ""}
    FROM {rows} GROUP BY user_id
""",
        (rows,),
    )
