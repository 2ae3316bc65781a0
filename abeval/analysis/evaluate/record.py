"""``abeval evaluate --experiment X``: an evaluation recorded against an experiment
(docs/metrics.md#recorded-evaluations).

The models are named after the experiment's arms (``-r ARM=FILE``). Before any
file is read, :func:`experiment_target` checks that every model is an arm and that
the experiment's control (the report's rule,
:func:`abeval.analysis.observation.choose_control`) has a model; the evaluation
then runs with the control as the baseline of the paired
comparisons, whatever the order of the files, and :func:`recorded_evaluation` turns
its result into the rows of :mod:`abeval.store.evaluations`: per (arm, metric) the
value, its standard error over users and its users, and for the other arms the
paired difference against the control with its standard error and interval.
Metrics with no per-user values (coverage, Gini, RMSE, MAE ...) are recorded with
their value only: they have no paired difference, so they predict no lift.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.analysis.evaluate.reader import Frame, Source
from abeval.analysis.evaluate.results import EvaluationResult, Recorded
from abeval.errors import AbevalError, Interrupted, OptionError
from abeval.files import sha256_file
from abeval.store.evaluations import RecordedEvaluation, RecordedMetric, record_evaluation

if TYPE_CHECKING:
    from abeval.store.database import Database

#: Input roles of which there is one file; the models' files are keyed ``role:name``.
_SINGLE_ROLES = ("truth", "items", "history")


@dataclass(frozen=True)
class Target:
    """The experiment an evaluation is recorded against and its control arm."""

    experiment: str
    control: str
    arms: tuple[str, ...]


def experiment_target(
    store: Database, experiment: str, models: Sequence[str], predictors: Sequence[str] = ()
) -> Target:
    """Check the models against the experiment's arms: each model an arm, the
    control one of the recommendation models (of the predictions when there are
    no recommendations). One-line errors; nothing is read or written."""
    from abeval.analysis.observation import choose_control
    from abeval.store.experiments import get_settings, unknown_arm_message

    with store.connect() as conn:
        settings = get_settings(conn, experiment)
    for parameter, names in (("recommendations", models), ("predictions", predictors)):
        for name in names:
            if name not in settings.arms:
                raise OptionError(
                    parameter,
                    name,
                    unknown_arm_message(experiment, name, settings.arms)
                    + "; name each model after an arm, as ARM=FILE",
                    allowed=tuple(settings.arms),
                )
    control, _ = choose_control(settings.arms, settings.control_arm, None, experiment, None)
    baseline_models = models or predictors
    if control not in baseline_models:
        raise OptionError(
            "recommendations" if models else "predictions",
            None,
            f"no model for the control arm {control!r} of experiment {experiment!r}: lifts are "
            f"measured against it; give {control}=FILE",
        )
    return Target(experiment, control, tuple(settings.arms))


def fingerprints(result: EvaluationResult, frames: Sequence[Frame] = ()) -> dict[str, str]:
    """SHA-256 of every input file, keyed by its role (``truth``, ``items``,
    ``history``) or ``role:model`` (``recommendations:control``); an input given
    as one of ``frames`` (in memory) by :meth:`Frame.sha256`."""
    by_name = {f.name: f for f in frames}
    out = {}
    for f in result.files:
        key = f.role if f.role in _SINGLE_ROLES else f"{f.role}:{f.name}"
        frame = by_name.get(f.path)
        out[key] = frame.sha256() if frame is not None else sha256_file(f.path)[0]
    return out


def recorded_evaluation(
    result: EvaluationResult,
    target: Target,
    alpha: float,
    files: Mapping[str, str],
    at: datetime,
) -> RecordedEvaluation:
    """The rows to record: one per (model, metric), in the result's order."""
    paired = {(c.model, c.metric): c for c in result.comparisons}
    rows: list[RecordedMetric] = []
    for m in result.metrics:
        c = paired.get((m.group, m.metric)) if m.group != target.control else None
        rows.append(
            RecordedMetric(
                arm=m.group,
                metric=m.metric,
                value=m.value,
                se=m.std_error,
                users=m.users,
                baseline_arm=c.baseline if c else None,
                difference=c.difference if c else None,
                difference_se=c.difference_se if c else None,
                difference_low=c.ci_low if c else None,
                difference_high=c.ci_high if c else None,
                paired_users=c.users if c else None,
            )
        )
    for r in result.ratings:  # no per-user values: the value over the pairs predicted
        rows.append(RecordedMetric(r.model, r.metric, r.value, None, r.pairs_predicted))
    return RecordedEvaluation(
        experiment=target.experiment,
        recorded_at=at,
        conventions={**result.conventions, "alpha": f"{alpha:g}"},
        fingerprints=dict(files),
        metrics=tuple(rows),
    )


