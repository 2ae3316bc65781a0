"""A candidate's offline evidence for ``abeval forecast``: its offline lift over
production per signal, with a standard error.

Two kinds: typed in (``--offline-lift 0.031 --offline-se 0.008``, one signal)
or a held-out evaluation run here (``-t truth -r control=production.csv -r
candidate=new.csv``, as ``abeval evaluate``), read through the same
:func:`abeval.analysis.recorded_lift.recorded_lift` the agreement board reads
recorded evaluations with, so a candidate's lift and the history's lifts are
one definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from abeval.errors import AbevalError

EvidenceKind = Literal["typed", "evaluation"]


@dataclass(frozen=True)
class Evidence:
    """The candidate's offline lifts: signal -> (lift, standard error); ``signal``
    None for a typed lift that names none (the forecast then picks the signal)."""

    kind: EvidenceKind
    description: str
    lifts: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    typed: tuple[float, float] | None = None

    def lift(self, signal: str) -> tuple[float, float] | None:
        """The candidate's (lift, se) on ``signal``; a typed lift serves any signal."""
        return self.typed if self.typed is not None else self.lifts.get(signal)


def typed_evidence(lift: float, se: float) -> Evidence:
    """``--offline-lift`` and ``--offline-se``."""
    text = f"offline lift {lift * 100:+.2f}% (se {se * 100:.2f}%), typed in"
    return Evidence("typed", text, typed=(lift, se))


def evaluation_evidence(
    truth: str | Path,
    models: Mapping[str, str | Path],
    *,
    k: tuple[int, ...] = (5, 10),
    metrics: str | None = None,
    alpha: float = 0.05,
) -> Evidence:
    """Evaluate the two models of ``models`` on ``truth``: the one named
    ``control`` (else the first) is production, the other the candidate."""
    from abeval.analysis.evaluate import evaluate
    from abeval.analysis.evaluate.record import Target, recorded_evaluation
    from abeval.analysis.recorded_lift import recorded_lift

    names = list(models)
    if len(names) != 2:
        raise AbevalError(
            f"-r: {len(names)} model{'s' if len(names) != 1 else ''} given; give two, "
            "-r control=PRODUCTION_FILE -r candidate=CANDIDATE_FILE"
        )
    control = "control" if "control" in names else names[0]
    candidate = next(n for n in names if n != control)
    result = evaluate(truth, models, k=k, metrics=metrics, alpha=alpha, baseline=control)
    recorded = recorded_evaluation(
        result, Target("candidate", control, tuple(names)), alpha, {}, datetime.now(UTC)
    )
    lifts: dict[str, tuple[float, float]] = {}
    for metric in dict.fromkeys(m.metric for m in result.metrics):
        found = recorded_lift(recorded, candidate, metric)
        if found is not None and found.value is not None and found.se is not None:
            lifts[metric] = (found.value, found.se)
    if not lifts:
        raise AbevalError(
            f"{truth}: the evaluation gave no lift of {candidate} over {control} with a "
            "standard error; check that both files rank items for the truth's users"
        )
    return Evidence(
        "evaluation", f"held-out evaluation of {candidate} against {control} on {truth}", lifts
    )
