"""Build the experiment report: store → sufficient statistics → statistics layer →
:class:`~abeval.analysis.report_model.ExperimentReport`.

This module decides *what* is compared (metrics, arms, families for multiple
testing, CUPED or not, verdicts); the store computes sums and the statistics
layer does the maths.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from abeval import __version__
from abeval.analysis.online_metrics import (
    DEFAULT_GUARDRAILS,
    DEFAULT_PRIMARY,
    METRICS,
    OnlineMetric,
    arm_stats,
    direction,
    has_pre_period,
)
from abeval.analysis.report_model import (
    SCHEMA_VERSION,
    ArmInfo,
    ArmValue,
    DailyPoint,
    ExperimentReport,
    Health,
    Methodology,
    MetricResult,
    OfflineResult,
    OfflineValue,
    PowerInfo,
    Role,
    SegmentResult,
    Settings,
    VerdictResult,
)
from abeval.errors import AbevalError, NotFoundError
from abeval.stats import (
    DEFAULT_TUNING_N,
    Comparison,
    adjust_comparisons,
    compare,
    compare_bayesian,
    detectable_effect,
    required_users,
    srm_test,
)
from abeval.stats.sufficient import ArmStats
from abeval.store import online_sql
from abeval.store.experiments import get_settings
from abeval.store.online_sql import Moments
from abeval.store.shared_ctes import drop

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.engine import Store

MANY_SLICES = 10


@dataclass(frozen=True)
class ReportOptions:
    """What ``abeval report`` lets a user choose."""

    control: str | None = None
    alpha: float = 0.05
    correction: str = "holm"
    sequential: bool = False
    tuning_n: float = DEFAULT_TUNING_N
    cuped_days: int = 14
    segment: str | None = None
    primary: tuple[str, ...] = DEFAULT_PRIMARY
    guardrails: tuple[str, ...] = DEFAULT_GUARDRAILS
    target_mde: float = 0.02
    power: float = 0.8
    offline_ks: tuple[int, ...] = (5, 10)
    daily: bool = True
    offline: bool = True


def _role(name: str, o: ReportOptions) -> Role:
    if name in o.primary:
        return "primary"
    if name in o.guardrails:
        return "guardrail"
    return "secondary"


def _choose_control(arms: list[str], recorded: str | None, asked: str | None, exp: str) -> str:
    if asked is not None:
        if asked not in arms:
            raise NotFoundError(
                f"experiment {exp!r} has no arm {asked!r}; its arms are {', '.join(arms)}"
            )
        return asked
    if recorded and recorded in arms:
        return recorded
    return "control" if "control" in arms else sorted(arms)[0]


def _arm_value(metric: OnlineMetric, m: Moments) -> ArmValue:
    num = m.sums[metric.numerator]
    den = m.sums[metric.denominator] if metric.denominator else float(m.n)
    return ArmValue(value=num / den if den else None, numerator=num, denominator=den, users=m.n)


def _test(
    metric: OnlineMetric, c: Moments, t: Moments, o: ReportOptions, cuped: bool = False
) -> tuple[Comparison, ArmStats, ArmStats]:
    """One metric, control moments ``c`` against treatment ``t``, tested the way the
    report's options say (fixed or sequential); returns the statistics used too."""
    sc, st = arm_stats(metric, c, cuped), arm_stats(metric, t, cuped)
    return compare(sc, st, alpha=o.alpha, sequential=o.sequential, tuning_n=o.tuning_n), sc, st


def _compare(
    metric: OnlineMetric, c: Moments, t: Moments, o: ReportOptions
) -> tuple[Comparison, Comparison | None, ArmStats, ArmStats]:
    """Main comparison (CUPED when the pre-period helps), the unadjusted one beside
    it when CUPED was used, and the statistics the main comparison used."""
    plain, plain_c, plain_t = _test(metric, c, t, o)
    if o.cuped_days > 0 and has_pre_period(c, metric) and has_pre_period(t, metric):
        adj, cuped_c, cuped_t = _test(metric, c, t, o, cuped=True)
        if adj.status == "ok" and adj.cuped:
            return adj, plain, cuped_c, cuped_t
    return plain, None, plain_c, plain_t


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.2f}%"


