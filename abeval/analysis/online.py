"""Build the experiment report: store → sufficient statistics → statistics layer →
:class:`~abeval.analysis.report_model.ExperimentReport`.

This module decides *what* is compared (metrics, arms, CUPED or not) and puts
the report together: it reads the experiment from the store
(:mod:`abeval.store.sql.online_sums` and its siblings), compares the metrics
(:mod:`abeval.analysis.comparisons`), judges them
(:mod:`abeval.analysis.verdicts`), replays the offline metrics
(:mod:`abeval.analysis.offline_report`), and adds health, power and the
methodology. The store computes sums and the statistics layer does the maths.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from abeval import __version__
from abeval.analysis.capping import cap_infos, copies, copy_labels, variable_quantiles
from abeval.analysis.comparisons import (
    PlainStats,
    daily_points,
    segment_results,
)
from abeval.analysis.decision import decisions
from abeval.analysis.in_place import with_source
from abeval.analysis.offline_report import offline_results
from abeval.analysis.planning import guardrail_power, planning_alpha, planning_rule, power_info
from abeval.analysis.predicted import predicted_results
from abeval.analysis.report_model import (
    OFFLINE_NOT_REQUESTED,
    SCHEMA_VERSION,
    ArmInfo,
    ControlRule,
    ExperimentReport,
    GuardrailPower,
    Health,
    Methodology,
    OfflineResult,
    OfflineValue,
    PowerInfo,
    ReportOptions,
    Settings,
)
from abeval.analysis.team_metrics import check_names, use_recorded
from abeval.analysis.verdicts import verdicts
from abeval.errors import AbevalError, NotFoundError, OptionError
from abeval.stats import srm_test
from abeval.store.experiments import (
    ExperimentSettings,
    get_settings,
    segment_attributes,
    unknown_arm_message,
    unknown_segment_message,
)
from abeval.store.shared_ctes import drop
from abeval.store.sql import (
    online_moments,
    online_pass,
    online_segments,
    online_sums,
    provenance,
)
from abeval.store.sql.online_caps import CapValue, cap_values
from abeval.store.sql.online_sums import Daily
from abeval.store.sql.online_variables import BUILTIN, Moments, VariableSet
from abeval.store.sql.population import Window

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.store.engine import Store
    from abeval.store.experiment_facts import ExperimentFacts

__all__ = ["ReportOptions", "build_report"]


@dataclass(frozen=True)
class _Observed:
    """What the store holds for one report: arms (control first), per-arm moments,
    health counts, the daily and per-segment moments, and the ingests."""

    settings: ExperimentSettings
    control: str
    control_rule: ControlRule
    arms: list[str]
    window: Window
    caps: dict[str, CapValue]
    moments: dict[str, Moments]
    health: Health
    daily: Daily
    #: Each day's activity alone, of the users enrolled by then (``daily``'s days).
    own_days: Daily
    segments: dict[str, dict[str, Moments]]
    ingests: tuple[dict[str, Any], ...]
    variables: VariableSet = BUILTIN
    #: What the report calls a team metric's capped variable.
    labels: dict[str, str] = field(default_factory=dict)

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
    from abeval.analysis.session import ExperimentSession

    o = o or ReportOptions()
    with ExperimentSession(store, experiment, o) as session:
        o = session.options  # under the saved configuration, when the run reads it
        seen = session.observed
        control, treatments = seen.control, seen.treatments
        results = session.comparisons
        # The replay reads the population (and window) of the online pass.
        offline, offline_values, offline_status = session.offline
        ope = session.ope
        power = session.power
        judged, basis, progress = session.judged
        guardrails = session.guardrail_power
        place = session.place
    predicted = predicted_results(store, experiment, control, treatments, results)
    segments, segment_warning = segment_results(seen.segments, control, o)
    decided = decisions(judged, seen.health, power, o, basis=basis, progress=progress)
    report = ExperimentReport(
        schema_version=SCHEMA_VERSION,
        abeval_version=__version__,
        generated_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        experiment=experiment,
        store=store.display,
        decisions=decided,
        settings=_settings(seen, o),
        arms=_arm_infos(seen),
        health=seen.health,
        caps=cap_infos(seen.caps, seen.labels),
        verdicts=verdicts(results, seen.health, o, decided),
        metrics=tuple(results),
        daily=daily_points(seen.daily, seen.own_days, control, treatments, o),
        segments=segments,
        segment_warning=segment_warning,
        power=power,
        offline=offline,
        offline_values=offline_values,
        offline_status=offline_status,
        methodology=_methodology(seen, o),
        ope=ope,
        predicted=predicted,
        guardrail_power=guardrails,
    )
    return with_source(report, place)


def days_observed(seen: _Observed) -> int:
    """The calendar days (UTC) from the first exposure to the last analysed event,
    both counted: the days of the daily series, else of the health counts."""
    first, last = (seen.daily[0][0], seen.daily[-1][0]) if seen.daily else (None, None)
    if first is None or last is None:
        first, last = seen.health.first_ts, seen.health.last_ts
    if first is None or last is None:
        return 0
    days = datetime.fromisoformat(last).date() - datetime.fromisoformat(first).date()
    return days.days + 1


def guardrail_powers(
    plain: PlainStats, power: tuple[PowerInfo, ...], treatments: list[str], o: ReportOptions
) -> tuple[GuardrailPower, ...]:
    """The non-inferiority plan of every guardrail with a margin, against the recorded
    plan's users, else the users the primary metrics need for the target MDE."""
    planned: tuple[int | None, str] = (o.plan_users, "plan")
    if o.plan_users is None:
        needs = [p.needed_for_target.total_users for p in power]
        known = [n for n in needs if n is not None]
        planned = (max(known) if known else None, "target_mde")
    family = len(o.guardrails) * len(treatments)
    rows = (
        guardrail_power(name, arm, plain[(name, arm)], 1 + len(treatments), planned, o, family)
        for name in o.guardrails
        for arm in treatments
        if (name, arm) in plain
    )
    return tuple(r for r in rows if r is not None)


