"""The forecast as terminal text (``abeval forecast``, the default format):
per online metric, the forecast, what it learned from and the test it needs.
Nothing here computes a statistic."""

from __future__ import annotations

import math

from abeval.analysis.forecast import ForecastReport, MetricForecast
from abeval.analysis.forecast_choice import (
    GO_P,
    NO_GO_P,
    Recommendation,
    SignalChoice,
    Traffic,
)
from abeval.formatting import count, days_text, fixed, interval, pct, printable, share
from abeval.report.words import said

#: Why the board's best signal was passed over (:func:`choice_line`), by the code
#: the analysis gives (a fit's status, or ``no_lift``).
PASSED_OVER = {
    "no_lift": "the candidate has no lift on it",
    "too_few_experiments": "it has too few experiments",
    "noise_only": "its offline lifts are their noise",
    "no_variation": "its offline lifts do not vary",
}

#: The go / no-go's verdict in words (docs/usage.md#forecast-the-online-lift).
VERDICT = {"go": "Go: test it", "test_if_cheap": "Test if cheap", "no_go": "No-go"}


def tau_range(ci: tuple[float, float] | None) -> str:
    """τ's Q-profile confidence interval, unsigned: ``[0.02%, 1.99%]``."""
    return "n/a" if ci is None else f"{share(ci[0], 2)} to {share(ci[1], 2)}"


def learned_line(m: MetricForecast) -> str:
    """What the model learned: k, the slope with its interval, τ, the carry-over."""
    f = m.fit
    if f.slope is None:
        return f"Learned from {f.k} experiments: {f.message}"
    slope_ci = (
        ""
        if f.slope_interval is None
        else (f" [{fixed(f.slope_interval[0], 2)}, {fixed(f.slope_interval[1], 2)}]")
    )
    return (
        f"Learned from {f.k} experiments: slope {fixed(f.slope, 2)}{slope_ci} "
        f"(about {share(f.slope, 0)} of an offline lift carries over), "
        f"τ {share(f.tau, 2)} (REML; {share(1 - f.alpha, 0)} Q-profile range "
        f"{tau_range(f.tau_interval)})"
    )


def _rho(c: SignalChoice) -> str:
    if c.spearman is None:
        return ""
    ci = (
        ""
        if c.spearman_ci is None
        else f" [{fixed(c.spearman_ci[0], 2)}, {fixed(c.spearman_ci[1], 2)}]"
    )
    over = "" if c.experiments is None else f" over {c.experiments} experiments"
    return f"ρ {fixed(c.spearman, 2)}{ci}{over}"


def choice_reason(m: MetricForecast) -> str:
    """Why the forecast is from its signal: ``the board's best predictor of ctr (ρ
    0.82 [0.41, 0.95] over 12 experiments; leave-one-out gain +0.31)``; empty
    when the forecast does not say."""
    c = m.choice
    if c is None:
        return ""
    rho = _rho(c)
    gain = ""
    if c.value is not None and c.criterion == "predictive_gain":
        gain = f"leave-one-out gain {c.value:+.2f}"
    elif c.value is not None and c.criterion == "familywise_p":
        gain = f"family-wise p {fixed(c.value, 3)}"
    how = "; ".join(x for x in (rho, gain) if x)
    said = f" ({how})" if how else ""
    if c.reason == "given":
        board = "" if c.rank is None else f" (rank {c.rank} on the board for {m.metric}"
        board += f": {how})" if board and how else (")" if board else "")
        return f"given by --signal{board}"
    if c.reason == "only_signal":
        return f"the history's only signal for {m.metric}"
    if c.reason == "best_on_board":
        return f"the board's best predictor of {m.metric}{said}"
    rank = "" if c.rank is None else f", rank {c.rank}"
    if c.best is None:
        return (
            f"the board names no best predictor of {m.metric}; this is the best-ranked "
            f"one the forecast can use{rank}"
        )
    why = PASSED_OVER.get(c.passed_over or "", "the model could not fit it")
    return (
        f"the board's best predictor of {m.metric}, {printable(c.best or '')}, was passed "
        f"over ({why}); this is the best-ranked one the forecast can use{rank}{said}"
    )


def choice_line(m: MetricForecast) -> str:
    """Which signal the forecast is from and why: ``ctr, from snips: the board's
    best predictor of ctr (ρ 0.82 [0.41, 0.95] over 12 experiments; ...)``."""
    head = f"{m.metric}, from {printable(m.signal)}"
    reason = choice_reason(m)
    return f"{head}: {reason}" if reason else head