def _verdicts(
    metrics: list[MetricResult], health: Health, o: ReportOptions
) -> tuple[VerdictResult, ...]:
    out = []
    harmed = [m for m in metrics if m.role == "guardrail" and m.significant and _worse(m)]
    for m in metrics:
        if m.role != "primary":
            continue
        rel = m.comparison.relative
        ci = rel.ci_adjusted or rel.ci
        interval = f"{_pct(rel.effect)} [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else "n/a"
        if health.srm.flagged:
            verdict, reason = (
                "invalid",
                (
                    f"sample ratio mismatch (p = {health.srm.p_value:.2g}): assignment is broken, "
                    "so every lift may be biased; find the cause before deciding"
                ),
            )
        elif m.comparison.status != "ok":
            verdict, reason = "invalid", m.comparison.message
        elif m.significant and not _worse(m):
            if harmed:
                names = ", ".join(f"{g.label} ({g.arm})" for g in harmed)
                verdict, reason = (
                    "roll_back",
                    f"{m.label} {interval} improved but guardrail {names} got significantly worse",
                )
            else:
                verdict, reason = (
                    "ship",
                    f"{m.label} {interval}, significant after {o.correction} correction",
                )
        elif m.significant:
            verdict, reason = "roll_back", f"{m.label} {interval}: significantly worse"
        elif ci is not None and -o.target_mde < ci[0] and ci[1] < o.target_mde:
            verdict, reason = (
                "no_effect",
                (f"{m.label} {interval}: the interval rules out lifts beyond ±{o.target_mde:.0%}"),
            )
        else:
            verdict, reason = (
                "keep_running",
                (
                    f"{m.label} {interval}: not significant and too wide to rule out a "
                    f"{o.target_mde:.0%} effect"
                ),
            )
        out.append(VerdictResult(metric=m.metric, arm=m.arm, verdict=verdict, reason=reason))  # type: ignore[arg-type]
    return tuple(out)


def _worse(m: MetricResult) -> bool:
    effect = m.comparison.absolute.effect or 0.0
    return effect > 0 if METRICS[m.metric].lower_is_better else effect < 0


def _health(
    conn: Connection,
    experiment: str,
    users: dict[str, int],
    weights: list[float] | None,
    arms: list[str],
    cuped_days: int,
    base: str | None = None,
) -> Health:
    raw = online_sql.health(conn, experiment, cuped_days, base)
    srm = srm_test([users.get(a, 0) for a in arms], weights)
    problems = []
    if srm.flagged:
        counts = ", ".join(f"{a} {users.get(a, 0):,}" for a in arms)
        problems.append(
            f"Sample ratio mismatch: users per arm {counts} "
            f"differ from the expected split (p = {srm.p_value:.2g}). Assignment or logging is "
            "broken; lifts below may be biased."
        )
    if raw["users_in_several_arms"]:
        share = raw["users_in_several_arms"] / max(raw["users_seen"], 1)
        if share > 0.01:
            problems.append(
                f"{raw['users_in_several_arms']:,} users ({share:.1%}) were seen in several arms "
                "and are left out: check the assignment."
            )
    if raw["clicks_without_impression"]:
        share = raw["clicks_without_impression"] / max(raw["events"], 1)
        if share > 0.01:
            problems.append(
                f"{raw['clicks_without_impression']:,} clicks have no matching impression: "
                "CTR and replayed metrics undercount them."
            )
    return Health(srm=srm, problems=tuple(problems), **raw)


