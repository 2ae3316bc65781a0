"""The sentence every status code of a result reads as on a page or in text.

Results carry codes (``zero_baseline``, ``too_few_experiments``,
``personalised_target``) and keep them in JSON; every headline, card and text
line says them with :func:`said` instead, so a reader never meets a code. One
table for every code of every result (tests/report/test_words.py walks the results'
``Literal`` types and checks each value has a sentence here). A result's own
``message``, where it has one, says more than the code and is preferred.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abeval.report.ope_words import HEADLINE_REASONS

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
    from abeval.analysis.report_model import Decision

#: Code → sentence, without a capital or a full stop so it reads inside a line.
STATUS_WORDS: dict[str, str] = {
    # Every comparison (abeval.stats.results.Status) and power calculation.
    "ok": "computed",
    "invalid_input": "a sum is not a finite number or a count is negative, so nothing "
    "could be computed",
    "empty_arm": "an arm has no users",
    "too_few_users": "an arm has too few users to estimate a variance",
    "zero_denominator": "the ratio's denominator sums to 0 in an arm",
    "zero_variance": "both arms are constant, so the lift has no variance",
    "zero_baseline": "the control's value is 0, so there is no relative lift",
    "unreachable": "no test of this size can reach the asked power",
    # A team metric whose event type has not been ingested yet, or that failed.
    "no_events": "its events have not arrived yet",
    "failed": "its definition could not be read or computed; its row says why and how to fix it",
    # The sample ratio test.
    "no_users": "no users were analysed",
    "single_arm": "only one arm has users",
    # The off-policy estimates.
    "no_data": "there is no data for it",
    "out_of_range": "the estimate falls outside the metric's range",
    "no_given_above": "the logs carry no step probabilities",
    "incomplete_candidates": "the target probabilities lack candidate items at some positions",
    "not_requested": "not requested",
    "no_propensities": "the logs carry no propensities",
    "personalised_target": "the target arm's logged propensities vary between requests, "
    "so its context-free frequency stands in for probabilities that depend on the request",
    "unreliable": "too few effective users, or weights too skewed, for a reliable interval",
    "normal": "normal interval",
    "skew_corrected": "Hall's skewness-corrected interval, as the weights over users are skewed",
    "prediction": "a prediction from the target's given probabilities",
    "post_hoc": "post hoc: the target arm's own logged frequencies stand in for its probabilities",
    # The agreement board, the forecast and the assurance.
    "too_few_experiments": "too few experiments to judge",
    "no_variation": "the lifts do not vary across experiments",
    "noise_only": "the offline lifts are indistinguishable from noise",
    "no_forecast": "there is no forecast to plan from",
    "too_few_points": "too few lifts",
    # A prior learned from the store's other experiments (report --prior history).
    "used": "the prior learned from the store's other experiments is used",
    "too_few": "too few other experiments to learn a prior from: the flat prior is used",
    "no_signal_variance": "the lifts are all noise",
    "ceiling_too_small": "the noise ceiling is too small to divide by",
    "no_signals": "no signals were found",
    "skipped": "skipped",
    "not_independent": "the best signal is not independent evidence of the online lift",
    "weak_signal": "the offline lifts vary no more than their noise, so the forecast "
    "leaves them out",
    "baseline": "the forecast without the offline lift, for comparison",
    "no_value": "one side has no value",
    "no_se": "one side has no standard error",
    # Why the forecast used its signal.
    "given": "given with --signal",
    "best_on_board": "the board's best predictor",
    "next_on_board": "the next on the board, as the best could not be used",
    "only_signal": "the only signal",
    # Interleaving.
    "no_requests": "no interleaved request has a credited click",
    "ranker_preferred": "the interval of Δ_AB excludes 0",
    "no_preference": "the interval of Δ_AB includes 0, so neither ranker is preferred",
    "undetermined": "no preference could be estimated",
    "no_preference_given": "the experiment shows no preference to plan for: give the "
    "preference to detect",
    # The predicted lift of the report.
    "none_recorded": "no evaluation is recorded for it",
    "other_baseline": "the recorded evaluation compared another baseline",
    # Fieller intervals.
    "bounded": "bounded",
    "clipped": "clipped at the range of the ratio",
    "unbounded": "unbounded: the control's value is not significantly different from 0",
    # Where the target's probabilities came from (the off-policy section).
    "file": "from this run's file",
    "recorded": "recorded for the experiment",
    "none": "none given",
    # A guardrail's reading.
    "passed": "passed",
    "worse": "significantly worse",
    "underpowered": "underpowered",
    "unchecked": "could not be checked",
    # What became of an experiment (experiment set --status).
    "running": "running",
    "shipped": "shipped",
    "rolled_back": "rolled back",
    "abandoned": "abandoned",
    # Agreement consistency.
    "consistent": "consistent",
    "inconsistent": "inconsistent",
    # Why the off-policy headline estimator is the one judged.
    **HEADLINE_REASONS,
}


def said(code: str, message: str = "") -> str:
    """What ``code`` means, in words: the result's own ``message`` when it has one,
    else the table's sentence (an unknown code with its underscores as spaces)."""
    if message:
        return message
    return STATUS_WORDS.get(code, code.replace("_", " "))