def recommendation_line(r: Recommendation, target: float) -> str:
    """The go / no-go with the numbers its rule read: ``Go: test it. P(lift > 0)
    97.4% ≥ 80%, and 80% assurance takes 50,536 users, 23.6 days ≤ 28``."""
    p = f"P(lift > 0) {share(r.p_positive)}"
    if r.verdict == "no_forecast":
        return "No go / no-go: no forecast"
    if r.verdict == "no_go":
        return f"{VERDICT['no_go']}: {p} < {share(r.no_go_p, 0)}"
    size = f"{share(target, 0)} assurance"
    if r.users is None:
        takes = f"no test reaches {size}" if r.p_positive is not None else ""
        takes = takes or f"the users for {size} are unknown"
    elif r.days is None:
        takes = f"{size} takes {count(r.users)} users, days unknown (give --users-per-day)"
    else:
        sign = "≤" if r.feasible else ">"
        takes = (
            f"{size} takes {count(r.users)} users, {r.days:,.1f} days "
            f"{sign} {r.max_days:g} (--max-days)"
        )
    if r.verdict == "go":
        return f"{VERDICT['go']}. {p} ≥ {share(r.go_p, 0)}, and {takes}"
    if r.p_positive is not None and r.p_positive >= r.go_p:
        return f"{VERDICT['test_if_cheap']}: {p} ≥ {share(r.go_p, 0)}, but {takes}"
    between = f"between {share(r.no_go_p, 0)} and {share(r.go_p, 0)}"
    return f"{VERDICT['test_if_cheap']}: {p} is {between}; {takes}"


def rule_text(max_days: float) -> str:
    """The go / no-go's rule in words."""
    return (
        f"Go / no-go: go when P(lift > 0) is at least {share(GO_P, 0)} and a test of the "
        f"target assurance takes at most {max_days:g} days (--max-days); no-go when "
        f"P(lift > 0) is below {share(NO_GO_P, 0)}; otherwise test if cheap"
    )


#: How many of the experiments behind the traffic the line names.
_NAMED = 4


def traffic_line(t: Traffic) -> str:
    """Where the users per day of a new test come from."""
    if t.source == "given" and t.users_per_day is not None:
        return f"Traffic: {t.users_per_day:,.0f} users a day (given with --users-per-day)"
    if t.source == "median_of_experiments" and t.users_per_day is not None:
        shown = ", ".join(t.names[:_NAMED])
        more = f" and {len(t.names) - _NAMED} more" if len(t.names) > _NAMED else ""
        return (
            f"Traffic: {t.users_per_day:,.0f} users a day: the median of {t.experiments} "
            f"experiment{'s' if t.experiments != 1 else ''} measuring {t.metric}"
            + (f" ({shown}{more})" if shown else "")
            + ", each over its days from first exposure to last event (--users-per-day "
            "sets it)"
        )
    return "Traffic: unknown (give --users-per-day)"


def test_line(m: MetricForecast) -> str:
    """The users (and days) a test needs for the target assurance."""
    a = m.assurance
    if a is None:
        return (
            "Test size: unknown (the history gives no test's users; a history file's users column)"
        )
    if a.users is None:
        return f"Test size: {a.message}"
    days = (
        ""
        if m.days is None or m.users_per_day is None
        else (f", {days_text(m.days, m.users_per_day)}")
    )
    looks = f", {a.looks} daily looks" if a.looks > 1 else ""
    if a.looks > 1 and m.days is not None and math.ceil(m.days) > a.looks:
        looks = f", the first {a.looks} of {math.ceil(m.days)} daily looks counted"
    return (
        f"Test size: {count(a.users)} users for {share(a.target, 0)} assurance{days} "
        f"(alpha {a.alpha:.3g}{looks})"
    )


def forecast_lines(m: MetricForecast, level: str, target: float) -> list[str]:
    p = m.forecast
    head = choice_line(m)
    if p.status != "ok":
        return [head, f"  no forecast: {said(p.status, p.message)}"]
    go = [] if m.recommendation is None else [f"  {recommendation_line(m.recommendation, target)}"]
    speed = [] if m.traffic is None else [f"  {traffic_line(m.traffic)}"]
    return [
        head,
        *go,
        f"  offline lift {pct(p.offline_lift)} (se {share(p.offline_se, 2)}) → online lift "
        f"{pct(p.point)}, {level} prediction interval {interval(p.interval)}",
        f"  P(lift > 0) {share(p.p_positive)} · P(lift > {pct(p.mde)}) {share(p.p_above_mde)}",
        f"  {learned_line(m)}",
        *influence_line(m),
        f"  {test_line(m)}",
        *speed,
    ]


def influence_line(m: MetricForecast) -> list[str]:
    """One line when a past experiment is outlying (``Forecast.influence``)."""
    found = m.forecast.influence
    if found is None or not found.flagged or found.point is None:
        return []
    return [
        f"  Outlier: {printable(found.experiment)} measured {pct(found.observed)} where the "
        f"others forecast {pct(found.expected)} (p {found.p_value:.2g}); without it: "
        f"{pct(found.point)}, interval {interval(found.interval)}"
    ]


def render_text(report: ForecastReport) -> str:
    level = f"{1 - report.alpha:.0%}"
    lines = [
        "Forecast of the candidate's true online lift",
        f"  candidate: {printable(report.candidate)}",
        f"  history: {printable(report.history)}",
        "",
    ]
    for m in report.forecasts:
        lines += [*forecast_lines(m, level, report.target_assurance), ""]
    lines += [f"Note: {printable(n)}" for n in report.notes]
    return "\n".join(lines).rstrip() + "\n"