def _ingests(conn: Connection, experiment: str) -> tuple[dict[str, Any], ...]:
    from sqlalchemy import text

    rows = conn.execute(
        text(
            "SELECT i.ingest_id, i.source, i.checksum, i.rows_read, i.rows_inserted, "
            "i.finished_at, COUNT(*) AS events FROM events e JOIN ingests i "
            "ON i.ingest_id = e.ingest_id WHERE e.experiment = :e "
            "GROUP BY i.ingest_id, i.source, i.checksum, i.rows_read, i.rows_inserted, "
            "i.finished_at ORDER BY i.ingest_id"
        ),
        {"e": experiment},
    )
    return tuple(
        {
            "ingest_id": int(r[0]),
            "source": r[1],
            "checksum": r[2],
            "rows_read": int(r[3]),
            "rows_inserted": int(r[4]),
            "finished_at": r[5].isoformat(sep="T") if r[5] else None,
            "events_in_experiment": int(r[6]),
        }
        for r in rows
    )


def _moments_dict(m: Moments) -> dict[str, Any]:
    return {
        "n": m.n,
        "sum": dict(m.sums),
        "centred_cross_products": {f"{a}*{b}": v for (a, b), v in m.cross.items() if v != 0.0},
    }


def build_report(store: Store, experiment: str, o: ReportOptions | None = None) -> ExperimentReport:
    """Everything ``abeval report`` shows for one experiment."""
    o = o or ReportOptions()
    with store.connect() as conn:
        settings = get_settings(conn, experiment)
        control = _choose_control(settings.arms, settings.control_arm, o.control, experiment)
        if len(settings.arms) < 2:
            raise AbevalError(
                f"experiment {experiment!r} has one arm ({settings.arms[0]}): nothing to compare; "
                "check the arm column of the events"
            )
        # The population is computed once and shared by the queries below.
        base, temporary = online_sql.shared(conn, experiment, o.cuped_days)
        try:
            moments = online_sql.arm_moments(conn, experiment, o.cuped_days, base)
            if control not in moments:
                raise AbevalError(
                    f"control arm {control!r} of {experiment!r} has no analysed users; "
                    f"arms with users: {', '.join(sorted(moments)) or 'none'}"
                )
            arms = [control] + [a for a in settings.arms if a != control]
            treatments = [a for a in arms[1:] if a in moments]
            users = {a: moments[a].n if a in moments else 0 for a in arms}
            weights = [settings.split.get(a, 0.0) for a in arms] if settings.split else None
            health = _health(conn, experiment, users, weights, arms, o.cuped_days, base)
            daily = (
                online_sql.daily_moments(conn, experiment, o.cuped_days, base) if o.daily else []
            )
            seg = (
                online_sql.segment_moments(conn, experiment, o.segment, o.cuped_days, base)
                if o.segment
                else {}
            )
        finally:
            drop(conn, temporary)
        ingests = _ingests(conn, experiment)

    shares = weights or [1.0] * len(arms)
    total_share = sum(shares)
    arm_infos = tuple(
        ArmInfo(arm=a, users=users[a], is_control=a == control, expected_share=s / total_share)
        for a, s in zip(arms, shares, strict=True)
    )

    results: list[MetricResult] = []
    plain_stats: dict[tuple[str, str], tuple[ArmStats, ArmStats]] = {}
    for name, metric in METRICS.items():
        for arm in treatments:
            c, t = moments[control], moments[arm]
            main, unadjusted, used_c, used_t = _compare(metric, c, t, o)
            plain_stats[(name, arm)] = (arm_stats(metric, c, False), arm_stats(metric, t, False))
            bayes = compare_bayesian(
                used_c, used_t, alpha=o.alpha, lower_is_better=metric.lower_is_better
            )
            results.append(
                MetricResult(
                    metric=name,
                    label=metric.label,
                    kind=metric.kind,
                    role=_role(name, o),
                    arm=arm,
                    control=_arm_value(metric, c),
                    treatment=_arm_value(metric, t),
                    comparison=main,
                    unadjusted=unadjusted,
                    bayesian=bayes,
                    significant=False,
                    status=main.status,
                    message=main.message,
                )
            )
    results = _adjust_families(results, o)
    reference = o.primary[0] if o.primary else "ctr"
    online_ref = {r.arm: r.comparison for r in results if r.metric == reference}
    with store.connect() as conn:
        offline, offline_values, offline_status = _offline(
            conn, experiment, control, treatments, o, online_ref, reference
        )

    verdicts = _verdicts(results, health, o)
    daily_points = _daily(daily, control, treatments, o)
    segments, seg_warning = _segments(seg, control, o)
    power = _power(plain_stats, daily, control, treatments, o)
    methodology = Methodology(
        sql=online_sql.arm_moments_sql(o.cuped_days),
        sufficient_statistics={a: _moments_dict(m) for a, m in moments.items()},
        ingests=ingests,
        notes=_notes(o),
    )
    return ExperimentReport(
        schema_version=SCHEMA_VERSION,
        abeval_version=__version__,
        generated_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        experiment=experiment,
        store=store.display,
        settings=Settings(
            control=control,
            alpha=o.alpha,
            correction=o.correction,
            method="sequential" if o.sequential else "fixed",
            tuning_n=o.tuning_n if o.sequential else None,
            cuped_days=o.cuped_days,
            primary=o.primary,
            guardrails=o.guardrails,
            segment=o.segment,
            target_mde=o.target_mde,
            power=o.power,
        ),
        arms=arm_infos,
        health=health,
        verdicts=verdicts,
        metrics=tuple(results),
        daily=daily_points,
        segments=segments,
        segment_warning=seg_warning,
        power=power,
        offline=offline,
        offline_values=offline_values,
        offline_status=offline_status,
        methodology=methodology,
    )


