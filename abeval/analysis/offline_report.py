"""The report's offline section: replayed metrics per arm, compared with control by
the same tests as the online metrics, shown beside the online lift of the first
primary metric.

No agreement is judged (docs/metrics.md#log-replay): the replayed metrics are
computed from the same logged lists and the same clicks that define CTR, so a
ranking metric moving with CTR is close to circular, and a metric of the lists
themselves (coverage, diversity, novelty) says nothing about clicks either way.
``agreement`` is therefore always None here; the report judges agreement only
for signals independent of the online metric, the off-policy estimates
(:mod:`abeval.analysis.ope`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from abeval.analysis.replay import replay
from abeval.analysis.report_model import OfflineResult, OfflineValue, ReportOptions
from abeval.metrics import Conventions
from abeval.stats import adjust_comparisons, compare
from abeval.store.population import Window

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def offline_results(
    conn: Connection,
    experiment: str,
    control: str,
    treatments: list[str],
    o: ReportOptions,
    reference: str,
    population: str | None = None,
) -> tuple[tuple[OfflineResult, ...], tuple[OfflineValue, ...], str]:
    """Replay and compare per treatment arm; ``reference`` names the online metric
    shown beside each replayed one; ``population`` as for
    :func:`~abeval.analysis.replay.replay`."""
    # A report must not stop at a logging glitch: an item shown twice in a request
    # counts once (the health section counts the duplicates).
    result = replay(
        conn,
        experiment,
        k=o.offline_ks,
        conventions=Conventions(duplicates="dedupe"),
        window=Window(o.window_from, o.window_to),
        population=population,
    )
    compared: list[OfflineResult] = []
    values: list[OfflineValue] = []
    for metric, by_arm in result.by_metric().items():
        c = by_arm.get(control)
        for arm in treatments:
            t = by_arm.get(arm)
            if c is None or t is None:
                continue
            if c.stats is not None and t.stats is not None:
                comp = compare(c.stats, t.stats, alpha=o.alpha)
                compared.append(
                    OfflineResult(
                        metric=metric,
                        convention=dict(c.convention),
                        arm=arm,
                        control_value=c.value,
                        treatment_value=t.value,
                        control_users=c.users,
                        treatment_users=t.users,
                        comparison=comp,
                        agrees_with=reference,
                        agreement=None,
                        lists_left_out=dict(t.left_out),
                    )
                )
        for arm, r in by_arm.items():
            if r.stats is None:
                values.append(
                    OfflineValue(
                        metric=metric,
                        arm=arm,
                        value=r.value,
                        convention=dict(r.convention),
                        counts=dict(r.counts),
                        status=r.status,
                        message=r.message,
                    )
                )
    # The offline comparisons are one family of their own.
    adjusted = adjust_comparisons([r.comparison for r in compared], o.correction)  # type: ignore[arg-type]
    final = tuple(replace(r, comparison=comp) for r, comp in zip(compared, adjusted, strict=True))
    status = "; ".join(result.warnings) if result.warnings else "ok"
    return final, tuple(values), status
