"""Sentences about how a decision was reached, shared by the text and HTML
reports and ``abeval power``: what the decision read (the plan, sequential or
fixed-horizon intervals), each guardrail's reading against its margin, the
guardrails' non-inferiority plan, and where each setting came from
(docs/metrics.md#decision, docs/usage.md#saved-configuration)."""

from __future__ import annotations

import math

from abeval.analysis.online_metrics import Catalog
from abeval.analysis.report_model import (
    Decision,
    DecisionInput,
    GuardrailPower,
    PlanProgress,
    PowerInfo,
    Settings,
)
from abeval.formatting import count, share
from abeval.report.words import metric_status, said


def progress_text(p: PlanProgress) -> str:
    """``day 7 of 14, 48% of the planned users (9,600 of 20,000)``."""
    parts = []
    if p.plan_days is not None:
        parts.append(f"day {p.days} of {p.plan_days}")
    if p.plan_users is not None:
        parts.append(
            f"{p.users / p.plan_users:.0%} of the planned users ({p.users:,} of {p.plan_users:,})"
        )
    return ", ".join(parts)


def basis_sentence(d: Decision, experiment: str) -> str:
    """What the decision of ``d`` read, and why."""
    if d.basis == "sequential_requested":
        return (
            "Decided on the always-valid (sequential) intervals, as --sequential asked: "
            "valid however often the report is read."
        )
    if d.basis == "sequential_no_plan":
        return (
            "No plan is recorded, so the decision reads group-sequential intervals that "
            "spend α over a look each day, valid however often the report is read; record "
            "the planned horizon "
            f"(`abeval experiment set {experiment} --plan-users N --plan-days D`) to decide on "
            "the narrower fixed-horizon intervals once it is reached."
        )
    done = progress_text(d.progress) if d.progress else ""
    if d.basis == "fixed_plan_reached":
        return f"The plan is reached ({done}): the decision reads the fixed-horizon intervals."
    return (
        f"The plan is not reached ({done}): no decision before it, since a fixed-horizon "
        "interval read early and often ships by chance; an early read needs --sequential."
    )


def guardrail_sentence(g: DecisionInput, catalog: Catalog) -> str:
    """One guardrail's reading, with the largest harm its interval still allows (the
    label and direction of its metric from ``catalog``, the report's)."""
    label = catalog.label(g.metric)
    harm_word = "rise" if catalog.lower_is_better(g.metric) else "drop"
    harm = g.largest_harm or 0.0
    allows = (
        f"its interval allows a {harm_word} of up to {share(harm, 2)}"
        if harm > 0
        else f"its interval rules out any {harm_word}"
    )
    if g.guardrail == "unchecked":
        return f"{label}: could not be checked: {metric_status(g.metric, g.status, catalog)}"
    if g.guardrail == "worse":
        return f"{label}: significantly worse"
    if g.margin is None:
        return f"{label}: not significantly worse (no margin); {allows}"
    margin = f"its margin of {share(g.margin, 2)}"
    if g.guardrail == "underpowered":
        return f"{label}: underpowered: {allows}, past {margin}; this blocks ship"
    return f"{label}: within {margin}: {allows}"


def guardrail_power_line(g: GuardrailPower) -> str:
    """Whether a guardrail can be shown non-inferior at the planned size."""
    head = (
        f"guardrail {g.metric} ({g.arm}): showing it within its {share(g.margin, 2)} margin "
        f"at alpha {g.needed.alpha:.3g} and {share(g.needed.power, 0)} power"
    )
    if g.needed.status != "ok":
        return f"{head}: {said(g.needed.status, g.needed.message)}"
    needs = f"{head} needs {count(g.needed.total_users)} users in all"
    if g.planned_users is None:
        return needs
    planned = "the recorded plan" if g.planned_rule == "plan" else "the target MDE's size"
    verdict = "enough" if g.enough else "cannot be shown non-inferior at the planned size"
    return f"{needs}; {planned} is {count(g.planned_users)}: {verdict}"


def looks_text(p: PowerInfo) -> str | None:
    """The power under the default basis, when computed: ``with a look a day and no
    plan recorded (the default), 78% power after 14 daily looks; 80% needs 41,200 users``."""
    if p.power_with_looks is None or p.users_with_looks is None or p.looks is None:
        return None
    days = p.needed_for_target.total_users or 0
    days = math.ceil(days / p.users_per_day) if p.users_per_day else 0
    counted = f" (the first {p.looks} of {days:,} days counted)" if days > p.looks else ""
    return (
        f"with a look a day and no plan recorded (the default), "
        f"{share(p.power_with_looks, 0)} power after {p.looks} daily looks{counted}; "
        f"{share(p.needed_for_target.power, 0)} needs {count(p.users_with_looks)} users"
    )


SOURCE_NAMES = {
    "control": "control",
    "window": "window",
    "primary": "primary",
    "secondary": "secondary",
    "guardrails": "guardrails",
    "caps": "caps",
    "cuped_days": "CUPED days",
    "target_mde": "target MDE",
    "alpha": "alpha",
    "correction": "correction",
    "plan_users": "planned users",
    "plan_days": "planned days",
}


def sources_line(s: Settings) -> str:
    """``settings from the record: primary, guardrails; from flags: alpha; defaults: ...``."""
    groups: dict[str, list[str]] = {"record": [], "flag": [], "default": []}
    for name, source in s.sources.items():
        groups.setdefault(source, []).append(SOURCE_NAMES.get(name, name))
    parts = [
        f"{label} {', '.join(groups[key])}"
        for key, label in (("record", "recorded:"), ("flag", "flags:"), ("default", "defaults:"))
        if groups.get(key)
    ]
    return "settings " + "; ".join(parts) if parts else ""
