"""What the store holds for one report, read once: the experiment's settings and
arms, the control chosen by its rule (docs/metrics.md#control-arm), the analysis
window, and over the population computed once the per-arm moments, the health
counts with the sample-ratio test, the daily and per-segment moments and the
caps (:class:`Observed`, made by :func:`observe`).

The experiment session (:mod:`abeval.analysis.session`) calls :func:`observe`
once; the report, the plan and the decision read the :class:`Observed` it keeps.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from abeval.analysis.capping import copies, copy_labels, variable_quantiles
from abeval.analysis.interleaving import choose_teams
from abeval.analysis.report_model import ControlRule, Health, ReportOptions
from abeval.analysis.team_metrics import check_names
from abeval.errors import AbevalError, NotFoundError, OptionError
from abeval.stats import srm_test
from abeval.store.backends import backend_of
from abeval.store.experiments import (
    ExperimentSettings,
    get_settings,
    segment_attributes,
    unknown_arm_message,
    unknown_segment_message,
)
from abeval.store.shared_ctes import drop
from abeval.store.sql import online_pass, online_segments, online_sums, provenance
from abeval.store.sql.interleaving import experiment_teams
from abeval.store.sql.online_caps import CapValue
from abeval.store.sql.online_caps import cap_values as read_cap_values
from abeval.store.sql.online_sums import Daily
from abeval.store.sql.online_variables import BUILTIN, Moments, VariableSet
from abeval.store.sql.population import Window

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from abeval.analysis.online_metrics import Catalog
    from abeval.store.experiment_facts import ExperimentFacts

__all__ = ["Observed", "cap_values", "choose_control", "days_observed", "observe"]


@dataclass(frozen=True)
class Observed:
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
    #: (A, B) of an interleaved experiment (one arm, impressions naming a team).
    teams: tuple[str, str] | None = None

    @property
    def treatments(self) -> list[str]:
        """The arms compared with control: those with analysed users."""
        return [a for a in self.arms[1:] if a in self.moments]

    @property
    def weights(self) -> list[float] | None:
        """The recorded split per arm, if any."""
        split = self.settings.split
        return [split.get(a, 0.0) for a in self.arms] if split else None


def days_observed(seen: Observed) -> int:
    """The calendar days (UTC) from the first exposure to the last analysed event,
    both counted: the days of the daily series, else of the health counts."""
    first, last = (seen.daily[0][0], seen.daily[-1][0]) if seen.daily else (None, None)
    if first is None or last is None:
        first, last = seen.health.first_ts, seen.health.last_ts
    if first is None or last is None:
        return 0
    days = datetime.fromisoformat(last).date() - datetime.fromisoformat(first).date()
    return days.days + 1


def observe(
    conn: Connection,
    experiment: str,
    o: ReportOptions,
    catalog: Catalog,
    facts: ExperimentFacts | None = None,
) -> tuple[Observed, list[str]]:
    """Read the experiment from the store: its settings and arms (from ``facts``
    when read already), the metrics of the store's ``catalog`` the options name
    checked, then, over the population computed once, the moments,
    health, daily and segment breakdowns; and the temporary table of the
    population, kept for the replay (drop it after)."""
    settings = facts.settings if facts is not None else get_settings(conn, experiment)
    teams: tuple[str, str] | None = None
    if len(settings.arms) < 2:
        # one arm: an interleaved experiment (docs/metrics.md#interleaving) or a mistake
        named = experiment_teams(conn, experiment)
        if not named:
            raise AbevalError(
                f"experiment {experiment!r} has one arm ({settings.arms[0]}): nothing to "
                "compare; check the arm column of the events"
            )
        teams = choose_teams(named, o.control, experiment)
        control, rule = settings.arms[0], cast(ControlRule, "recorded")
    else:
        control, rule = choose_control(settings.arms, settings.control_arm, o.control, experiment)
    if o.segment is not None:
        known = segment_attributes(conn, experiment)
        if o.segment not in known:
            message = unknown_segment_message(experiment, o.segment, known)
            raise OptionError("segment", o.segment, message, allowed=tuple(known))
    arms = [control] + [a for a in settings.arms if a != control]
    window = _window(settings, o)
    check_names(o, catalog)
    variables = catalog.variables.keyed_for(backend_of(conn))
    base, temporary = online_pass.shared(conn, experiment, o.cuped_days, window, variables)
    variables = variables.plus(copies(o.caps))  # columns of user_metrics, not of user_day
    kept = [t for t in temporary if t.endswith("_population")]
    try:
        quantiles = {**catalog.caps, **variable_quantiles(o.caps, catalog)}
        caps = read_cap_values(conn, experiment, quantiles, base, variables) if quantiles else {}
        capped = cap_values(caps)
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
    observed = Observed(
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
        labels=dict(catalog.labels) | copy_labels(o.caps),
        teams=teams,
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


def cap_values(caps: dict[str, CapValue]) -> dict[str, float]:
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
