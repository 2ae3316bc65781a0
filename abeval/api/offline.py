"""Offline evaluation: ``evaluate`` (runs scored against held-out truth), recording
one kept by a failed record (``Store.record_evaluation``), and the ``[NAME=]FILE``
arguments of ``abeval evaluate``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.api.opened import Opened
from abeval.api.options import Names, cutoffs, finite, forwards, keywords_checked, share, within
from abeval.errors import OptionError

if TYPE_CHECKING:
    from abeval.analysis.evaluate.record import RecordedEvaluation
    from abeval.analysis.evaluate.results import EvaluationResult


class Offline(Opened):
    """``Store.record_evaluation``."""

    def record_evaluation(self, file: str | Path) -> RecordedEvaluation:
        """Record an evaluation that :func:`evaluate` with ``experiment`` finished
        but could not record (it kept it in ``file``), its id and time unchanged.

        >>> store.record_evaluation("evaluation-kept.json").evaluation_id
        """
        from abeval.analysis.evaluate.record import record_kept

        return record_kept(self._store, file)


@keywords_checked
@forwards("abeval.analysis.evaluate.run:evaluate")
def evaluate(
    truth: Any,
    runs: Mapping[str, Any] | Sequence[Any] = (),
    *,
    k: str | Sequence[int] = (5, 10),
    metrics: Names = None,
    predictions: Mapping[str, Any] | Sequence[Any] = (),
    ap_denominator: str | None = None,
    gain: str | None = None,
    empty: str | None = None,
    duplicates: str | None = None,
    experiment: str | None = None,
    db: str | Path | None = None,
    on_lock_wait: Callable[[str], None] | None = None,
    **options: Any,
) -> EvaluationResult:
    """Score recommendation runs against held-out truth, as ``abeval evaluate``:
    ``runs`` maps a model name to its run (a file path, a pandas DataFrame or an
    Arrow table; the first is the baseline); ``truth`` likewise. The ranking
    conventions ``ap_denominator`` (R, min_rk, hits), ``gain`` (linear, exp2,
    binary), ``empty`` (skip, zero) and ``duplicates`` (error, dedupe) default to
    trec_eval's. Other options (``alpha``, ``resamples``, ``seed``, ``missing``,
    ``min_relevance``, ``items``, ``history``, ``per_user``, ``baseline``) as
    :func:`abeval.analysis.evaluate.evaluate` takes them.

    With ``experiment``, every run is named after an arm of that experiment of
    the store ``db``, its control is the baseline, and the evaluation is recorded
    there (``result.recorded``); ``on_lock_wait`` is told, in a sentence, when the
    record waits for a store another process holds.

    >>> result = abeval.evaluate("truth.csv", {"bm25": "bm25.csv", "new": "new.csv"}, k=[10])
    >>> result.to_frame()[["model", "metric", "value", "difference"]]
    """
    from abeval.report.evaluate_shown import ShownEvaluation

    as_shown = ShownEvaluation.of
    chosen = {"ap_denominator": ap_denominator, "gain": gain, "empty": empty}
    chosen["duplicates"] = duplicates
    if any(v is not None for v in chosen.values()):
        from abeval.metrics import Conventions

        given = {name: value for name, value in chosen.items() if value is not None}
        options["conventions"] = Conventions(**given)  # type: ignore[arg-type]
    share("alpha", options.get("alpha", 0.05))
    within("resamples", options.get("resamples", 2000), 1, 10**7, "give 1 to 10,000,000")
    reason = "give a whole number from 0 to 2**32 - 1"
    within("seed", options.get("seed", 0), 0, 2**32 - 1, reason)
    if options.get("min_relevance") is not None:
        finite("min_relevance", options["min_relevance"], "a finite relevance grade")
    if db is not None and experiment is None:
        from abeval.store.engine import display_url

        reason = "a store records an evaluation: give {experiment} too"
        raise OptionError("db", display_url(str(db)), reason, mentions=("experiment",))
    ks = cutoffs(k)
    from abeval.analysis.evaluate.inputs import named
    from abeval.analysis.evaluate.reader import source
    from abeval.analysis.evaluate.run import model_sources

    truth_source = source("truth", truth)
    recs = model_sources("runs", runs)
    preds = model_sources("predictions", predictions)
    for name in ("items", "history"):
        if options.get(name) is not None:
            options[name] = source(name, options[name])
    if experiment is not None:
        from abeval.analysis.evaluate.record import evaluate_for_experiment

        return as_shown(
            evaluate_for_experiment(
                None if db is None else str(db),
                experiment,
                truth_source,
                dict(named(recs)),
                predictions=preds if isinstance(preds, Mapping) else {},
                on_lock_wait=on_lock_wait,
                k=ks,
                metrics=metrics,
                **options,
            )
        )
    from abeval.analysis.evaluate import evaluate as run_evaluation

    return as_shown(
        run_evaluation(truth_source, recs, predictions=preds, k=ks, metrics=metrics, **options)
    )


@keywords_checked
def named_models(texts: Sequence[str]) -> dict[str, str]:
    """``[NAME=]FILE`` texts (``abeval evaluate -r``) → model name → file, named
    after the files where no name is given (docs/usage.md#named-models); a
    ValueError says what is wrong with one.

    >>> abeval.api.named_models(["bm25.csv", "new=run.csv"])
    {'bm25': 'bm25.csv', 'new': 'run.csv'}
    """
    from abeval.files import named_models as parse

    return parse(texts)


@keywords_checked
def model_argument(
    text: str, *, what: str = "model name", form: str = "NAME=PATH", must_exist: bool = True
) -> tuple[str | None, str]:
    """One ``NAME=FILE`` text → (name or None, file), split as :func:`named_models`
    splits; a ValueError names ``what`` and ``form`` when it cannot be.

    >>> abeval.api.model_argument("new=run.csv")
    ('new', 'run.csv')
    """
    from abeval.files import model_argument as parse

    return parse(text, what=what, form=form, must_exist=must_exist)
