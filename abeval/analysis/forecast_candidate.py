"""A candidate's offline evidence for ``abeval forecast``: its offline lift over
production per signal, with a standard error.

Three kinds: typed in (``--offline-lift 0.031 --offline-se 0.008``, one
signal); a held-out evaluation run here (``-t truth -r control=production.csv
-r candidate=new.csv``, as ``abeval evaluate``), read through the same
:func:`abeval.analysis.recorded_lift.recorded_lift` the agreement board reads
recorded evaluations with, so a candidate's lift and the history's lifts are
one definition; or an off-policy estimate from a stored experiment's
production (control) logs with the candidate's target probabilities
(``--target-propensities FILE --experiment NAME``): the headline estimator's
predicted lift, the same number the board takes from each past experiment's
off-policy section, so the forecast learns from that estimator's history. The
file's rows are read as ``report`` reads them for the direction from the
control to one arm: rows naming the control are left out, and the others name
one arm or none (:func:`abeval.analysis.ope_candidate.candidate_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from abeval.errors import AbevalError, NotFoundError, close_matches

if TYPE_CHECKING:
    from abeval.store.database import Database

EvidenceKind = Literal["typed", "evaluation", "off_policy"]


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
    truth: Any,
    models: Mapping[str, Any],
    *,
    k: tuple[int, ...] = (5, 10),
    metrics: str | None = None,
    alpha: float = 0.05,
) -> Evidence:
    """Evaluate the two models of ``models`` on ``truth`` (files, or tables in memory:
    :func:`~abeval.analysis.evaluate.evaluate`): the one named ``control`` (else the
    first) is production, the other the candidate."""
    from abeval.analysis.evaluate import evaluate
    from abeval.analysis.evaluate.reader import source
    from abeval.analysis.evaluate.record import Target, recorded_evaluation
    from abeval.analysis.recorded_lift import recorded_lift

    truth = source("truth", truth)

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


def ope_evidence(
    store: Database, experiment: str, target_propensities: str | Path, alpha: float = 0.05
) -> Evidence:
    """The candidate's off-policy lift over production: ``experiment``'s control
    logs reweighted to the candidate's probabilities (the file), by the headline
    estimator (:func:`abeval.analysis.ope_candidate.candidate_estimate`)."""
    from abeval.analysis.observation import choose_control
    from abeval.analysis.ope_candidate import candidate_estimate
    from abeval.analysis.ope_file import read_target_propensities
    from abeval.store.experiments import event_spans, list_experiments

    # this experiment's events alone counted (the store's would cost seconds)
    found = next(iter(list_experiments(store, only=experiment)), None)
    if found is None:
        near = close_matches(experiment, list(event_spans(store)), n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise NotFoundError(
            f"{{experiment}} {experiment}: no such experiment in the store{hint}",
            parameters=("experiment",),
        )
    control, _ = choose_control(
        [a.arm for a in found.arms], found.control_arm, None, experiment, parameter=None
    )
    rows = read_target_propensities(target_propensities)
    with store.connect() as conn:
        est = candidate_estimate(
            conn, experiment, control, rows, str(target_propensities), alpha=alpha
        )
    lift = est.headline.predicted_lift
    if lift.value is None or lift.se is None:
        raise AbevalError(
            f"{target_propensities}: the {est.headline.estimator} estimate from {experiment}'s "
            f"logs is undefined ({lift.status}); check that the file gives the candidate's "
            f"probabilities for the items {control} showed"
        )
    text = (
        f"off-policy lift {lift.value * 100:+.2f}% (se {lift.se * 100:.2f}%, "
        f"{est.headline.estimator}) from {control}'s logs of {experiment} with "
        f"{target_propensities}"
    )
    return Evidence("off_policy", text, {est.headline.estimator: (lift.value, lift.se)})
