"""``abeval agreement``: which offline signal predicted the online lift, over the
experiments of a store (docs/metrics.md#agreement-across-experiments).

For every experiment (all of the store's, or those named) this module opens
one :class:`~abeval.analysis.session.ExperimentSession` and asks it only for what
the board reads (:func:`experiment_signals`): the online comparisons (of which
the primary metrics are kept), the replayed offline metrics and the off-policy
estimates; no daily series, power, decision, segment or prediction is computed.
The latest recorded evaluations are read for all experiments at once
(:func:`abeval.store.evaluations.latest_evaluations`). Each experiment is read
under its saved configuration (control, primary metrics, window, α, caps...),
the board's ``--primary`` and ``--alpha`` overriding it when given. Each treatment arm ×
primary online metric × offline signal is one :class:`AgreementPair`; a signal
comes from one of three sources:

- ``evaluation``: a recorded ``abeval evaluate --experiment`` run, its relative
  lift from :func:`abeval.analysis.recorded_lift.recorded_lift`;
- ``replay``: a ranking metric replayed from the experiment's own logs, its
  relative lift against control. It is computed from the same clicks as the
  online metrics, so it is not independent evidence (``independent`` is False);
- ``ope``: an off-policy estimate of the treatment's CTR from the control's logs
  (each estimator a signal), its predicted lift. A post-hoc one (no target
  probabilities: the treatment's own frequency of (item, position)) is not
  independent evidence either, and is summarised apart from the predictions.

Where the offline signal predicts the online metric itself (an off-policy CTR
lift against the online CTR lift), each pair also has z = (predicted −
observed) / √(se_pred² + se_obs²), and :func:`with_z_scores` adds their mean and
the share with |z| < 1.96 to the summary (:mod:`abeval.stats.consistency`).

The statistics per (signal, source, online metric) come from
:func:`abeval.stats.agreement.agreement`. Experiments without any offline signal,
and those that could not be analysed, are counted and named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from abeval import __version__
from abeval.analysis.agreement import (
    RANKING,
    SCHEMA_VERSION,
    SOURCES,
    AgreementBoard,
    AgreementOptions,
    AgreementPair,
    ExperimentCoverage,
)
from abeval.analysis.agreement_headline import headlines
from abeval.analysis.agreement_pairs import (
    ExperimentSignals,
    experiment_options,
    experiment_pairs,
    experiment_signals,
    interleaved_signal,
)
from abeval.analysis.agreement_summary import backtests, summarise, with_z_scores
from abeval.analysis.kept import computed_once
from abeval.analysis.kept_batch import Prefetched, prefetch
from abeval.analysis.online_metrics import Catalog
from abeval.analysis.ope_file import read_target_propensities
from abeval.analysis.team_metrics import read_catalog
from abeval.errors import AbevalError, NotFoundError
from abeval.store.evaluations import latest_evaluations
from abeval.store.experiments import first_events, unknown_experiment_message

if TYPE_CHECKING:
    from abeval.store.database import Database


#: The parts of an experiment's session the board reads.
BOARD_PARTS = ("observed", "offline", "ope", "compared", "interleaving")


def agreement_board(
    store: Database, o: AgreementOptions | None = None, catalog: Catalog | None = None
) -> AgreementBoard:
    """Read every experiment's signals once, collect the pairs, summarise per signal
    (``catalog``: the store's metrics when read already)."""
    o = o or AgreementOptions()
    if catalog is None:
        with store.connect() as conn:
            catalog = read_catalog(conn)
    starts = first_events(store)
    names = _experiments(starts, o.experiments)
    _experiments(starts, list(o.target_propensities))  # every file names a known experiment
    for file in o.target_propensities.values():
        read_target_propensities(file)  # a file the user gave is an error, not a skipped report
    evaluations = latest_evaluations(store, names)
    # every experiment's row, target file and kept parts at once (none on Spark)
    given = prefetch(store, BOARD_PARTS)
    links = interleaving_links(store, given)
    pairs: list[AgreementPair] = []
    coverage: list[ExperimentCoverage] = []
    for name in names:
        if name in links:  # an interleaved run: a signal of its A/B test's
            why = f"interleaved: its Δ_AB is the interleaving signal of {links[name]}"
            coverage.append(ExperimentCoverage(name, None, (), {}, "skipped", why))
            continue
        try:
            read = experiment_signals(store, name, experiment_options(o, name), catalog, given)
            interleaved = [
                section
                for run, ab_test in links.items()
                if ab_test == name
                and (section := interleaved_signal(store, run, o.alpha, catalog, given)) is not None
            ]
        except AbevalError as exc:
            coverage.append(ExperimentCoverage(name, None, (), {}, "skipped", exc.message))
            continue
        found = experiment_pairs(read, evaluations.get(name), o.alpha, interleaved)
        pairs += found
        coverage.append(_coverage(read, found))
    order = sorted(names, key=lambda n: (starts.get(n) or "", n))
    # the statistics of the pairs, kept under their digest like the pairs' parts
    summary, backtest = computed_once(
        store,
        "board",
        (tuple(pairs), tuple(order), o),
        catalog,
        lambda: (
            with_z_scores(summarise(pairs, o, catalog), pairs),
            backtests(pairs, order, "start", o, catalog) if o.backtest else (),
        ),
        tuple,
    )
    return AgreementBoard(
        schema_version=SCHEMA_VERSION,
        abeval_version=__version__,
        generated_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        store=store.display,
        alpha=o.alpha,
        seed=o.seed,
        resamples=o.resamples,
        ranking=RANKING,
        headlines=headlines(summary, o.alpha),
        experiments=tuple(coverage),
        experiments_with_signals=sum(1 for c in coverage if c.status == "ok"),
        experiments_without_signals=tuple(
            c.experiment for c in coverage if c.status == "no_signals"
        ),
        experiments_skipped=tuple(c.experiment for c in coverage if c.status == "skipped"),
        pairs=tuple(pairs),
        summary=summary,
        notes=notes(o),
        backtest=backtest,
        catalog=catalog,
    )


def interleaving_links(store: Database, given: Prefetched | None = None) -> dict[str, str]:
    """Interleaved experiment → the A/B test it is recorded as an interleaving of
    (``abeval experiment set X --interleaving-of Y``), for every experiment of the store
    (from the rows ``given`` when they were read)."""
    from abeval.analysis.experiment_config import ExperimentConfig, read_config
    from abeval.store.experiments import experiment_names

    if given is not None:
        configs = {n: ExperimentConfig.from_json(r.config) for n, r in given.rows.items()}
    else:
        with store.connect() as conn:
            configs = {name: read_config(conn, name) for name in experiment_names(conn)}
    return {n: c.interleaving_of for n, c in configs.items() if c.interleaving_of is not None}


def _experiments(starts: Mapping[str, str | None], asked: Sequence[str] | None) -> list[str]:
    """The experiments to analyse of the store's (``starts``' keys); an unknown name
    is an error with a did-you-mean."""
    known = list(starts)
    if asked is None:
        return known
    for name in asked:
        if name not in known:
            raise NotFoundError(unknown_experiment_message(name, known))
    return list(dict.fromkeys(asked))


def _coverage(read: ExperimentSignals, pairs: Sequence[AgreementPair]) -> ExperimentCoverage:
    signals: dict[str, int] = {
        source: len({p.signal for p in pairs if p.source == source})
        for source in SOURCES
        if any(p.source == source for p in pairs)
    }
    name, control, treatments, level = read.experiment, read.control, read.treatments, read.alpha
    if signals:
        return ExperimentCoverage(name, control, treatments, signals, "ok", "", level)
    why = "no replayed metric, no impression with a propensity, no recorded evaluation"
    return ExperimentCoverage(name, control, treatments, {}, "no_signals", why, level)


def notes(o: AgreementOptions) -> tuple[str, ...]:
    level = f"{1 - o.alpha:.0%}"
    return (
        "Replayed metrics are computed from the same clicks (and purchases) as the online "
        "metrics: a replayed ranking metric that tracks CTR is close to circular, not evidence "
        "that it predicts. Off-policy estimates and recorded evaluations do not read the "
        "treatment's clicks.",
        f"Lifts are relative to the control; intervals are {level}. The online interval is the "
        "report's (adjusted over primary metrics × treatment arms); each offline interval is "
        "its signal's own.",
        f"Correlations: percentile bootstrap over experiments, {o.resamples:,} resamples, seed "
        f"{o.seed}; at least 3 experiments. With few experiments the bootstrap is too narrow "
        "(experiments in perfect order give [1, 1]); the permutation p-value of Spearman's "
        "correlation (exact up to 8 pairs) says how often unrelated lifts would rank as well.",
        "Calibration slope: online lift on offline lift, weighted by 1 / (se² + τ²) with τ² "
        "the between-experiment variance by the method of moments, its interval by "
        "Hartung–Knapp–Sidik–Jonkman with t(k − 2); 1 means the offline lift carries over as "
        "it is. The offline lift's own noise is not modelled there, which pulls it towards 0; "
        "the forecast model's slope (model slope) corrects for it by regression calibration.",
        "Noise: reliability R = max(0, 1 − mean(se²) / var(online lift)) is the share of the "
        "online lifts' spread that is real. The ceiling is the Spearman correlation a perfect "
        "predictor would reach on average against lifts this noisy (simulated, seed "
        f"{o.seed}); read Spearman as Spearman / ceiling. Below a ceiling of 0.2 the ratio is "
        "not given.",
        "Expected precision: of the points where the offline interval lies above 0, the "
        "expected share whose true online lift is above 0, each P(lift > 0 | observed) under "
        "normal–normal shrinkage towards the mean with the between-experiment variance. Raw "
        "precision counts only significant online lifts and is low even for a perfect "
        "predictor when the tests are small.",
        "Family-wise p: how often the best of all the signals of this online metric (replayed "
        "ones a family of their own) would rank the lifts at least this well if none were "
        "related, permuting whole experiments (arms sharing a control move together); "
        f"{o.resamples:,} permutations, or all of them up to 10,000.",
        "LOO gain: each experiment forecast by the forecast model fitted on the others, the "
        "mean log density of its observed online lift minus that of an intercept-only model "
        "(no offline signal); above 0 the signal improved the forecasts.",
        "Decision quality: offline says better when its interval lies above 0; online is "
        "better when its interval lies above 0. Precision = TP / (TP + FP); false-negative "
        "rate = FN / (TP + FN).",
        "A metric where lower is better (rmse, mae) is negated before comparing, so a good "
        "predictor always shows positive correlations.",
        f"Ranking: {RANKING}.",
        "Predicted against observed: where the signal predicts the online metric itself (an "
        "off-policy CTR lift), z = (predicted − observed) / √(se_pred² + se_obs²) per "
        "experiment; a signal whose stated errors are right has mean z near 0 and |z| < 1.96 "
        "in about 95% of experiments. The shared baseline makes the sum of variances an "
        "upper bound, so the share is if anything too high.",
    )
