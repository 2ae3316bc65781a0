"""The agreement board as terminal text (docs/metrics.md#agreement-across-experiments).

First the board's answer per online metric (:mod:`abeval.report.agreement_words`),
then per primary online metric one table of signals ranked by how well they
predict its lift (:data:`abeval.analysis.agreement.RANKING`), the ranking column
(LOO gain) first after the signal and its source; signals that are not
independent evidence (replayed, post hoc) below a line. Then the experiments
without offline signals, a glossary and the notes. Numbers become text through
:mod:`abeval.formatting` only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from abeval.analysis.agreement import AgreementBoard, SignalSummary
from abeval.formatting import NA, fixed, printable, share
from abeval.report.agreement_words import (
    AT_CEILING,
    GLOSSARY,
    SOURCE_TAGS,
    headline_words,
    ratio_text,
)


def coefficient_interval(ci: Sequence[float] | None) -> str:
    """A correlation's or slope's interval: ``(0.1, 0.92)`` → ``[0.10, 0.92]``."""
    return NA if ci is None else f"[{fixed(ci[0], 2)}, {fixed(ci[1], 2)}]"


def source_label(s: SignalSummary) -> str:
    """``evaluation``, ``off-policy``, or with a star when it reads the same clicks
    as the online metric (``replay*``) or the treatment's own impressions
    (``off-policy*``, post hoc)."""
    tag = SOURCE_TAGS.get(s.source, s.source)
    return tag if s.independent else f"{tag}*"


def signal_name(s: SignalSummary) -> str:
    """The signal, with ``−`` before one where lower is better (it is negated)."""
    return f"−{s.signal}" if s.offline_lower_is_better else s.signal


def p_text(p: float | None) -> str:
    """A permutation p-value with three decimals (``n/a`` when undefined)."""
    return fixed(p, 3)


#: Why ρ is not divided by the ceiling, per ``ceiling_status``.
CEILING_WORDS = {
    "too_few_points": "too few lifts",
    "no_signal_variance": "lifts all noise",
    "ceiling_too_small": "too small",
}


def ceiling_text(s: SignalSummary) -> str:
    """The noise ceiling, or why there is none to divide by: ``0.71``,
    ``0.12 too small``, ``lifts all noise``."""
    why = CEILING_WORDS.get(s.ceiling_status)
    if why is None:
        return fixed(s.ceiling, 2)
    if s.ceiling_status == "ceiling_too_small":
        return f"{fixed(s.ceiling, 2)} {why}"
    return why


def sign_text(s: SignalSummary) -> str:
    return f"{s.agreeing_pairs}/{s.pairs} {share(s.sign_agreement, 0)}" if s.pairs else NA


#: The ranking column, first in both tables (docs/metrics.md#agreement-ranking).
RANK_COLUMN = "LOO gain"


def _lead(s: SignalSummary) -> str:
    """The columns every row starts with: the signal, its source, the ranking column."""
    return (
        f"  {printable(signal_name(s)):<18} {source_label(s):<11} {fixed(s.predictive_gain, 3):>8}"
    )


def _lead_header() -> str:
    return f"  {'signal':<18} {'source':<11} {RANK_COLUMN:>8}"


def _header() -> str:
    return (
        f"{_lead_header()} {'exp':>3} {'spearman':>8} {'interval':>14} {'p':>6} "
        f"{'kendall':>7} {'pearson':>7} {'slope':>7} {'interval':>16} {'sign agrees':>12} "
        f"{'both sig':>8} {'precision':>9} {'FNR':>6}"
    )


def _row(s: SignalSummary) -> str:
    both = f"{s.both_significant_agreeing}/{s.both_significant}"
    return (
        f"{_lead(s)} {s.experiments:>3} {fixed(s.spearman, 2):>8} "
        f"{coefficient_interval(s.spearman_ci):>14} {p_text(s.spearman_p):>6} "
        f"{fixed(s.kendall, 2):>7} {fixed(s.pearson, 2):>7} {fixed(s.slope, 2):>7} "
        f"{coefficient_interval(s.slope_ci):>16} {sign_text(s):>12} {both:>8} "
        f"{share(s.precision, 0):>9} {share(s.false_negative_rate, 0):>6}"
    )


def _noise_header() -> str:
    return (
        f"{_lead_header()} {'reliability':>11} {'ceiling':>17} {'rho/ceiling':>11} "
        f"{'exp. precision':>14} {'raw':>5} {'fw p':>6} "
        f"{'model slope':>11} {'interval':>16} {'tau':>6}"
    )


def _noise_row(s: SignalSummary) -> str:
    return (
        f"{_lead(s)} {share(s.reliability, 0):>11} "
        f"{ceiling_text(s):>17} {ratio_text(s.rho_over_ceiling):>11} "
        f"{share(s.expected_precision, 0):>14} {share(s.precision, 0):>5} "
        f"{p_text(s.familywise_p):>6} "
        f"{fixed(s.model_slope, 2):>11} {coefficient_interval(s.model_slope_ci):>16} "
        f"{pct_or_na(s.model_tau):>6}"
    )


#: The line between the independent signals and those that are not.
NOT_INDEPENDENT = (
    "  -- not independent: replayed from the same clicks, or post-hoc off-policy (ranked apart) --"
)


def grouped(rows: Sequence[SignalSummary], line: Callable[[SignalSummary], str]) -> list[str]:
    """One line per row, in rank order, :data:`NOT_INDEPENDENT` before the first row
    that is not independent evidence."""
    out: list[str] = []
    for i, s in enumerate(rows):
        if not s.independent and (i == 0 or rows[i - 1].independent):
            out.append(NOT_INDEPENDENT)
        out.append(line(s))
    return out


def pct_or_na(x: float | None) -> str:
    """A standard deviation of lifts in percent (``0.012`` → ``1.2%``)."""
    return NA if x is None else share(x, 1)


ORDERED_BY = {
    "start": "experiment start",
    "date": "the history's date",
    "row": "row order (a row has no date)",
}


def backtest_lines(board: AgreementBoard) -> list[str]:
    """The ``--backtest`` table: one row per signal and online metric."""
    if not board.backtest:
        return []
    by = ORDERED_BY.get(board.backtest[0].ordered_by, board.backtest[0].ordered_by)
    lines = [
        "",
        f"Backtest: each experiment forecast from the earlier ones (ordered by {by}); "
        f"coverage of the {1 - board.alpha:.0%} interval for the observed lift; gating keeps "
        "a test when P(lift > 0) > 0.5",
        f"  {'signal':<18} {'source':<10} {'metric':<12} {'forecast':>8} {'skipped':>7} "
        f"{'coverage':>8} {'sign right':>10} {'MAE':>7} {'kept':>4} {'better':>6} "
        f"{'worse':>5} {'missed':>6} {'avoided':>7}",
    ]
    for b in board.backtest:
        r = b.result
        lines.append(
            f"  {printable(b.signal):<18} {SOURCE_TAGS.get(b.source, b.source):<10} "
            f"{printable(b.online_metric):<12} "
            f"{r.forecast:>8} {r.skipped:>7} {share(r.coverage, 0):>8} "
            f"{share(r.sign_accuracy, 0):>10} {pct_or_na(r.mean_absolute_error):>7} "
            f"{r.kept:>4} {r.kept_better:>6} {r.kept_worse:>5} {r.missed:>6} {r.avoided:>7}"
        )
    lines.append(
        "  better / worse: kept tests whose online interval lay above / below 0; missed: "
        "not kept but significantly better online; avoided: not kept and significantly worse."
    )
    return lines


def z_lines(rows: Sequence[SignalSummary]) -> list[str]:
    """The signals that predict the online metric itself: their mean z and share
    of |z| < 1.96 (none when no row has a z)."""
    found = [s for s in rows if s.z_pairs]
    if not found:
        return []
    return [
        "  predicted against observed, z = (predicted − observed) / √(se_pred² + se_obs²):",
        f"     {'signal':<18} {'source':<11} {'exp':>3} {'mean z':>7} {'|z|<1.96':>8}",
        *(
            f"     {printable(signal_name(s)):<18} {source_label(s):<11} {s.z_pairs:>3} "
            f"{fixed(s.z_mean, 2):>7} {share(s.z_within, 0):>8}"
            for s in found
        ),
    ]


def _experiments(board: AgreementBoard) -> list[str]:
    analysed = len(board.experiments)
    lines = [
        f"{analysed} experiment{'' if analysed == 1 else 's'}: "
        f"{board.experiments_with_signals} with offline signals, "
        f"{len(board.experiments_without_signals)} without, "
        f"{len(board.experiments_skipped)} skipped"
    ]
    if board.experiments_without_signals:
        names = ", ".join(printable(n) for n in board.experiments_without_signals)
        lines.append(f"  without offline signals: {names}")
    for c in board.experiments:
        if c.status == "skipped":
            lines.append(f"  skipped {printable(c.experiment)}: {printable(c.message)}")
    return lines


def headline_lines(board: AgreementBoard) -> list[str]:
    """The board's answer per online metric (:func:`headline_words`), first."""
    if not board.headlines:
        return []
    lines = ["", "Answer (ranked by the board's criterion; see Glossary):"]
    for h in board.headlines:
        words = headline_words(h, board.catalog.label(h.online_metric))
        lead, *rest = words.lines()
        lines += [f"  {lead}", *(f"    {t}" for t in rest)]
    return lines


