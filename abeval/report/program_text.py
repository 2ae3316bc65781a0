"""A program of experiments as terminal text (``abeval program``)."""

from __future__ import annotations

from abeval.analysis.program import ProgramReport, ProgramStats
from abeval.formatting import interval, pct, share
from abeval.stats.program import Prior


def prior_line(metric: str, p: Prior) -> str:
    """One metric's prior in words."""
    if p.kind == "none":
        return f"Prior of true effects ({metric}): none — {p.message}"
    if p.kind == "mixture":
        return (
            f"Prior of true effects ({metric}): {share(p.null_share)} exactly 0, the rest "
            f"normal with mean {pct(p.effect_mean)} and sd {share(p.effect_sd, 2)} "
            f"(chosen over the normal by AIC, {p.experiments} experiments)"
        )
    return (
        f"Prior of true effects ({metric}): normal, mean {pct(p.mean)}, sd {share(p.sd, 2)} "
        f"(REML, {p.experiments} experiments)"
    )


def stats_lines(metric: str, s: ProgramStats, indent: str = "") -> list[str]:
    w, i = s.win_rate, s.impact
    won = (
        f"{w.wins} of {w.decided} decided won: {share(w.value)} [{share(w.low)}, {share(w.high)}]"
        if w.value is not None
        else str(w.message)
    )
    if i.shipped == 0:
        shipped = str(i.message)
    elif i.debiased is None:
        shipped = f"{i.shipped} shipped: raw {pct(i.raw)}; no de-biased sum ({i.message})"
    else:
        low_high = None if i.low is None or i.high is None else (i.low, i.high)
        shipped = (
            f"{i.shipped} shipped: raw {pct(i.raw)}, de-biased {pct(i.debiased)} "
            f"{interval(low_high)}"
        )
    return [f"{indent}Win rate: {won}", f"{indent}Impact ({metric}): {shipped}"]


def summary_lines(report: ProgramReport, what: str) -> list[str]:
    """``Program SOURCE: N {what}, primary metric ...``, each metric's prior, the
    win rate and the impact, overall and per tag."""
    level = f"{(1 - report.alpha) * 100:g}%"
    lines = [
        f"Program {report.source}: {report.experiments} {what}, primary metric "
        f"{report.primary}, {level} intervals",
        *(prior_line(m, p) for m, p in report.priors),
        *stats_lines(report.primary, report.overall),
    ]
    for s in report.tags:
        lines += [f"Tag {s.tag} ({s.experiments} experiments):"]
        lines += stats_lines(report.primary, s, "  ")
    return lines


def program_text(report: ProgramReport) -> str:
    """The program's statistics, its tags and every experiment's raw and shrunken lift."""
    lines = summary_lines(report, "experiments")
    header = ("experiment", "metric", "status", "lift", "interval", "shrunk", "interval")
    table = [header]
    from scipy.special import ndtri

    z = float(ndtri(1 - report.alpha / 2))
    for r in report.lifts:
        table.append((
            r.experiment, r.metric, r.status or "", pct(r.lift),
            interval((r.lift - z * r.se, r.lift + z * r.se)),
            pct(r.shrunk.mean), interval((r.shrunk.low, r.shrunk.high)),
        ))  # fmt: skip
    widths = [max(len(row[c]) for row in table) for c in range(len(header))]
    lines.append("")
    for row in table:
        cells = [
            cell.ljust(w) if c < 3 else cell.rjust(w)
            for c, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"