def _observe(
    conn: Connection, experiment: str, o: ReportOptions, facts: ExperimentFacts | None = None
) -> tuple[_Observed, list[str]]:
    """Read the experiment from the store: its settings and arms (from ``facts``
    when read already), then, over the population computed once, the moments,
    health, daily and segment breakdowns; and the temporary table of the
    population, kept for the replay (drop it after)."""
    settings = facts.settings if facts is not None else get_settings(conn, experiment)
    if len(settings.arms) < 2:
        raise AbevalError(
            f"experiment {experiment!r} has one arm ({settings.arms[0]}): nothing to compare; "
            "check the arm column of the events"
        )
    control, rule = choose_control(settings.arms, settings.control_arm, o.control, experiment)
    if o.segment is not None:
        known = segment_attributes(conn, experiment)
        if o.segment not in known:
            message = unknown_segment_message(experiment, o.segment, known)
            raise OptionError("segment", o.segment, message, allowed=tuple(known))
    arms = [control] + [a for a in settings.arms if a != control]
    window = _window(settings, o)
    recorded, variables = use_recorded(conn)
    variables = variables.keyed_for(conn.dialect.name)
    check_names(o)
    base, temporary = online_pass.shared(conn, experiment, o.cuped_days, window, variables)
    variables = variables.plus(copies(o.caps))  # columns of user_metrics, not of user_day
    kept = [t for t in temporary if t.endswith("_population")]
    try:
        quantiles = {**recorded.caps, **variable_quantiles(o.caps)}
        caps = cap_values(conn, experiment, quantiles, base, variables) if quantiles else {}
        capped = _cap_values(caps)
        sums = online_sums.online_sums(
            conn, experiment, o.cuped_days, base, capped, variables, window, o.daily
        )
        moments = sums.moments
        if control not in moments:
            raise AbevalError(
                f"control arm {control!r} of {experiment!r} has no analysed users; "
                f"arms with users: {', '.join(sorted(moments)) or 'none'}"
            )
        users = {a: moments[a].n if a in moments else 0 for a in arms}
        weights = [settings.split.get(a, 0.0) for a in arms] if settings.split else None
        health = _health(sums.health, users, weights, arms)
        daily, own_days = sums.daily, sums.own_days
        segments = (
            online_segments.segment_moments(
                conn, experiment, o.segment, o.cuped_days, base, capped, variables
            )
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
        control_rule=rule,
        arms=arms,
        window=window,
        caps=caps,
        moments=moments,
        health=health,
        daily=daily,
        own_days=own_days,
        segments=segments,
        ingests=facts.ingests if facts is not None else provenance.ingests(conn, experiment),
        variables=variables,
        labels=recorded.labels | copy_labels(o.caps),
    )
    return observed, kept