def render_text(board: AgreementBoard) -> str:
    """The whole board as plain text."""
    lines = [
        f"Agreement across experiments · store {printable(board.store)} · "
        f"{1 - board.alpha:.0%} intervals",
        *_experiments(board),
    ]
    metrics = list(dict.fromkeys(s.online_metric for s in board.summary))
    if not metrics:
        lines += ["", "No pairs of an offline and an online lift: nothing to compare."]
    lines += headline_lines(board)
    for metric in metrics:
        rows = [s for s in board.summary if s.online_metric == metric]
        lines += [
            "",
            f"Online metric: {printable(metric)} (ranked by {RANK_COLUMN}, best first; "
            "independent signals first)",
            _header(),
        ]
        lines += grouped(rows, _row)
        undefined = [s for s in rows if s.status != "ok"]
        for s in undefined:
            lines.append(f"     {printable(s.signal)} ({source_label(s)}): {printable(s.message)}")
        lines += ["", f"  Noise and prediction ({printable(metric)}):", _noise_header()]
        lines += grouped(rows, _noise_row)
        if any(ratio_text(s.rho_over_ceiling) == "≥ 1" for s in rows):
            lines += [
                "",
                f"  ≥ 1: {AT_CEILING}; Spearman / ceiling is a ratio of two noisy estimates "
                "and can pass 1",
            ]
        lines += z_lines(rows)
    if any(not s.independent and s.source == "replay" for s in board.summary):
        lines += [
            "",
            "* replayed from the same clicks as the online metrics: agreement with CTR is close "
            "to circular; judge by off-policy and evaluation signals.",
        ]
    if any(not s.independent and s.source == "ope" for s in board.summary):
        lines += [
            "",
            "off-policy* post hoc: without target probabilities, the treatment's own frequency of "
            "(item, "
            "position) from its own impressions; not a prediction. Record them with `abeval "
            "experiment set EXPERIMENT --target-propensities FILE`.",
        ]
    lines += backtest_lines(board)
    lines += ["", f"{len(board.pairs):,} pairs of lifts: --format json lists them."]
    if metrics:
        lines += ["", "Glossary:", *(f"- {term}: {words}" for term, words in GLOSSARY)]
    lines += ["", "Notes:", *(f"- {n}" for n in board.notes)]
    return "\n".join(lines) + "\n"
