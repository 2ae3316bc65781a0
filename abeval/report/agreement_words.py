"""The words of the agreement board: each signal's source as a tag, the board's
answer per online metric as sentences (:func:`headline_words`, from
:class:`~abeval.analysis.agreement.BoardHeadline`), why a signal is the board's
best predictor in one line (:func:`best_signal_reason`, for the forecast too), and
the glossary of the board's terms. Numbers become text through
:mod:`abeval.formatting` only; nothing here computes a statistic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from abeval.analysis.agreement import BestSignal, BoardHeadline, NoiseSignal, SignalSummary
from abeval.formatting import fixed, printable

#: Each source as a row says it (``history``: a row of a history file).
SOURCE_TAGS = {
    "evaluation": "evaluation",
    "replay": "replay",
    "ope": "off-policy",
    "history": "history",
}
#: An off-policy estimate without target probabilities (not independent).
POST_HOC_TAG = "off-policy, post hoc"

#: The ranking's criteria, as the headline names the one that put a signal first.
CRITERION_WORDS = {
    "predictive_gain": "leave-one-experiment-out predictive gain",
    "familywise_p": "family-wise p (too few experiments to leave one out)",
    "spearman": "Spearman's ρ",
}

#: The board's terms, short; the text prints them as one block, the page as a list
#: and as the title of each column's abbreviation.
GLOSSARY: tuple[tuple[str, str], ...] = (
    (
        "LOO gain",
        "how much better each experiment's online lift is forecast from this "
        "signal than without it, each experiment left out of its own fit (log score, nats; "
        "above 0 helps); the board ranks by it",
    ),
    (
        "ρ (Spearman)",
        "rank correlation of offline and online lifts over experiments: 1 "
        "when the signal orders them exactly as the tests did, 0 when unrelated",
    ),
    (
        "τ (Kendall)",
        "another rank correlation: the share of experiment pairs the signal "
        "orders as the tests did, minus the share it orders the other way",
    ),
    (
        "reliability",
        "the share of the online lifts' spread that is real difference "
        "between experiments, not sampling noise",
    ),
    (
        "ceiling",
        "the ρ a perfect predictor would reach on average against online lifts "
        "this noisy; read ρ as ρ / ceiling",
    ),
    (
        "calibration slope",
        "online lift per unit of offline lift across experiments; 1: "
        "the offline lift carries over as it is, 0: it says nothing about size",
    ),
    (
        "family-wise p",
        "how often the best of all these signals would agree this well "
        "with lifts unrelated to them (experiments shuffled); below α: not noise",
    ),
)


#: What a ρ / ceiling at or above 1 says (a ratio of two noisy estimates can pass 1).
AT_CEILING = "at the noise ceiling"


def ratio_text(value: float | None) -> str:
    """ρ / ceiling with two decimals, or ``≥ 1`` once it reaches 1: the signal ranks
    the experiments as well as their noise allows, and the ratio's excess is noise."""
    if value is not None and value >= 1:
        return "≥ 1"
    return fixed(value, 2)


def source_tag(source: str, independent: bool) -> str:
    """The source a row says: ``evaluation``, ``replay``, ``off-policy``, or
    ``off-policy, post hoc`` for an estimate from the treatment's own impressions."""
    if source == "ope" and not independent:
        return POST_HOC_TAG
    return SOURCE_TAGS.get(source, source)


def row_tag(s: SignalSummary) -> str:
    """:func:`source_tag` of a summary row."""
    return source_tag(s.source, s.independent)


def named(signal: str | None, source: str | None, independent: bool = True) -> str:
    """``snips (off-policy)``: a signal with its source."""
    return f"{printable(signal or '')} ({source_tag(source or '', independent)})"


def _interval(ci: Sequence[float] | None) -> str:
    return "" if ci is None else f" [{fixed(ci[0], 2)}, {fixed(ci[1], 2)}]"


def _experiments(n: int) -> str:
    return f"{n} experiment{'' if n == 1 else 's'}"


def criterion_text(h: BoardHeadline | BestSignal, gain: float | None) -> str:
    """``leave-one-experiment-out predictive gain +0.876``: the criterion and its value."""
    words = CRITERION_WORDS.get(h.criterion or "", h.criterion or "")
    if h.criterion == "predictive_gain" and gain is not None:
        return f"{words} {'+' if gain > 0 else ''}{fixed(gain, 3)}"
    return words