def evaluate_for_experiment(
    db: str | None,
    experiment: str,
    truth: Source,
    recommendations: Mapping[str, Source],
    *,
    predictions: Mapping[str, Source] | None = None,
    alpha: float = 0.05,
    on_lock_wait: Callable[[str], None] | None = None,
    keep_in: str | Path | None = None,
    **options: Any,
) -> EvaluationResult:
    """Check the models against ``experiment``'s arms, evaluate them with its
    control as the baseline (``options`` as :func:`~abeval.analysis.evaluate.evaluate`
    takes them) and record the evaluation in the store ``db``; the result says
    what was recorded (``result.recorded``).

    The store is opened twice, briefly: to check, and to record once the
    evaluation is done, so that it is not held while the files are read. A
    finished evaluation is never thrown away for a lock: the record waits for
    the store as long as another process holds it, and ``on_lock_wait`` is told
    once, with a sentence naming the holder. Nor for another failure of the
    store: it is kept in a file (:func:`keep`, in ``keep_in``) and
    :class:`NotRecorded` says how to record it (``abeval experiment record``)."""
    from dataclasses import replace

    from abeval.analysis.evaluate.run import evaluate
    from abeval.store import open_store
    from abeval.store.store_keys import KEPT_EVALUATIONS, store_key

    predictions = predictions or {}
    given = [truth, *recommendations.values(), *predictions.values()]
    frames = [
        f for f in (*given, options.get("items"), options.get("history")) if isinstance(f, Frame)
    ]
    with open_store(db, create=False) as store:
        target = experiment_target(store, experiment, list(recommendations), list(predictions))
        key = store_key(store, KEPT_EVALUATIONS)  # to sign the file kept if the record fails
    result = evaluate(
        truth,
        recommendations,
        predictions=predictions,
        alpha=alpha,
        baseline=target.control if recommendations else None,
        **options,
    )
    at = datetime.now(UTC).replace(tzinfo=None)
    evaluation = recorded_evaluation(result, target, alpha, fingerprints(result, frames), at)
    try:
        with open_store(
            db, create=False, lock_timeout=math.inf, on_lock_wait=on_lock_wait
        ) as store:
            eid = record_evaluation(store, evaluation)
    except AbevalError as exc:
        if isinstance(exc, Interrupted):
            raise
        raise NotRecorded(exc, keep(evaluation, key, keep_in), db, result) from None
    recorded = Recorded(experiment, eid, target.control, at.isoformat(), len(evaluation.metrics))
    return replace(result, recorded=recorded)


class NotRecorded(AbevalError):
    """The evaluation finished but the store refused it (a fault, a full disk, the
    experiment gone): it is kept in a file, and the line says how to record it."""

    def __init__(
        self,
        cause: AbevalError,
        kept: Path,
        db: str | None,
        result: EvaluationResult | None = None,
    ) -> None:
        from abeval.formatting import printable

        super().__init__(
            f"the evaluation finished but was not recorded: {printable(cause.message)}; "
            f"it is kept in {kept}: record it with abeval experiment record "
            f"{shlex.quote(str(kept))}{_store_option(db)}"
        )
        self.kept = kept
        #: The evaluation itself, for its outputs (``evaluate -o FILE``).
        self.result = result


def _store_option(db: str | None) -> str:
    """`` --db STORE`` naming the store as it may be shown: its secrets masked, and
    a word on putting them back where they were."""
    if not db:
        return ""
    from abeval.store.backends.url_secrets import secrets_of
    from abeval.store.engine import display_url

    shown = f" --db {shlex.quote(display_url(db))}"
    return f"{shown} (its secrets back in place of ***)" if secrets_of(db) else shown


def keep(evaluation: RecordedEvaluation, key: bytes, folder: str | Path | None = None) -> Path:
    """Write ``evaluation``, signed with the store's ``key``, to
    ``evaluation-<id>.json`` in ``folder`` (the current one by default; the
    temporary folder when that cannot be written)."""
    import tempfile

    from abeval.files import write_atomic
    from abeval.store.evaluations import evaluation_document

    text = json.dumps(evaluation_document(evaluation, key), indent=2, allow_nan=False)
    name = f"evaluation-{evaluation.evaluation_id}.json"
    for place in (Path(folder) if folder is not None else Path.cwd(), Path(tempfile.gettempdir())):
        try:
            write_atomic(place / name, text)
            return place / name
        except AbevalError:
            continue
    raise AbevalError(f"the evaluation finished but could not be kept in {folder or Path.cwd()}")


def record_kept(store: Database, path: str | Path) -> RecordedEvaluation:
    """Record an evaluation :func:`keep` wrote, as it was computed (its id and its
    time unchanged), once checked for what it claims: signed with this store's key,
    its experiment and arms in the store, its values finite and in range, its time
    not in the future. One line naming the file for anything else."""
    from abeval.errors import InputError
    from abeval.store.evaluations import check_evaluation, evaluation_from_document
    from abeval.store.experiments import get_settings
    from abeval.store.store_keys import KEPT_EVALUATIONS, existing_key

    fix = "give the file abeval evaluate --experiment kept"
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg}); {fix}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file; {fix}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to be a kept evaluation; {fix}") from None
    try:
        evaluation = evaluation_from_document(doc, existing_key(store, KEPT_EVALUATIONS))
    except ValueError as exc:
        raise InputError(f"{path}: {exc}; {fix}") from None
    with store.connect() as conn:
        settings = get_settings(conn, evaluation.experiment)  # NotFoundError if unknown
    wrong = check_evaluation(evaluation, settings.arms, datetime.now(UTC).replace(tzinfo=None))
    if wrong is not None:
        raise InputError(f"{path}: {wrong}; nothing recorded")
    record_evaluation(store, evaluation)
    return evaluation
