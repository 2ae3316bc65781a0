"""The SQL of the off-policy estimators over step probabilities
(docs/metrics.md#ranked-lists-cascade-and-whole-list-estimators).

Over the source's impressions with their item-position weight (``o_w`` of
:mod:`abeval.store.sql.ope_parts`, which carries the logging policy's step probability
``g`` = ``propensity_given_above`` and the target's ``rho`` =
``probability_given_above`` of the same item at the same position), per request:

==========  ==============================================================
``r``       ρ_k / g_k, the step ratio (0 when the target never takes the step)
``wk``      W_k = Π_{j≤k} r_j, the cascade weight of the top-k prefix
``wprev``   W_{k−1} (1 at the top)
``wl``      W_K, the whole list's weight, the same at every position
==========  ==============================================================

The products are sums of logarithms over a window ordered by position (a zero
step is counted apart, so no logarithm of 0 is taken). Cascade-DR adds a click
model q̂ fitted by cross-fitting: the source's users are dealt into ``:folds``
folds by the order of their ids, and the impressions of a user's fold are
scored with the smoothed click rate of (item, position) over the *other*
folds, (clicks + m·p) / (impressions + m), p the other folds' click rate at the
position and m = ``:smooth``. Every statement is portable (DuckDB,
PostgreSQL 15, Spark through :mod:`abeval.store.backends.spark.dialect`).
"""

from __future__ import annotations

from abeval.store.sql.parts import Cte

#: Positions past this one share a normalising group in ``snrips``.
MAX_GROUP = 10
#: Cross-fitting folds and the smoothing pseudo-count of q̂.
FOLDS = 5
SMOOTH = 20.0
#: A (request, position) whose candidates' step probabilities sum below this
#: lacks candidates: Cascade-DR's direct term cannot be formed there.
MIN_CANDIDATE_MASS = 0.999

_ZERO = "CASE WHEN r > 0 THEN 0 ELSE 1 END"
_LOG = "CASE WHEN r > 0 THEN LN(r) ELSE CAST(0 AS DOUBLE PRECISION) END"
_UPTO = "OVER (PARTITION BY request_no ORDER BY position ROWS UNBOUNDED PRECEDING)"
_ALL = "OVER (PARTITION BY request_no)"
# exp() of a log-weight past this would leave the doubles (e^700 ≈ 1e304).
_MAX_LOG = 700

CASCADE_PARTS: tuple[Cte, ...] = (
    Cte(
        "o_r",
        """
    SELECT user_id, request_no, item_no, position, clicked, w,
        CASE WHEN rho IS NULL OR g IS NULL THEN CAST(0 AS DOUBLE PRECISION) ELSE rho / g END AS r
    FROM o_w
""",
        ("o_w",),
    ),
    Cte(
        "o_cum",
        f"""
    SELECT user_id, request_no, item_no, position, clicked, w, r,
        {_ZERO} AS z0, {_LOG} AS l0,
        SUM({_ZERO}) {_UPTO} AS zk, SUM({_LOG}) {_UPTO} AS lk,
        SUM({_ZERO}) {_ALL} AS zl, SUM({_LOG}) {_ALL} AS ll
    FROM o_r
""",
        ("o_r",),
    ),
    Cte(
        "o_cw",
        f"""
    SELECT user_id, request_no, item_no, position, clicked, w, r,
        CASE WHEN zk > 0 THEN CAST(0 AS DOUBLE PRECISION)
            ELSE EXP(LEAST(lk, {_MAX_LOG})) END AS wk,
        CASE WHEN zk - z0 > 0 THEN CAST(0 AS DOUBLE PRECISION)
            ELSE EXP(LEAST(lk - l0, {_MAX_LOG})) END AS wprev,
        CASE WHEN zl > 0 THEN CAST(0 AS DOUBLE PRECISION)
            ELSE EXP(LEAST(ll, {_MAX_LOG})) END AS wl
    FROM o_cum
""",
        ("o_cum",),
    ),
)

