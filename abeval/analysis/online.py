"""Build the experiment report: store → sufficient statistics → statistics layer →
:class:`~abeval.analysis.report_model.ExperimentReport`.

This module decides *what* is compared (metrics, arms, CUPED or not) and puts
the report together: it reads the experiment from the store
(:mod:`abeval.store.online_sql`), compares the metrics
(:mod:`abeval.analysis.comparisons`), judges them
(:mod:`abeval.analysis.verdicts`), replays the offline metrics
(:mod:`abeval.analysis.offline_report`), and adds health, power and the
methodology. The store computes sums and the statistics layer does the maths.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from abeval import __version__
from abeval.analysis.comparisons import (
    PlainStats,
    daily_points,
    metric_results,
    segment_results,
)
from abeval.analysis.offline_report import offline_results
from abeval.analysis.report_model import (
    SCHEMA_VERSION,
    ArmInfo,
    ExperimentReport,
    Health,
    Methodology,
    MetricResult,
    OfflineResult,
    OfflineValue,
    PowerInfo,
    ReportOptions,
    Settings,
)
from abeval.analysis.verdicts import verdicts
from abeval.errors import AbevalError, NotFoundError
from abeval.stats import detectable_effect, required_users, srm_test
from abeval.store import online_sql
from abeval.store.experiments import ExperimentSettings, get_settings
from abeval.store.online_sql import Moments
from abeval.store.shared_ctes import drop

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.engine import Store

__all__ = ["ReportOptions", "build_report"]

Daily = list[tuple[str, dict[str, Moments]]]


@dataclass(frozen=True)
class _Observed:
    """What the store holds for one report: arms (control first), per-arm moments,
    health counts, the daily and per-segment moments, and the ingests."""

    settings: ExperimentSettings
    control: str
    arms: list[str]
    moments: dict[str, Moments]
    health: Health
    daily: Daily
    segments: dict[str, dict[str, Moments]]
    ingests: tuple[dict[str, Any], ...]

    @property
    def treatments(self) -> list[str]:
        """The arms compared with control: those with analysed users."""
        return [a for a in self.arms[1:] if a in self.moments]

    @property
    def weights(self) -> list[float] | None:
        """The recorded split per arm, if any."""
        split = self.settings.split
        return [split.get(a, 0.0) for a in self.arms] if split else None


def build_report(store: Store, experiment: str, o: ReportOptions | None = None) -> ExperimentReport:
    """Everything ``abeval report`` shows for one experiment."""
    o = o or ReportOptions()
    with store.connect() as conn:
        seen, population = _observe(conn, experiment, o)
        try:  # the replay reads the population the online pass computed
            control, treatments = seen.control, seen.treatments
            results, plain = metric_results(seen.moments, control, treatments, o)
            offline, offline_values, offline_status = _offline(
                conn, experiment, control, treatments, o, results, population
            )
        finally:
            drop(conn, population)
    segments, segment_warning = segment_results(seen.segments, control, o)
    return ExperimentReport(
        schema_version=SCHEMA_VERSION,
        abeval_version=__version__,
        generated_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        experiment=experiment,
        store=store.display,
        settings=_settings(control, o),
        arms=_arm_infos(seen),
        health=seen.health,
        verdicts=verdicts(results, seen.health, o),
        metrics=tuple(results),
        daily=daily_points(seen.daily, control, treatments, o),
        segments=segments,
        segment_warning=segment_warning,
        power=_power(plain, seen.daily, control, treatments, o),
        offline=offline,
        offline_values=offline_values,
        offline_status=offline_status,
        methodology=_methodology(seen, o),
    )


def _observe(conn: Connection, experiment: str, o: ReportOptions) -> tuple[_Observed, list[str]]:
    """Read the experiment from the store: its settings and arms, then, over the
    population computed once, the moments, health, daily and segment breakdowns;
    and the temporary table of the population, kept for the replay (drop it after)."""
    settings = get_settings(conn, experiment)
    control = _choose_control(settings.arms, settings.control_arm, o.control, experiment)
    if len(settings.arms) < 2:
        raise AbevalError(
            f"experiment {experiment!r} has one arm ({settings.arms[0]}): nothing to compare; "
            "check the arm column of the events"
        )
    arms = [control] + [a for a in settings.arms if a != control]
    base, temporary = online_sql.shared(conn, experiment, o.cuped_days)
    kept = [t for t in temporary if t.endswith("_population")]
    try:
        moments = online_sql.arm_moments(conn, experiment, o.cuped_days, base)
        if control not in moments:
            raise AbevalError(
                f"control arm {control!r} of {experiment!r} has no analysed users; "
                f"arms with users: {', '.join(sorted(moments)) or 'none'}"
            )
        users = {a: moments[a].n if a in moments else 0 for a in arms}
        weights = [settings.split.get(a, 0.0) for a in arms] if settings.split else None
        health = _health(conn, experiment, users, weights, arms, o.cuped_days, base)
        daily = online_sql.daily_moments(conn, experiment, o.cuped_days, base) if o.daily else []
        segments = (
            online_sql.segment_moments(conn, experiment, o.segment, o.cuped_days, base)
            if o.segment
            else {}
        )
    except BaseException:
        drop(conn, kept)
        raise
    finally:
        drop(conn, [t for t in temporary if t not in kept])
    observed = _Observed(
        settings=settings,
        control=control,
        arms=arms,
        moments=moments,
        health=health,
        daily=daily,
        segments=segments,
        ingests=online_sql.ingests(conn, experiment),
    )
    return observed, kept


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


def _arm_infos(seen: _Observed) -> tuple[ArmInfo, ...]:
    shares = seen.weights or [1.0] * len(seen.arms)
    total_share = sum(shares)
    return tuple(
        ArmInfo(
            arm=a,
            users=seen.moments[a].n if a in seen.moments else 0,
            is_control=a == seen.control,
            expected_share=s / total_share,
        )
        for a, s in zip(seen.arms, shares, strict=True)
    )


def _settings(control: str, o: ReportOptions) -> Settings:
    return Settings(
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
    )


def _methodology(seen: _Observed, o: ReportOptions) -> Methodology:
    return Methodology(
        sql=online_sql.arm_moments_sql(o.cuped_days),
        sufficient_statistics={a: _moments_dict(m) for a, m in seen.moments.items()},
        ingests=seen.ingests,
        notes=_notes(o),
    )


def _moments_dict(m: Moments) -> dict[str, Any]:
    return {
        "n": m.n,
        "sum": dict(m.sums),
        "centred_cross_products": {f"{a}*{b}": v for (a, b), v in m.cross.items() if v != 0.0},
    }


def _power(
    plain: PlainStats,
    daily: Daily,
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
    results: list[MetricResult],
    population: list[str],
) -> tuple[tuple[OfflineResult, ...], tuple[OfflineValue, ...], str]:
    """Offline metrics replayed from the same logs (see :mod:`abeval.analysis.replay`),
    checked against the online lift of the first primary metric; ``population``:
    the table of the population already computed, if any."""
    if not o.offline:
        return (), (), "not requested (--no-offline)"
    reference = o.primary[0] if o.primary else "ctr"
    online = {r.arm: r.comparison for r in results if r.metric == reference}
    try:
        given = population[0] if population else None
        return offline_results(conn, experiment, control, treatments, o, online, reference, given)
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
