"""The off-policy estimates of a report as terminal text
(docs/metrics.md#off-policy-estimates).

Per direction (target predicted from the source arm's logs): the four estimators
of the target's CTR with their intervals and their error against the target's
observed CTR, the predicted lift beside the online lift, the weight diagnostics
in one line (overall and per position with ``--verbose``), and every warning.
"""

from __future__ import annotations

from abeval.analysis.ope import OpeDirection, OpeSection
from abeval.analysis.report_model import ExperimentReport
from abeval.formatting import count, fixed, interval, pct, share, when
from abeval.report.ope_context import (
    POST_HOC,
    difference_sentence,
    supply_sentence,
    varying_sentences,
)
from abeval.report.ope_words import assumption, headline_reason, status_text, weights_summary
from abeval.report.words import said

_SOURCES = {
    "file": "target probabilities from --target-propensities",
    "recorded": "target probabilities recorded with the experiment",
    "empirical": f"target probabilities = the target arm's frequency of (item, position); "
    f"{POST_HOC}",
}


def _ctr(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.6f}"


def _ctr_ci(ci: tuple[float, float] | None) -> str:
    return "n/a" if ci is None else f"[{ci[0]:.6f}, {ci[1]:.6f}]"


#: What an estimate's row adds after its interval, by the interval it shows.
_INTERVAL_MARKS = {
    "unreliable": "; interval unreliable",
    "skew_corrected": "; interval corrected for skewness",
}


def _direction(d: OpeDirection, verbose: bool) -> list[str]:
    g = d.diagnostics
    lines = [
        "",
        f"  {d.target} predicted from {d.source}'s logs ({_SOURCES[d.target_probabilities]}; "
        f"{count(d.users)} users, {count(d.impressions)} impressions)",
        f"    observed CTR: {d.source} {_ctr(d.source_ctr)}, {d.target} {_ctr(d.target_ctr)}",
        f"    {'estimator':<11} {'CTR':>9} {'interval':>22} {'error':>8} "
        f"{'predicted lift':>14} {'interval':>22}  assumes",
    ]
    for e in d.estimates:
        mark = "*" if e.estimator == d.headline else " "
        lines.append(
            f"  {mark} {e.estimator:<11} {_ctr(e.ctr.value):>9} {_ctr_ci(e.ctr.ci):>22} "
            f"{pct(e.relative_error, 1):>8} {pct(e.predicted_lift.value):>14} "
            f"{interval(e.predicted_lift.ci):>22}  {assumption(e.assumption)}"
            + ("" if e.ctr.value is not None or not e.ctr.message else f" ({e.ctr.message})")
            + (_INTERVAL_MARKS.get(e.users.interval, "") if e.users else "")
        )
    o = d.online_lift
    head = next(e for e in d.estimates if e.estimator == d.headline)
    against = f"; {difference_sentence(d.difference)}" if d.difference is not None else ""
    lines += [
        f"    judged: {d.headline}, because {headline_reason(d.headline_reason)}",
        *(
            [
                f"    {d.headline}'s weights over users: worth {fixed(u.ess_users, 1)} users "
                f"({share(u.ess_users_share)}); the 1% of users with the largest weights carry "
                f"{share(u.top_share)} of its weighted clicks; {said(u.interval)}"
            ]
            if (u := head.users) is not None
            else []
        ),
        f"    online lift {pct(o.value)} {interval(o.ci)}; predicted ({d.headline}) vs online: "
        f"{d.agreement} (sign){against}",
    ]
    if not verbose:
        more = " (each position's weights: --verbose)" if d.positions else ""
        return [*lines, f"    {weights_summary(d)}{more}"]
    lines.append(
        f"    weights: mean {fixed(g.mean_weight, 4)}, ESS {fixed(g.ess, 1)} "
        f"({share(g.ess_share)} of N), largest {fixed(g.max_weight, 3)}, capped "
        f"{share(g.capped_share)}, support deficit {share(g.support_deficit)}"
    )
    for p in d.positions:
        lines.append(
            f"      position {p.position}: {count(p.impressions)} impressions, mean "
            f"{fixed(p.mean_weight, 4)}, ESS {fixed(p.ess, 1)} ({share(p.ess_share)}), largest "
            f"{fixed(p.max_weight, 3)}, deficit {share(p.support_deficit)}"
        )
    return lines


def ope_lines(r: ExperimentReport, *, verbose: bool = False) -> list[str]:
    """The report's OPE section as lines (none when the report has no OPE field);
    the weights of each position only when ``verbose``, else one summary line."""
    s: OpeSection | None = r.ope
    if s is None:
        return []
    if s.status != "ok":
        return ["", f"Off-policy estimates: {status_text(s)}"]
    lines = [
        "",
        f"Off-policy estimates (CTR per impression; clustered by user; cap λ = {s.cap:g}; "
        f"* = the estimator judged against the online lift)",
    ]
    lines += [f"!! {w}" for w in (*s.warnings, *varying_sentences(s))]
    if s.target_origin == "recorded":
        lines.append(f"  target probabilities recorded with the experiment from {s.file} "
                     f"({when(s.recorded_at)})")  # fmt: skip
    if s.supply_command:
        lines.append(f"  {supply_sentence(s.supply_command)}")
    lines += [
        "  impressions with a propensity: "
        + "; ".join(f"{a.arm} {a.with_propensity:,} of {a.impressions:,}" for a in s.arms)
    ]
    for d in s.directions:
        lines += _direction(d, verbose)
    return lines