def _adjust_families(results: list[MetricResult], o: ReportOptions) -> list[MetricResult]:
    """Multiple-testing correction within each role: the primary metrics × treatment
    arms are one family; guardrails and secondary metrics are families of their own."""
    out = list(results)
    for role in ("primary", "guardrail", "secondary"):
        idx = [i for i, r in enumerate(out) if r.role == role]
        if not idx:
            continue
        adjusted = adjust_comparisons([out[i].comparison for i in idx], o.correction)  # type: ignore[arg-type]
        for i, comp in zip(idx, adjusted, strict=True):
            out[i] = replace(out[i], comparison=comp, significant=direction(comp) != 0)
    return out


def _daily(
    daily: list[tuple[str, dict[str, Moments]]],
    control: str,
    treatments: list[str],
    o: ReportOptions,
) -> tuple[DailyPoint, ...]:
    points = []
    for day, by_arm in daily:
        if control not in by_arm:
            continue
        for name in o.primary:
            metric = METRICS[name]
            for arm in treatments:
                if arm not in by_arm:
                    continue
                comp = _test(metric, by_arm[control], by_arm[arm], o)[0]
                points.append(
                    DailyPoint(
                        day=day,
                        metric=name,
                        arm=arm,
                        control_users=by_arm[control].n,
                        treatment_users=by_arm[arm].n,
                        relative_lift=comp.relative.effect,
                        ci=comp.relative.ci,
                        status=comp.status,
                    )
                )
    return tuple(points)


def _segments(
    seg: dict[str, dict[str, Moments]], control: str, o: ReportOptions
) -> tuple[tuple[SegmentResult, ...], str | None]:
    if not seg:
        return (), None
    rows: list[SegmentResult] = []
    for value, by_arm in sorted(seg.items()):
        if control not in by_arm:
            continue
        for name in o.primary:
            metric = METRICS[name]
            for arm in sorted(a for a in by_arm if a != control):
                comp = _test(metric, by_arm[control], by_arm[arm], o)[0]
                rows.append(
                    SegmentResult(
                        segment=o.segment or "",
                        value=value,
                        metric=name,
                        arm=arm,
                        control_users=by_arm[control].n,
                        treatment_users=by_arm[arm].n,
                        comparison=comp,
                    )
                )
    adjusted = adjust_comparisons([r.comparison for r in rows], o.correction)  # type: ignore[arg-type]
    rows = [replace(r, comparison=c) for r, c in zip(rows, adjusted, strict=True)]
    warning = None
    if len(rows) > MANY_SLICES:
        warning = (
            f"{len(rows)} segment comparisons: without correction about "
            f"{len(rows) * o.alpha:.1f} would look significant by chance; the p-values and "
            f"intervals are {o.correction}-corrected over all of them. Treat segment "
            "differences as hypotheses for a new test."
        )
    return tuple(rows), warning