DR_PARTS: tuple[Cte, ...] = (
    Cte(
        "o_fold",
        """
    SELECT user_id, MOD(ROW_NUMBER() OVER (ORDER BY user_id), :folds) AS fold
    FROM (SELECT DISTINCT user_id FROM o_src) u
""",
        ("o_src",),
    ),
    Cte(
        "o_fc",
        """
    SELECT f.fold, s.item_no, s.position, CAST(COUNT(*) AS DOUBLE PRECISION) AS n,
        CAST(SUM(s.clicked) AS DOUBLE PRECISION) AS c
    FROM o_src s JOIN o_fold f ON f.user_id = s.user_id GROUP BY f.fold, s.item_no, s.position
""",
        (
            "o_src",
            "o_fold",
        ),
    ),
    Cte(
        "o_fi",
        "SELECT item_no, position, SUM(n) AS n, SUM(c) AS c FROM o_fc GROUP BY item_no, position",
        ("o_fc",),
    ),
    Cte(
        "o_fp",
        "SELECT fold, position, SUM(n) AS n, SUM(c) AS c FROM o_fc GROUP BY fold, position",
        ("o_fc",),
    ),
    Cte(
        "o_prior",
        """
    SELECT a.fold, a.position,
        CASE WHEN t.n - a.n > 0 THEN (t.c - a.c) / (t.n - a.n)
            ELSE CAST(0 AS DOUBLE PRECISION) END AS p
    FROM o_fp a JOIN (SELECT position, SUM(n) AS n, SUM(c) AS c FROM o_fc GROUP BY position) t
        ON t.position = a.position
""",
        ("o_fp", "o_fc"),
    ),
    Cte(
        "o_req",
        """
    SELECT DISTINCT s.request_no, f.fold FROM o_src s JOIN o_fold f ON f.user_id = s.user_id
""",
        (
            "o_src",
            "o_fold",
        ),
    ),
    Cte(
        "o_qhat",
        """
    SELECT c.request_no, c.item_no, c.position, COALESCE(c.rho, CAST(0 AS DOUBLE PRECISION)) AS rho,
        (COALESCE(t.c, 0) - COALESCE(x.c, 0) + :smooth * COALESCE(pr.p, 0))
            / (COALESCE(t.n, 0) - COALESCE(x.n, 0) + :smooth) AS q
    FROM o_pi c JOIN o_req r ON r.request_no = c.request_no
    LEFT JOIN o_fi t ON t.item_no = c.item_no AND t.position = c.position
    LEFT JOIN o_fc x ON x.fold = r.fold AND x.item_no = c.item_no AND x.position = c.position
    LEFT JOIN o_prior pr ON pr.fold = r.fold AND pr.position = c.position
""",
        (
            "o_pi",
            "o_req",
            "o_fi",
            "o_fc",
            "o_prior",
        ),
    ),
    Cte(
        "o_dm",
        """
    SELECT request_no, position, SUM(rho * q) AS dm, SUM(rho) AS mass
    FROM o_qhat GROUP BY request_no, position
""",
        ("o_qhat",),
    ),
    Cte(
        "o_dr",
        f"""
    SELECT w.user_id, w.position, w.clicked, w.w, w.wk, w.wprev, w.wl,
        w.wprev * COALESCE(d.dm, CAST(0 AS DOUBLE PRECISION))
            + w.wk * (w.clicked - COALESCE(q.q, CAST(0 AS DOUBLE PRECISION))) AS dr,
        CASE WHEN w.wprev > 0 AND COALESCE(d.mass, 0) < {MIN_CANDIDATE_MASS} THEN 1 ELSE 0 END
            AS short
    FROM o_cw w LEFT JOIN o_dm d ON d.request_no = w.request_no AND d.position = w.position
    LEFT JOIN o_qhat q ON q.request_no = w.request_no AND q.item_no = w.item_no
        AND q.position = w.position
""",
        (
            "o_cw",
            "o_dm",
            "o_qhat",
        ),
    ),
)


def group_of(column: str = "position") -> str:
    """SQL: the ``snrips`` normalising group of a position."""
    return f"LEAST({column}, {MAX_GROUP})"


def step_user_columns(groups: tuple[int, ...]) -> list[tuple[str, str]]:
    """(name, SQL over ``o_dr``) of the per-user variables of the step
    estimators: ``rc`` Σ W_k·c, ``r`` Σ W_k, ``sc`` Σ W_K·c, ``s`` Σ W_K, ``dr``
    the Cascade-DR terms, and per ``snrips`` group g ``a<g>`` Σ W_k·c, ``b<g>`` Σ W_k,
    ``n<g>`` impressions."""
    zero = "CAST(0 AS DOUBLE PRECISION)"
    out = [
        ("rc", "SUM(wk * clicked)"),
        ("r", "SUM(wk)"),
        ("sc", "SUM(wl * clicked)"),
        ("s", "SUM(wl)"),
        ("dr", "SUM(dr)"),
    ]
    for g in groups:
        at = f"{group_of()} = {int(g)}"
        out += [
            (f"a{g}", f"SUM(CASE WHEN {at} THEN wk * clicked ELSE {zero} END)"),
            (f"b{g}", f"SUM(CASE WHEN {at} THEN wk ELSE {zero} END)"),
            (f"n{g}", f"SUM(CASE WHEN {at} THEN CAST(1 AS DOUBLE PRECISION) ELSE {zero} END)"),
        ]
    return out
