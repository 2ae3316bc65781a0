"""The power commands' lines: a plan read from the store (``abeval power
--experiment``), power by hand (``abeval power --baseline``) and the small pieces
they say (a guardrail's plan, a correction's name). :mod:`abeval.render` hands
them to the CLI and to notebooks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from abeval.formatting import days_text

if TYPE_CHECKING:
    from abeval.analysis.planning import Plan
    from abeval.analysis.report_model import GuardrailPower
    from abeval.stats import PowerResult


def guardrail_power_line(g: GuardrailPower) -> str:
    """One guardrail's non-inferiority plan as a sentence (``abeval power``)."""
    from abeval.report.decision_text import guardrail_power_line as line

    return line(g)


def correction_name(code: str) -> str:
    """A multiple-testing correction's name (``holm`` → ``Holm``)."""
    from abeval.report.text import CORRECTION_NAMES

    return CORRECTION_NAMES.get(code, code)


def plan_lines(experiment: str, plan: Plan) -> list[str]:
    """The design and level of the plan, what each metric and arm detects now and
    what the target needs, and each guardrail's plan (``abeval power --experiment``)."""
    from abeval.formatting import count, number, pct
    from abeval.report.decision_text import looks_text
    from abeval.report.words import said

    if plan.interleaving is not None:
        from abeval.report.interleaving_text import plan_lines as interleaved

        return interleaved(experiment, plan.interleaving)
    o = plan.options
    design = "sequential" if o.sequential else "fixed-horizon"
    level = f"alpha {plan.planning_alpha:g}"
    if plan.planning_rule != "single_test":
        name = correction_name(o.correction)
        family = len(plan.power)
        level += f" ({o.alpha:g} over {family} primary comparisons, {name}'s smallest step)"
    lines = [f"{experiment}: a {design} test at {level} and {o.power:.0%} power"]
    for r in plan.power:
        now, need = r.detectable, r.needed_for_target
        lines.append(
            f"{plan.catalog.label(r.metric)} ({r.arm}): baseline {number(now.baseline_mean)}"
        )
        lines.append(f"  detects {pct(now.mde_relative)} now with {count(now.total_users)} users")
        if need.status != "ok":
            lines.append(f"  {said(need.status, need.message)}")
            continue
        lines.append(
            f"  a {pct(need.mde_relative)} lift needs {count(need.total_users)} users in all"
        )
        if r.more_days_needed is not None and r.users_per_day:
            lines.append(f"  {days_text(r.more_days_needed, r.users_per_day, 'more ')}")
        looks = looks_text(r)
        if looks:
            lines.append(f"  {looks}")
    lines += [guardrail_power_line(g) for g in plan.guardrails]
    return lines


def power_lines(result: PowerResult, *, kind: str, users_per_day: float | None = None) -> list[str]:
    """Power by hand (``abeval power --baseline``): the design, the lift detected,
    the users it takes and, given the traffic, the days; ``kind`` says whether
    the baseline is a ``proportion`` or a ``mean``."""
    design = "sequential" if result.sequential else "fixed-horizon"
    per_arm = result.users_by_arm[0] if result.users_by_arm else 0
    lines = [
        f"{kind} with baseline {result.baseline_mean:g}: a {design} test at alpha "
        f"{result.alpha:g} and {result.power:.0%} power",
        f"  detects a relative lift of {(result.mde_relative or 0):+.2%} "
        f"({(result.mde_absolute or 0):+.4g} absolute)",
        f"  with {per_arm:,} users per arm, {result.total_users or 0:,} in all",
    ]
    if users_per_day and result.total_users:
        lines.append(f"  {days_text(result.total_users / users_per_day, users_per_day)}")
    return lines
