"""Terminal text of an interleaved experiment's report (docs/metrics.md#interleaving):
the decision (which ranker is preferred), Δ_AB credited by clicks and by
purchases, the users' preference share with its sign test, and the health line
(the first picks' balance, the clicks no team is credited with). The A/B
sections do not apply to one arm and are replaced by one line saying so."""

from __future__ import annotations

from dataclasses import dataclass

from abeval.analysis.interleaving import InterleavingPlan, InterleavingSection
from abeval.formatting import pct, pvalue, share, signed, signed_interval
from abeval.report.words import said
from abeval.stats.interleaving import InterleavingResult

#: The one line that stands for the A/B sections of an interleaved experiment.
NOT_AB = (
    "Interleaved experiment: every user saw lists merged from {a} and {b}, so there "
    "are no arms to compare; the A/B sections (metrics per arm, verdicts, power, "
    "replay, off-policy estimates) do not apply."
)


def p_is(p: float | None) -> str:
    """``p = 0.0355``, ``p < 0.0001``."""
    text = pvalue(p)
    return f"p {text[0]} {text[1:]}" if text.startswith("<") else f"p = {text}"


def decision_line(s: InterleavingSection) -> str:
    """``DECISION candidate PREFERRED over production: ...``, or why none is."""
    c = s.clicks
    numbers = f"Δ_AB = {signed(c.delta)} {signed_interval(c.interval)}, {p_is(c.p_value)}"
    if s.decision == "ranker_preferred" and s.preferred is not None:
        other = s.team_b if s.preferred == s.team_a else s.team_a
        return f"DECISION {s.preferred} PREFERRED over {other}: {said(s.decision)} ({numbers})"
    if s.decision == "no_preference":
        return f"DECISION NO PREFERENCE: {said(s.decision)} ({numbers})"
    return f"DECISION UNDETERMINED: {said(c.status, c.message)}"


def result_row(credit: str, r: InterleavingResult) -> str:
    """One credit's Δ_AB, interval, p-value and counts."""
    return (
        f"  {credit:<13} {signed(r.delta):>8} {signed_interval(r.interval):>20} "
        f"{pvalue(r.p_value):>8} {r.wins:>8,} {r.losses:>8,} {r.ties:>7,} "
        f"{r.requests:>9,} {r.users:>8,}"
        + ("" if r.status == "ok" else f"  ({said(r.status, r.message)})")
    )


def balance_line(s: InterleavingSection) -> str:
    """The health line of an interleaved experiment, in the spirit of the sample ratio's."""
    b = s.balance
    picks = ", ".join(f"{team} {n:,}" for team, n in b.first_picks.items())
    verdict = "IMBALANCED" if b.flagged else "ok"
    return (
        f"first picks: {picks} ({share(b.share_a)} {s.team_a}; binomial "
        f"{p_is(b.p_value)}, {verdict}); clicks no team is credited with: "
        f"{s.uncredited_clicks:,}"
    )


def preference_line(s: InterleavingSection) -> str:
    """The users' preference share with its sign test."""
    c = s.clicks
    if c.preference_share is None:
        return "no user prefers either ranker"
    return (
        f"users preferring {s.team_a}: {share(c.preference_share)} of the users with a "
        f"preference (sign test {p_is(c.sign_p_value)})"
    )


def header_line(s: InterleavingSection, alpha: float) -> str:
    """The rankers compared and which is the baseline."""
    return (
        f"rankers {s.team_a} (A) and {s.team_b} (B, the baseline); unit user; "
        f"confidence {1 - alpha:.0%}"
    )