def choose_control(
    arms: list[str],
    recorded: str | None,
    asked: str | None,
    exp: str,
    parameter: str | None = "control",
) -> tuple[str, ControlRule]:
    """The control arm and the rule that chose it (docs/metrics.md#control-arm): the
    one asked for, else the recorded one, else the arm named ``control``; never a guess.
    ``parameter`` names the option that chooses it (an :class:`OptionError` for it
    when the arm asked for is unknown or none can be chosen); None when none does."""
    if asked is not None:
        if asked not in arms:
            message = unknown_arm_message(exp, asked, arms)
            if parameter is None:
                raise NotFoundError(message)
            raise OptionError(parameter, asked, message, allowed=tuple(arms))
        return asked, "option"
    if recorded and recorded in arms:
        return recorded, "recorded"
    if "control" in arms:
        return "control", "named_control"
    message = (
        f"experiment {exp!r} has no recorded control and no arm named 'control' "
        f"(arms: {', '.join(arms)}); {'name one, or ' if parameter else ''}"
        f"record it with `abeval experiment set {shlex.quote(exp)} --control ARM`"
    )
    if parameter is None:
        raise AbevalError(message)
    raise OptionError(parameter, None, message, allowed=tuple(arms))


def _window(settings: ExperimentSettings, o: ReportOptions) -> Window:
    """The analysis window: each bound from the option, else the recorded one."""
    window = Window(o.window_from or settings.window_from, o.window_to or settings.window_to)
    if window.start is not None and window.end is not None and window.start >= window.end:
        raise OptionError(
            "window_to" if o.window_to is not None else "window_from",
            None,
            f"the analysis window of {settings.experiment!r} is empty: from "
            f"{window.start.isoformat()} to {window.end.isoformat()}; give an end after the "
            "start (the recorded window: `abeval experiment show "
            f"{shlex.quote(settings.experiment)}`)",
        )
    return window


def _cap_values(caps: dict[str, CapValue]) -> dict[str, float]:
    return {v: c.cap for v, c in caps.items() if c.cap is not None}


