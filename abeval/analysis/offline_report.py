"""The report's offline section: replayed metrics per arm, compared with control by
the same tests as the online metrics, and checked for agreement with the online
lift.

Agreement (docs/metrics.md#log-replay) compares directions: an offline metric
*agrees* when its lift and the online reference lift (the first primary
metric) are both significant and of the same sign, *disagrees* when both are
significant with opposite signs, and is *inconclusive* otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from abeval.analysis.online_metrics import direction
from abeval.analysis.replay import replay
from abeval.analysis.report_model import OfflineResult, OfflineValue, ReportOptions
from abeval.metrics import Conventions
from abeval.stats import Comparison, adjust_comparisons, compare

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def agreement(offline: Comparison, online: Comparison | None) -> str:
    if online is None:
        return "inconclusive"
    a, b = direction(offline), direction(online)
    if a == 0 or b == 0:
        return "inconclusive"
    return "agree" if a == b else "disagree"


def offline_results(
    conn: Connection,
    experiment: str,
    control: str,
    treatments: list[str],
    o: ReportOptions,
    online: dict[str, Comparison],
    reference: str,
    population: str | None = None,
) -> tuple[tuple[OfflineResult, ...], tuple[OfflineValue, ...], str]:
    """Replay, compare per treatment arm, and judge agreement with ``online``
    (the reference metric's comparison per arm); ``population`` as for
    :func:`~abeval.analysis.replay.replay`."""
    # A report must not stop at a logging glitch: an item shown twice in a request
    # counts once (the health section counts the duplicates).
    result = replay(
        conn,
        experiment,
        k=o.offline_ks,
        conventions=Conventions(duplicates="dedupe"),
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
                        agreement=agreement(comp, online.get(arm)),
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
    final = tuple(
        _with(r, comp, online.get(r.arm)) for r, comp in zip(compared, adjusted, strict=True)
    )
    status = "; ".join(result.warnings) if result.warnings else "ok"
    return final, tuple(values), status


def _with(r: OfflineResult, comp: Comparison, online: Comparison | None) -> OfflineResult:
    return replace(r, comparison=comp, agreement=agreement(comp, online))