def _ceiling(h: BoardHeadline) -> str:
    if h.rho_over_ceiling is not None:
        if ratio_text(h.rho_over_ceiling) == "≥ 1":
            return f", ρ / ceiling ≥ 1 ({AT_CEILING} {fixed(h.ceiling, 2)})"
        return f", ρ / ceiling {fixed(h.rho_over_ceiling, 2)} (noise ceiling {fixed(h.ceiling, 2)})"
    if h.ceiling_status == "no_signal_variance":
        return "; the online lifts are all noise, so there is no ceiling to read it against"
    if h.ceiling_status == "ceiling_too_small":
        return f"; the noise ceiling {fixed(h.ceiling, 2)} is too small to read it against"
    return ""


def _noise(h: BoardHeadline, label: str) -> str:
    level = fixed(h.alpha, 2)
    noise: Sequence[NoiseSignal] = h.noise_signals
    if not noise:
        return (
            f"Every signal of {label} agrees better than unrelated lifts would "
            f"(family-wise p < {level})."
        )
    if len(noise) == h.signals:
        return (
            f"No signal of {label} can be told from noise: all {h.signals} have a "
            f"family-wise p of {level} or more (or too few experiments for one)."
        )
    names = ", ".join(named(n.signal, n.source, n.independent) for n in noise)
    return (
        f"Indistinguishable from noise (family-wise p ≥ {level}, or too few experiments "
        f"for one): {names}."
    )


@dataclass(frozen=True)
class HeadlineWords:
    """The board's answer for one online metric in sentences: ``lead`` (which
    signal), ``numbers`` (how well; empty without a correlation), ``noise``."""

    metric: str
    label: str
    lead: str
    numbers: str
    noise: str

    def lines(self) -> tuple[str, ...]:
        return tuple(t for t in (self.lead, self.numbers, self.noise) if t)


def headline_words(h: BoardHeadline, label: str | None = None) -> HeadlineWords:
    """The sentences of :class:`BoardHeadline` ``h`` (``label``: the metric's name
    as pages show it)."""
    label = printable(label or h.online_metric)
    who = named(h.best_signal, h.best_source, h.status != "not_independent")
    if h.status == "no_signals":
        lead = f"{label}: no offline signal to compare with."
        return HeadlineWords(h.online_metric, label, lead, "", "")
    if h.status == "too_few_experiments":
        lead = (
            f"{label}: too few experiments to say which signal predicts it: the most any "
            f"signal has is {h.experiments}; a correlation needs "
            f"{h.more_experiments_needed} more."
        )
        return HeadlineWords(h.online_metric, label, lead, "", "")
    ranked = f"first by {criterion_text(h, h.predictive_gain)}"
    if h.status == "not_independent":
        lead = (
            f"{label}: no independent signal; the best ranked is {who}, {ranked}, but it "
            "reads the same clicks as the online metric, so its agreement is close to "
            "circular."
        )
    elif h.familywise_p is not None and h.familywise_p >= h.alpha:
        lead = (
            f"{label}: no signal predicts it better than chance; the best ranked is {who}, "
            f"{ranked}, with a family-wise p of {fixed(h.familywise_p, 3)}."
        )
    else:
        lead = f"{label}: best predicted by {who}, {ranked}."
    numbers = (
        f"Spearman ρ {fixed(h.spearman, 2)}{_interval(h.spearman_ci)} over "
        f"{_experiments(h.experiments)}{_ceiling(h)}; calibration slope "
        f"{fixed(h.slope, 2)}{_interval(h.slope_ci)}; family-wise p "
        f"{fixed(h.familywise_p, 3)}."
    )
    if h.more_experiments_needed:
        numbers += (
            f" Ranking by leave-one-experiment-out gain needs {h.more_experiments_needed} "
            "more experiment" + ("" if h.more_experiments_needed == 1 else "s") + "."
        )
    return HeadlineWords(h.online_metric, label, lead, numbers, _noise(h, label))


def best_signal_reason(best: BestSignal, label: str | None = None) -> str:
    """Why ``best`` is the board's best predictor, in one line: ``the board's best
    predictor of ctr: snips (off-policy), first by leave-one-experiment-out
    predictive gain +0.873, ρ 0.91 [0.67, 0.98]``."""
    label = printable(label or best.online_metric)
    if best.status == "no_signals" or best.row is None:
        return f"the board has no signal for {label}"
    row = best.row
    who = named(best.signal, best.source, row.independent)
    if best.status == "too_few_experiments":
        return (
            f"the board's first-ranked signal for {label}, {who}, has too few experiments "
            f"for a correlation ({best.more_experiments_needed} more needed)"
        )
    return (
        f"the board's best predictor of {label}: {who}, first by "
        f"{criterion_text(best, row.predictive_gain)}, ρ {fixed(row.spearman, 2)}"
        f"{_interval(row.spearman_ci)}"
    )