def _health(
    raw: dict[str, Any], users: dict[str, int], weights: list[float] | None, arms: list[str]
) -> Health:
    """The health counts (:func:`abeval.store.sql.online_health.health`) with the sample
    ratio test and the problems they show."""
    srm = srm_test([users.get(a, 0) for a in arms], weights)
    problems = []
    if srm.flagged:
        counts = ", ".join(f"{a} {users.get(a, 0):,}" for a in arms)
        why = srm.message if srm.p_value is None else f"p = {srm.p_value:.2g}"
        problems.append(
            f"Sample ratio mismatch: users per arm {counts} "
            f"differ from the expected split ({why}). Assignment or logging is "
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


def _settings(seen: _Observed, o: ReportOptions) -> Settings:
    family = len(o.primary) * len(seen.treatments)
    return Settings(
        control=seen.control,
        control_rule=seen.control_rule,
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
        relative_interval=o.relative_interval,
        window_from=seen.window.start.isoformat() if seen.window.start else None,
        window_to=seen.window.end.isoformat() if seen.window.end else None,
        window_rule=_window_rule(seen, o),
        caps=dict(o.caps),
        sources=_sources(seen, o),
        margins=dict(o.margins),
        secondary=o.secondary,
        plan_users=o.plan_users,
        plan_days=o.plan_days,
        planning_alpha=planning_alpha(o.alpha, family),
        planning_rule=planning_rule(o.correction, family),
    )


def _sources(seen: _Observed, o: ReportOptions) -> dict[str, str]:
    """Where each setting came from: ``flag``, ``record`` or ``default``."""
    rules = {"option": "flag", "recorded": "record", "named_control": "default"}
    out = {"control": rules[seen.control_rule]}
    window = _window_rule(seen, o)
    out["window"] = "default" if window is None else "flag" if "option" in window else "record"
    return out | dict(o.sources)


def _window_rule(seen: _Observed, o: ReportOptions) -> str | None:
    """Where the window's bounds came from: ``option``, ``recorded``, or both."""
    if not seen.window:
        return None
    asked = o.window_from is not None or o.window_to is not None
    recorded = seen.settings.window_from is not None or seen.settings.window_to is not None
    return "option and recorded" if asked and recorded else "option" if asked else "recorded"


def _methodology(seen: _Observed, o: ReportOptions) -> Methodology:
    return Methodology(
        sql=online_moments.arm_moments_sql(
            o.cuped_days, caps=_cap_values(seen.caps), window=seen.window, variables=seen.variables
        ),
        sufficient_statistics={a: _moments_dict(m) for a, m in seen.moments.items()},
        ingests=seen.ingests,
        notes=_notes(o) + _window_and_cap_notes(seen),
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
    n_arms = 1 + len(treatments)
    family = len(o.primary) * len(treatments)
    out = [
        power_info(name, arm, plain[(name, arm)], n_arms, users_per_day, o, family)
        for name in o.primary
        for arm in treatments
    ]
    return tuple(out)


def _offline(
    conn: Connection,
    experiment: str,
    control: str,
    treatments: list[str],
    o: ReportOptions,
    population: list[str],
    shown_once: bool = False,
) -> tuple[tuple[OfflineResult, ...], tuple[OfflineValue, ...], str]:
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


def _relative_note(o: ReportOptions) -> str:
    if o.relative_interval == "delta":
        return (
            "Relative lift = (treatment − control) / |control| with delta-method variance that "
            "includes the control's uncertainty (gbstats), its own p-value."
        )
    return (
        "Relative lift = (treatment − control) / |control|; its interval by Fieller's theorem, "
        "so it excludes 0 exactly when the absolute test's p-value (shared by both scales) is "
        "below alpha; unbounded when the control mean cannot be told from 0; never below "
        "-100%."
    )


def _window_and_cap_notes(seen: _Observed) -> tuple[str, ...]:
    notes = []
    w = seen.window
    if w:
        start = w.start.isoformat(sep=" ") if w.start else "the first event"
        end = w.end.isoformat(sep=" ") if w.end else "the last event"
        notes.append(
            f"Analysis window: events from {start} (included) to {end} (excluded), UTC; "
            f"{seen.health.events_outside_window:,} events outside it are not analysed, "
            "online or replayed."
        )
    for c in seen.caps.values():
        value = f"{c.cap:.6g}" if c.cap is not None else "undefined (no users)"
        name = seen.labels.get(c.variable, c.variable)
        notes.append(
            f"Capping: per-user {name} capped at its {c.quantile:g} quantile over both "
            f"arms, {value}; {sum(c.users_capped.values()):,} users were above it. The CUPED "
            "covariate is not capped."
        )
    return tuple(notes)


def _notes(o: ReportOptions) -> tuple[str, ...]:
    notes = [
        "Randomisation unit: user. Users are analysed in the arm of their first exposure "
        "(or first event when the experiment logs no exposures); users seen in several arms "
        "are left out.",
        "Per-user metrics are compared with Welch's t test; CTR and average order value are "
        "ratio metrics whose variance comes from the delta method with the covariance term.",
        _relative_note(o),
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
    notes.append(
        "Decision per treatment arm, first rule that applies: invalid on a flagged sample "
        "ratio or a primary metric that could not be compared; roll back when a primary "
        "metric or a guardrail is significantly worse; ship when a primary metric is "
        "significantly better (keep running if a guardrail could not be checked); no effect "
        f"when every primary metric's interval lies within ±{o.target_mde:.0%} or its test "
        f"reached {o.power:.0%} power for ±{o.target_mde:.0%}; else keep running."
    )
    return tuple(notes)