def _power(
    plain: dict[tuple[str, str], tuple[ArmStats, ArmStats]],
    daily: list[tuple[str, dict[str, Moments]]],
    control: str,
    treatments: list[str],
    o: ReportOptions,
) -> tuple[PowerInfo, ...]:
    users_per_day = None
    if daily:
        last = daily[-1][1]
        total = sum(m.n for m in last.values())
        users_per_day = total / len(daily) if total else None
    out = []
    for name in o.primary:
        for arm in treatments:
            c, t = plain[(name, arm)]
            detectable = detectable_effect(
                c, t, alpha=o.alpha, power=o.power, sequential=o.sequential, tuning_n=o.tuning_n
            )
            baseline_mean = getattr(c, "mean", 0.0)
            baseline_var = getattr(c, "variance", 0.0)
            needed = required_users(
                baseline_mean,
                baseline_var,
                o.target_mde,
                alpha=o.alpha,
                power=o.power,
                n_arms=1 + len(treatments),
                sequential=o.sequential,
                tuning_n=o.tuning_n,
            )
            more_days = None
            if needed.total_users is not None and users_per_day:
                current = sum(x.n for x in (c, t))
                scale = (1 + len(treatments)) / 2
                more_days = max(0.0, (needed.total_users - current * scale) / users_per_day)
            out.append(
                PowerInfo(
                    metric=name,
                    arm=arm,
                    detectable=detectable,
                    needed_for_target=needed,
                    users_per_day=users_per_day,
                    more_days_needed=more_days,
                )
            )
    return tuple(out)


def _offline(
    conn: Connection,
    experiment: str,
    control: str,
    treatments: list[str],
    o: ReportOptions,
    online: dict[str, Comparison],
    reference: str,
) -> tuple[tuple[OfflineResult, ...], tuple[OfflineValue, ...], str]:
    """Offline metrics replayed from the same logs (see :mod:`abeval.analysis.replay`)."""
    if not o.offline:
        return (), (), "not requested (--no-offline)"
    from abeval.analysis.offline_report import offline_results

    try:
        return offline_results(conn, experiment, control, treatments, o, online, reference)
    except AbevalError as exc:
        # The online analysis stands on its own; say why the replay could not run.
        return (), (), f"not available: {exc.message}"


def _notes(o: ReportOptions) -> tuple[str, ...]:
    notes = [
        "Randomisation unit: user. Users are analysed in the arm of their first exposure "
        "(or first event when the experiment logs no exposures); users seen in several arms "
        "are left out.",
        "Per-user metrics are compared with Welch's t test; CTR and average order value are "
        "ratio metrics whose variance comes from the delta method with the covariance term.",
        "Relative lift = (treatment − control) / |control| with delta-method variance that "
        "includes the control's uncertainty.",
        f"Multiple testing: {o.correction} over primary metrics × treatment arms; guardrail and "
        "secondary metrics are corrected within their own families.",
        "Sample ratio: Pearson χ² against the recorded split (equal when none), flagged at "
        "p < 0.001.",
    ]
    if o.cuped_days > 0:
        notes.append(
            f"CUPED: covariate = the same metric over the {o.cuped_days} days before each "
            "user's first exposure; θ pooled over arms; unadjusted when the covariate has no "
            "variance. Relative lifts divide by the unadjusted control mean."
        )
    if o.sequential:
        notes.append(
            f"Sequential: always-valid normal-mixture confidence sequences tuned at "
            f"{o.tuning_n:,.0f} users; intervals stay valid however often the report is read."
        )
    notes.append(
        "Bayesian view: normal posterior on the lift with a flat prior; chance to beat control "
        "and expected loss."
    )
    return tuple(notes)
