"""What the agreement board reads of one experiment and the pairs it makes of it.

:func:`experiment_signals` opens one
:class:`~abeval.analysis.session.ExperimentSession` under :func:`experiment_options`
and keeps what the board reads (:class:`ExperimentSignals`): the primary metrics'
online comparisons, the replayed offline metrics and the off-policy estimates.
:func:`experiment_pairs` turns them, with the experiment's latest recorded
evaluation, into one :class:`~abeval.analysis.agreement.AgreementPair` per
treatment arm × primary online metric × offline signal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from abeval.analysis.agreement import AgreementOptions, AgreementPair, SignalSource
from abeval.analysis.interleaving import InterleavingSection
from abeval.analysis.ope import OpeOptions, OpeSection
from abeval.analysis.recorded_lift import recorded_lift
from abeval.analysis.report_model import OfflineResult, OnlineMetricResult, ReportOptions
from abeval.analysis.session import ExperimentSession
from abeval.stats.consistency import lift_difference
from abeval.stats.distributions import norm_isf
from abeval.store.evaluations import RecordedEvaluation

if TYPE_CHECKING:
    from abeval.analysis.kept_batch import Prefetched
    from abeval.analysis.online_metrics import Catalog
    from abeval.store.database import Database


@dataclass(frozen=True)
class ExperimentSignals:
    """What the board reads of one experiment: its control and other arms, the
    online comparisons of its primary metrics, the replayed offline metrics and
    the off-policy estimates (or why they were not run)."""

    experiment: str
    control: str
    treatments: tuple[str, ...]
    primary: tuple[OnlineMetricResult, ...]
    offline: tuple[OfflineResult, ...]
    ope: OpeSection
    #: The α it was read at (its saved configuration's, unless the board's was given).
    alpha: float


def experiment_signals(
    store: Database,
    name: str,
    options: ReportOptions,
    catalog: Catalog,
    prefetched: Prefetched | None = None,
) -> ExperimentSignals:
    """The parts of ``name`` the board reads, from one session (no daily series,
    power, decision or prediction) with the store's ``catalog`` (and what was
    ``prefetched`` for every experiment); an :class:`AbevalError` when it cannot
    be read."""
    with ExperimentSession(store, name, options, catalog, prefetched) as session:
        primary = tuple(m for m in session.online_comparisons() if m.role == "primary")
        offline = session.offline[0]
        others = tuple(session.observed.arms[1:])  # control first
        o = session.options  # under the saved configuration
        return ExperimentSignals(
            name, session.control, others, primary, offline, session.ope, o.alpha
        )


def experiment_options(o: AgreementOptions, name: str) -> ReportOptions:
    """The options one experiment is read under: its saved configuration, with the
    board's primary metrics and α as flags when they were given, its
    target-probabilities file, if any, and no daily series."""
    flags = frozenset(n for n, given in (("primary", o.primary_given), ("alpha", o.alpha_given))
                      if given)  # fmt: skip
    # off-policy: control's logs → each treatment only, the direction the board shows
    ope = OpeOptions(target_propensities=o.target_propensities.get(name), reverse=False)
    return ReportOptions(alpha=o.alpha, daily=False, primary=o.primary, flags=flags, ope=ope)


@dataclass(frozen=True)
class _Lift:
    value: float | None
    ci: tuple[float, float] | None
    status: str
    se: float | None = None
    independent: bool = True
    #: The signal predicts the online metric of this name itself (z is defined).
    predicts: str | None = None


def interleaved_signal(
    store: Database,
    name: str,
    alpha: float,
    catalog: Catalog,
    prefetched: Prefetched | None = None,
) -> InterleavingSection | None:
    """Δ_AB of the interleaved experiment ``name`` at the 1 − ``alpha`` level, read
    through its session as ``abeval report`` reads it (None when it is not
    interleaved); an :class:`AbevalError` when it cannot be read."""
    options = ReportOptions(alpha=alpha, daily=False, offline=False, flags=frozenset({"alpha"}))
    with ExperimentSession(store, name, options, catalog, prefetched) as session:
        return session.interleaving


def experiment_pairs(
    read: ExperimentSignals,
    evaluation: RecordedEvaluation | None,
    alpha: float,
    interleaved: Sequence[InterleavingSection] = (),
) -> list[AgreementPair]:
    """Every (treatment arm, primary online metric, signal) of one experiment;
    ``alpha``: the board's, the level of a recorded evaluation's interval;
    ``interleaved``: Δ_AB of the interleaved experiments linked to it."""
    pairs = []
    for m in read.primary:
        rel = m.comparison.relative
        if rel.effect is None:
            continue
        found = list(_signals(read, evaluation, m.arm, alpha))
        found += _interleaving(read, interleaved, m.arm, alpha)
        for signal, source, lift in found:
            z = None
            if lift.predicts == m.metric:
                z = lift_difference(lift.value, lift.se, rel.effect, rel.se, 0.05).z
            pairs.append(
                AgreementPair(
                    experiment=read.experiment,
                    arm=m.arm,
                    online_metric=m.metric,
                    online_lift=rel.effect,
                    online_ci=rel.interval,
                    online_se=rel.se,
                    signal=signal,
                    source=source,
                    offline_lift=lift.value,
                    offline_ci=lift.ci,
                    offline_status=lift.status,
                    independent=lift.independent and source != "replay",
                    offline_se=lift.se,
                    z=z,
                )
            )
    return pairs


def _signals(
    read: ExperimentSignals, evaluation: RecordedEvaluation | None, arm: str, alpha: float
) -> Iterable[tuple[str, SignalSource, _Lift]]:
    """(signal, source, offline lift) for one treatment arm. Offline intervals are
    each signal's own 1 − α interval, not adjusted over the other signals. The
    standard error is the estimator's own (off-policy estimates), else read off
    the interval (:func:`interval_se`) at its level: the board's ``alpha`` for a
    recorded evaluation, the experiment's α (its saved configuration's) for a
    replayed metric."""
    if evaluation is not None:
        for metric in dict.fromkeys(r.metric for r in evaluation.metrics if r.arm == arm):
            found = recorded_lift(evaluation, arm, metric)
            if found is not None:
                se = interval_se(found.ci, alpha)
                yield metric, "evaluation", _Lift(found.value, found.ci, found.status, se)
    ope = read.ope
    if ope.status == "ok":
        for d in ope.directions:
            if d.source == read.control and d.target == arm:
                for e in d.estimates:
                    p = e.predicted_lift
                    if p.status in UNSUPPORTED:  # the logs cannot form it: not a signal here
                        continue
                    own = d.evidence == "prediction"
                    yield e.estimator, "ope", _Lift(p.value, p.ci, p.status, p.se, own, "ctr")
    for r in read.offline:
        if r.arm == arm:
            rel = r.comparison.relative
            status = "ok" if rel.effect is not None else r.comparison.status
            se = interval_se(rel.ci, read.alpha)
            yield r.metric, "replay", _Lift(rel.effect, rel.ci, status, se)


def _interleaving(
    read: ExperimentSignals, interleaved: Sequence[InterleavingSection], arm: str, alpha: float
) -> list[tuple[str, SignalSource, _Lift]]:
    """The ``interleaving`` signal of treatment ``arm``: Δ_AB of a linked interleaved
    experiment whose ranker A is ``arm`` (or, with one treatment, whose baseline B is
    the control), its standard error read off its 1 − α interval."""
    out: list[tuple[str, SignalSource, _Lift]] = []
    for section in interleaved:
        if section.team_a != arm and (len(read.treatments) != 1 or section.team_b != read.control):
            continue
        se = interval_se(section.interval, alpha)
        lift = _Lift(section.delta, section.interval, section.status, se)
        out.append(("interleaving", "interleaving", lift))
        break  # one signal per arm: the first linked run that compared it
    return out


def interval_se(ci: tuple[float, float] | None, alpha: float) -> float | None:
    """The standard error a 1 − ``alpha`` interval stands for, read as a normal
    one: its width / (2 z), z the normal's 1 − α/2 quantile; None without one."""
    if ci is None:
        return None
    return max(ci[1] - ci[0], 0.0) / (2 * norm_isf(alpha / 2))


#: Estimate statuses that mean the logs cannot support the estimator at all.
UNSUPPORTED = frozenset({"no_given_above", "incomplete_candidates"})
