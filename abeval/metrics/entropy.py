"""Shannon entropy of exposure at K.

    entropy@K = − Σ_i p(i) · log2 p(i),   p(i) = share of the group's top-K slots taken by item i

In bits; 0 when one item takes every slot, log2(m) when m items share the
slots evenly.

Reference: Shannon, "A mathematical theory of communication", 1948; Adomavicius
and Kwon, "Improving aggregate recommendation diversity using ranking-based
techniques", IEEE TKDE 24(5), 2012 (entropy-diversity).
"""

from __future__ import annotations

from abeval.metrics.base import DOUBLE, BeyondInputs, MetricDefinition, as_double, log2
from abeval.metrics.spec import MetricSpec


def group_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> tuple[list[str], str]:
    slots = f"slots_{int(spec.k or 0)}"
    ctes = [
        f"{p}_tot AS (SELECT grp, SUM({slots}) AS total FROM {inp.exposure} "
        f"WHERE {slots} > 0 GROUP BY grp)",
    ]
    share = f"({as_double(f'c.{slots}')} / t.total)"
    select = (
        f"SELECT c.grp, -SUM({share} * {log2(share)}) AS value, MAX(t.total) AS counted, "
        f"CAST(0 AS BIGINT) AS left_out, CAST(NULL AS BIGINT) AS n, CAST(NULL AS {DOUBLE}) AS s, "
        f"CAST(NULL AS {DOUBLE}) AS ss, COUNT(*) AS extra "
        f"FROM {inp.exposure} c JOIN {p}_tot t ON t.grp = c.grp WHERE c.{slots} > 0 "
        "GROUP BY c.grp"
    )
    return ctes, select


DEFINITION = MetricDefinition(
    name="entropy",
    kind="beyond",
    cutoff="required",
    title="Entropy of exposure",
    formula="−Σ p(i) log2 p(i), p(i) = share of top-K slots taken by item i",
    reference="Shannon 1948; Adomavicius & Kwon 2012 (IEEE TKDE 24(5))",
    doc=__doc__ or "",
    group_sql=group_sql,
    counted="slots",
    left_out_reason="",
    aliases=("shannon_entropy",),
)
