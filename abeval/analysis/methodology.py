"""The report's methodology section: the SQL that computed the per-arm sums, the
sums themselves, the ingests the data came from, and one note on every
convention the report applied (randomisation unit, tests, relative lifts,
multiple testing, CUPED, sequential, the decision rule, the window and the caps),
so any number on the page can be recomputed by hand."""

from __future__ import annotations

from typing import Any

from abeval.analysis.observation import Observed, cap_values
from abeval.analysis.report_model import Methodology, ReportOptions
from abeval.store.sql import online_moments
from abeval.store.sql.online_variables import Moments

__all__ = ["methodology"]


def methodology(seen: Observed, o: ReportOptions) -> Methodology:
    return Methodology(
        sql=online_moments.arm_moments_sql(
            o.cuped_days, caps=cap_values(seen.caps), window=seen.window, variables=seen.variables
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


def _window_and_cap_notes(seen: Observed) -> tuple[str, ...]:
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
    prior = "a flat prior"
    if any(p.normal() is not None for p in o.priors):
        prior = "each metric's prior learned from the store's other experiments where shown"
    notes.append(
        f"Bayesian view: normal posterior on the lift with {prior}; chance to beat control "
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
