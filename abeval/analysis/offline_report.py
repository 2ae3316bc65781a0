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

The comparisons use the report's α and relative interval (Fieller's or the delta
method's, as the online ones; every replayed metric is non-negative), at a fixed
horizon, and are corrected as one family. A metric whose value is the
same for every user of every arm cannot show a difference: it is kept, marked
``constant`` with the reason (docs/metrics.md#log-replay), and the pages hide it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from abeval.analysis.replay import replay
from abeval.analysis.report_model import (
    OFFLINE_NOT_REQUESTED,
    OfflineResult,
    OfflineValue,
    ReportOptions,
)
from abeval.errors import AbevalError
from abeval.metrics import Conventions, OfflineMetricResult
from abeval.metrics.registry import definition
from abeval.stats import Comparison, adjust_comparisons, compare
from abeval.store.sql.population import Window

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

#: The report's offline section: the comparisons, the values per arm, the status.
OfflineSection = tuple[tuple[OfflineResult, ...], tuple[OfflineValue, ...], str]


def replayed_offline(
    conn: Connection,
    experiment: str,
    control: str,
    treatments: list[str],
    o: ReportOptions,
    population: list[str],
    shown_once: bool = False,
) -> OfflineSection:
    """Offline metrics replayed from the same logs (see :mod:`abeval.analysis.replay`),
    shown beside the online lift of the first primary metric (not judged against it);
    ``population``: the table of the population already computed, if any;
    ``shown_once``: the health counts found no item shown twice in a request."""
    if not o.offline:
        return (), (), OFFLINE_NOT_REQUESTED
    reference = o.primary[0] if o.primary else "ctr"
    try:
        given = population[0] if population else None
        return offline_results(
            conn, experiment, control, treatments, o, reference, given, shown_once
        )
    except AbevalError as exc:
        # The online analysis stands on its own; say why the replay could not run.
        return (), (), f"not available: {exc.message}"


def offline_results(
    conn: Connection,
    experiment: str,
    control: str,
    treatments: list[str],
    o: ReportOptions,
    reference: str,
    population: str | None = None,
    shown_once: bool = False,
) -> OfflineSection:
    """Replay and compare per treatment arm; ``reference`` names the online metric
    shown beside each replayed one; ``population`` and ``shown_once`` as for
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
        shown_once=shown_once,
    )
    compared: list[OfflineResult] = []
    values: list[OfflineValue] = []
    for metric, by_arm in result.by_metric().items():
        c = by_arm.get(control)
        reason = constant_reason(metric, by_arm)
        for arm in treatments:
            t = by_arm.get(arm)
            if c is None or t is None:
                continue
            if c.stats is not None and t.stats is not None:
                comp = _compare(c, t, o)
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
                        control_lists_left_out=dict(c.left_out),
                        constant=bool(reason),
                        constant_reason=reason,
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


def _compare(c: OfflineMetricResult, t: OfflineMetricResult, o: ReportOptions) -> Comparison:
    """Control against treatment on per-user values, with the relative interval the
    online metrics use (``--relative-interval``); fixed-horizon even under
    ``--sequential`` (docs/metrics.md#log-replay)."""
    assert c.stats is not None and t.stats is not None
    return compare(
        c.stats,
        t.stats,
        alpha=o.alpha,
        relative_interval=o.relative_interval,
        nonnegative=True,  # every replayed metric is a share, a rank measure or 1 − similarity
    )


def constant_value(results: Mapping[str, OfflineMetricResult]) -> float | None:
    """The value every user of every arm has, or None when some user differs (or an
    arm has no per-user value)."""
    values = []
    for r in results.values():
        if r.stats is None or r.stats.n == 0:
            return None
        mean = r.stats.mean
        # a centred Σ(x − x̄)² of the size of the rounding in Σx² − (Σx)²/n only:
        # every value is the mean
        if r.stats.ss > 1e-12 * r.stats.n * max(1.0, mean * mean):
            return None
        values.append(mean)
    if not values or not all(math.isclose(v, values[0], rel_tol=1e-9) for v in values):
        return None
    return values[0]


def constant_reason(metric: str, by_arm: Mapping[str, OfflineMetricResult]) -> str:
    """Why ``metric`` cannot vary between the arms of ``by_arm`` ("" when it can)."""
    value = constant_value(by_arm)
    if value is None:
        return ""
    reason = f"{metric} is {value:.6g} for every user of every arm, so no arm can differ"
    try:
        because = definition(metric.split("@", 1)[0]).constant_when
    except AbevalError:
        because = ""
    return f"{reason} ({because})" if because else reason