def interleaving_lines(s: InterleavingSection) -> list[str]:
    """The decision, the table of Δ_AB by credit, the preference share, the health."""
    lines = [decision_line(s), ""]
    if s.balance.flagged:
        lines += [
            f"!! First picks are imbalanced ({p_is(s.balance.p_value)}): team draft's "
            "coin should give each team half of them; check how the lists were merged.",
            "",
        ]
    lines += [
        NOT_AB.format(a=s.team_a, b=s.team_b),
        "",
        f"Interleaving: Δ_AB > 0 when {s.team_a} is preferred, < 0 when {s.team_b} is "
        "(users are the unit of the interval)",
        f"  {'credit':<13} {'Δ_AB':>8} {'interval':>20} {'p':>8} "
        f"{'wins':>8} {'losses':>8} {'ties':>7} {'requests':>9} {'users':>8}",
        result_row("clicks", s.clicks),
    ]
    if s.by_purchases is not None:
        lines.append(result_row("purchases", s.by_purchases))
    if s.clicks.preference_share is not None:
        lines.append(f"  {preference_line(s)}")
    lines += [f"  wins and losses are {s.team_a}'s, of the requests with a credited click", ""]
    return [*lines, balance_line(s), ""]


@dataclass(frozen=True)
class InterleavingRow:
    """One credit's row of the page's table, as text."""

    credit: str
    delta: str
    interval: str
    p_value: str
    wins: str
    losses: str
    ties: str
    requests: str
    users: str
    note: str


@dataclass(frozen=True)
class InterleavingView:
    """The interleaving section of the page (reports/_interleaving.html.j2): the
    text presenter's sentences and the table's cells."""

    section: InterleavingSection
    decision: str
    not_ab: str
    orientation: str
    rows: tuple[InterleavingRow, ...]
    preference: str
    balance: str
    balance_flagged: bool


def _row(credit: str, r: InterleavingResult) -> InterleavingRow:
    return InterleavingRow(
        credit=credit,
        delta=signed(r.delta),
        interval=signed_interval(r.interval),
        p_value=pvalue(r.p_value),
        wins=f"{r.wins:,}",
        losses=f"{r.losses:,}",
        ties=f"{r.ties:,}",
        requests=f"{r.requests:,}",
        users=f"{r.users:,}",
        note="" if r.status == "ok" else said(r.status, r.message),
    )


def interleaving_view(s: InterleavingSection) -> InterleavingView:
    """What the page shows of ``s``, in the text report's words."""
    rows = [_row("clicks", s.clicks)]
    if s.by_purchases is not None:
        rows.append(_row("purchases", s.by_purchases))
    return InterleavingView(
        section=s,
        decision=decision_line(s).removeprefix("DECISION "),
        not_ab=NOT_AB.format(a=s.team_a, b=s.team_b),
        orientation=f"Δ_AB > 0 when {s.team_a} is preferred, < 0 when {s.team_b} is; "
        f"wins and losses are {s.team_a}'s, of the requests with a credited click; "
        "users are the unit of the interval.",
        rows=tuple(rows),
        preference=preference_line(s),
        balance=balance_line(s),
        balance_flagged=s.balance.flagged,
    )


def plan_lines(experiment: str, p: InterleavingPlan) -> list[str]:
    """``abeval power --experiment X`` for an interleaved experiment: the users the
    preference needs, what the experiment detects now, and the A/B test beside it."""
    from math import isfinite

    lines = [
        f"{experiment}: interleaved ({p.team_a} vs {p.team_b}), a two-sided test of Δ_AB at "
        f"alpha {p.alpha:g} and {p.power:.0%} power"
    ]
    if p.detectable_now is not None and p.decided_share is not None:
        lines.append(
            f"  detects Δ_AB = ±{p.detectable_now:.4f} now with {p.users:,} users "
            f"({share(p.decided_share)} of them with a credited click)"
        )
    if p.status != "ok" or p.users_needed is None or p.delta is None:
        lines.append(f"  {said(p.status, p.message)}")
    else:
        observed = " (the observed preference)" if p.delta_rule == "observed" else ""
        lines.append(
            f"  a preference of Δ_AB = ±{p.delta:.4f}{observed} needs {p.users_needed:,} users"
        )
    if p.ab_users is not None:
        ratio = (
            f": interleaving needs {p.ratio:.0f}× fewer, if the two rankers' preference "
            f"of ±{p.delta:.4f} comes with that CTR lift"
            if p.ratio is not None and isfinite(p.ratio) and p.delta is not None
            else ""
        )
        lines.append(
            f"  an A/B test of the same rankers needs {p.ab_users:,} users in all for a "
            f"{pct(p.ctr_lift, 1)} CTR lift (this experiment's per-user CTR){ratio}"
        )
    return lines