def metric_status(metric: str, status: str, catalog: Catalog) -> str:
    """Why ``metric`` could not be compared: ``no events of type add_to_cart yet`` for
    a team metric waiting for its events, else the status's sentence."""
    if status == "no_events":
        from abeval.analysis.team_metrics import no_events

        return no_events(metric, catalog) or said(status)
    return said(status)


def decision_reason(d: Decision, catalog: Catalog) -> str:
    """The decision's reason, followed, when it is invalid because primary metrics
    could not be compared, by why each could not, in words."""
    if d.decision != "invalid":
        return d.reason  # a guardrail left unchecked says why on its own line
    broken = {i.metric: i.status for i in d.primaries if i.status not in ("ok", "no_events")}
    if not broken:
        return d.reason
    why = "; ".join(
        f"{catalog.label(metric)}: {metric_status(metric, status, catalog)}"
        for metric, status in broken.items()
    )
    return f"{d.reason} ({why})"


#: A store URL's scheme → the kind of store a shared page names.
STORE_KINDS = {
    "duckdb": "DuckDB",
    "postgresql": "PostgreSQL",
    "postgres": "PostgreSQL",
    "sqlite": "SQLite",
    "sc": "Spark",
    "spark": "Spark",
}


def store_kind(display: str) -> str:
    """``DuckDB store`` for a file path or ``duckdb:///...``, ``PostgreSQL store`` for
    ``postgresql+psycopg://...``: what a page shared beyond this machine says of the
    store, without its path or address."""
    scheme, sep, _ = display.partition("://")
    if not sep:
        return "DuckDB store"  # --db takes a DuckDB file path or a URL
    base = scheme.split("+")[0].lower()
    return f"{STORE_KINDS.get(base, base)} store"


def store_shown(display: str, show: bool) -> str:
    """The store as a page shows it: its (masked) place with ``--show-store``, else
    its kind. A board read from a history file (``history file PATH``) names it."""
    if show or display.startswith("history file "):
        return display
    return store_kind(display)


def history_shown(history: str, show: bool) -> str:
    """Where a forecast's history came from, as its page shows it: a file as given;
    ``the store PLACE`` as the store's kind unless ``show``."""
    if show or not history.startswith("the store "):
        return history
    return f"the {store_kind(history.removeprefix('the store '))}"


#: The lift a capped metric is said to read for: the +5% of the issue's review.
CAPPED_EXAMPLE_LIFT = 0.05


def capping_bias(kept: float | None) -> str:
    """What a cap does to a lift, with its size from the data
    (:attr:`CapInfo.lift_kept <abeval.analysis.report_model.CapInfo.lift_kept>`):
    ``the cap keeps about 54% of a lift that scales every user's value: a true
    +5.0% reads about +2.7%``; empty when unknown."""
    if kept is None:
        return ""
    reads = CAPPED_EXAMPLE_LIFT * kept
    return (
        f"the cap keeps about {kept:.0%} of a lift that scales every user's value: "
        f"a true {CAPPED_EXAMPLE_LIFT:+.1%} reads about {reads:+.1%}"
    )
