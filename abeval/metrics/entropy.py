"""Shannon entropy of exposure at K.

    entropy@K = − Σ_i p(i) · log2 p(i),   p(i) = share of the group's top-K slots taken by item i

In bits; 0 when one item takes every slot, log2(m) when m items share the
slots evenly.

Reference: Shannon, "A mathematical theory of communication", 1948; Adomavicius
and Kwon, "Improving aggregate recommendation diversity using ranking-based
techniques", IEEE TKDE 24(5), 2012 (entropy-diversity).
"""

from __future__ import annotations

from abeval.metrics.base import (
    BeyondInputs,
    ExposureSums,
    GroupRow,
    MetricDefinition,
    as_double,
    log2,
)
from abeval.metrics.spec import MetricSpec


def exposure_sql(spec: MetricSpec, inp: BeyondInputs, p: str) -> ExposureSums:
    """−Σ p log2 p over the shown items of ``inp.exposure``, ``total_K`` the group's slots."""
    k = int(spec.k or 0)
    share = f"({as_double(f'slots_{k}')} / total_{k})"
    return ExposureSums(
        sums=(
            f"-SUM(CASE WHEN slots_{k} > 0 THEN {share} * {log2(share)} END) AS {p}_h",
            f"MAX(total_{k}) AS {p}_total",
            f"COUNT(CASE WHEN slots_{k} > 0 THEN 1 END) AS {p}_items",
        ),
        row=GroupRow(value=f"{p}_h", counted=f"{p}_total", extra=f"{p}_items"),
    )


DEFINITION = MetricDefinition(
    name="entropy",
    kind="beyond",
    cutoff="required",
    title="Entropy of exposure",
    formula="−Σ p(i) log2 p(i), p(i) = share of top-K slots taken by item i",
    reference="Shannon 1948; Adomavicius & Kwon 2012 (IEEE TKDE 24(5))",
    doc=__doc__ or "",
    exposure_sql=exposure_sql,
    exposure_needs=("total",),
    counted="slots",
    left_out_reason="",
    aliases=("shannon_entropy",),
)
