"""The HTML report: one self-contained page a product team can decide from.

:func:`render_html` turns an :class:`~abeval.analysis.report_model.ExperimentReport`
into a single HTML file with inline CSS and inline SVG charts: no JavaScript, no
web fonts, nothing fetched from the network. The templates live in the top-level
``reports/`` folder (``report.html.j2`` extending ``base.html.j2``,
``_macros.html.j2``, ``report.css``), rendered with the environment of
:mod:`abeval.report.templates`.

The page is rendered from one object, :class:`~abeval.report.html_context.ReportContext`,
built by :func:`build_context` from the section builders of
:mod:`abeval.report.html_sections`. It holds the report itself (every number on
the page is read from it) plus presentation decisions: which table a metric goes
in, which interval is drawn, where a bar or a line falls in pixels, which colour a
row gets. Nothing here computes a statistic; numbers become text through the Jinja
filters of :mod:`abeval.formatting`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from abeval.analysis.report_model import ExperimentReport
from abeval.formatting import count, share, when
from abeval.report.decision_text import (
    basis_sentence,
    guardrail_power_line,
    guardrail_sentence,
    sources_line,
)
from abeval.report.html_context import DecisionCard, ReportContext, VerdictLine
from abeval.report.html_sections import (
    daily_users_chart,
    freshness,
    health_checks,
    lift_charts,
    metric_label,
    metric_tables,
    offline_table,
    power_lines,
    segment_table,
    statistics_table,
)
from abeval.report.interleaving_text import interleaving_view
from abeval.report.method_text import basis_words, cuped_text, prior_text, test_span
from abeval.report.offline_view import offline_status_text
from abeval.report.ope_context import ope_context
from abeval.report.predicted_context import predicted_context
from abeval.report.templates import environment
from abeval.report.text import CONTROL_RULES
from abeval.report.words import decision_reason, store_shown

__all__ = ["ReportContext", "build_context", "default_path", "environment", "render_html"]

TEMPLATE = "report.html.j2"

_VERDICT_TONES = {
    "ship": "good",
    "roll_back": "bad",
    "invalid": "bad",
    "keep_running": "warn",
    "no_effect": "neutral",
}


#: Longest default file name stem, in UTF-8 bytes (file systems allow 255 for the name).
MAX_STEM_BYTES = 100


def default_path(experiment: str) -> Path:
    """``reports/<experiment>.html``, one file per experiment: a name that is a
    safe file name as it is (letters, digits, ``-_.``, lower case, no leading dot)
    stays as it is; any other name has its unsafe characters as ``_``, is cut to
    :data:`MAX_STEM_BYTES` and ends with a hash of the whole name, so that two
    names never share a file (``a/b\\c`` and ``a_b_c``; ``Exp`` and ``exp`` on a
    file system that ignores case)."""
    import hashlib

    safe = "".join(
        ch if (ch.isalnum() and ch.isprintable()) or ch in "-_." else "_" for ch in experiment
    )
    safe = safe.lstrip(".")
    as_is = (
        bool(safe)
        and safe == experiment
        and safe == safe.lower()
        and len(safe.encode()) <= MAX_STEM_BYTES
        and not _HASHED.search(safe)
    )
    if not as_is:
        digest = hashlib.sha256(experiment.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        head = safe.encode()[: MAX_STEM_BYTES - 13].decode("utf-8", "ignore")
        safe = f"{head}-{digest}" if head else digest
    return Path("reports") / f"{safe}.html"


#: The end of a name :func:`default_path` made (a name that ends so is hashed too).
_HASHED = re.compile(r"(^|-)[0-9a-f]{12}$")


def _method(report: ExperimentReport) -> str:
    """The basis in force, in words (every lift, star, verdict and colour reads it),
    how its intervals are made, CUPED and the Bayesian view."""
    s = report.settings
    words = basis_words(report)
    if s.method == "sequential":
        tuned = f", tuned at {count(s.tuning_n)} users" if s.tuning_n else ""
        how = f"confidence sequences{tuned}"
    else:
        how = "Welch t-test, delta method for ratios"
    main = f"{words[:1].upper()}{words[1:]} ({how})"
    prior = "" if s.prior == "flat" else f" (prior {prior_text(s)})"
    return f"{main} · {cuped_text(report)} · Bayesian view: chance to beat control{prior}"


def _settings(report: ExperimentReport) -> tuple[tuple[str, str], ...]:
    s = report.settings
    rows = [
        ("Control arm", f"{s.control} ({CONTROL_RULES.get(s.control_rule, s.control_rule)})"),
        ("Randomisation unit", s.unit),
        ("Significance level α", f"{s.alpha:g} (two-sided)"),
        (
            "Multiple-testing correction",
            {"holm": "Holm", "bh": "Benjamini–Hochberg"}.get(s.correction, s.correction),
        ),
        ("Method", s.method),
        ("Sequential tuning n", count(s.tuning_n) if s.tuning_n else "not sequential"),
        ("CUPED pre-period", f"{s.cuped_days} days" if s.cuped_days else "off"),
        ("Bayesian view's prior", prior_text(s)),
        ("Primary metrics", ", ".join(s.primary)),
        ("Guardrails", ", ".join(s.guardrails) or "none"),
        ("Segment", s.segment or "none"),
        (
            "Analysis window",
            f"{s.window_from or 'first event'} to {s.window_to or 'last event'} (excluded; "
            f"{s.window_rule})"
            if s.window_rule
            else "all events",
        ),
        (
            "Outlier capping",
            ", ".join(f"{k} at the {v:g} quantile" for k, v in s.caps.items()) or "none",
        ),
        ("Target effect (MDE)", share(s.target_mde, 1)),
        ("Power", share(s.power, 0)),
        ("Store", report.store),
        ("Report schema", report.schema_version),
    ]
    return tuple(rows)


def build_context(report: ExperimentReport) -> ReportContext:
    """The one object the template renders (see :class:`ReportContext`).

    The banner's alerts are the report's health problems: the analysis adds one
    for a sample ratio mismatch whenever the test flags it."""
    control = next((a for a in report.arms if a.is_control), report.arms[0])
    total_users = sum(a.users for a in report.arms)
    first_day, last_day, days = test_span(report)
    tables = metric_tables(report)
    fresh = freshness(report)
    return ReportContext(
        report=report,
        title=f"{report.experiment} · abeval experiment report",
        control=control,
        treatments=tuple(a for a in report.arms if a is not control),
        total_users=total_users,
        first_day=first_day,
        last_day=last_day,
        days=days,
        decisions=tuple(
            DecisionCard(
                d,
                _VERDICT_TONES.get(d.decision, "neutral"),
                basis_sentence(d, report.experiment),
                tuple(guardrail_sentence(g, report.catalog) for g in d.guardrails),
                decision_reason(d, report.catalog),
            )
            for d in report.decisions
        ),
        guardrail_power=tuple(guardrail_power_line(g) for g in report.guardrail_power),
        sources=sources_line(report.settings),
        control_rule=CONTROL_RULES.get(report.settings.control_rule, report.settings.control_rule),
        method=_method(report),
        alerts=tuple(report.health.problems),
        srm_failed=report.health.srm.flagged,
        checks=health_checks(report, fresh),
        verdicts=tuple(
            VerdictLine(v, metric_label(report, v.metric), _VERDICT_TONES.get(v.verdict, "neutral"))
            for v in report.verdicts
        ),
        tables=tables,
        lift_charts=lift_charts(report),
        users_chart=daily_users_chart(report, control.arm),
        power=power_lines(report, total_users),
        offline=offline_table(report),
        offline_status=offline_status_text(report.offline_status),
        segments=segment_table(report),
        cuped=tuple(r for t in tables for r in t.rows if r.result.comparison.cuped),
        statistics=statistics_table(report),
        settings=_settings(report),
        generated=when(report.generated_at),
        freshness=fresh,
        ope=ope_context(report),
        predicted=predicted_context(report),
        interleaving=interleaving_view(report.interleaving) if report.interleaving else None,
    )


def render_html(report: ExperimentReport, *, show_store: bool = False) -> str:
    """The report as one self-contained HTML page; the store named by its kind
    unless ``show_store`` (:func:`abeval.report.words.store_shown`)."""
    shown = replace(report, store=store_shown(report.store, show_store))
    return environment().get_template(TEMPLATE).render(ctx=build_context(shown))
