"""Everything recorded for one experiment (``abeval experiment show``,
``Store.experiment``): its settings and saved configuration, what was decided
(owner, hypothesis, tags, status, date), the target probabilities recorded with
it and the offline evaluations recorded against it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from abeval.analysis.experiment_config import ExperimentConfig, read_config

if TYPE_CHECKING:
    from abeval.store.database import Database
    from abeval.store.evaluations import EvaluationListed
    from abeval.store.experiment_outcomes import Outcome
    from abeval.store.experiments import ExperimentSettings
    from abeval.store.ope_target import RecordedTargets


@dataclass(frozen=True)
class ExperimentRecord:
    """What is recorded for ``experiment`` (module docstring)."""

    experiment: str
    settings: ExperimentSettings
    config: ExperimentConfig
    outcome: Outcome
    targets: RecordedTargets | None
    evaluations: tuple[EvaluationListed, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``abeval experiment show -f json``: the settings
        (``arms``, ``control``, ``split``, ``window_from``, ``window_to``,
        ``config``), what was decided (``owner``, ``hypothesis``, ``tags``,
        ``status``, ``decided_on``), ``target_propensities`` (null when none are
        recorded) and ``evaluations``.

        >>> store.experiment("home-reco-v2").to_dict()["status"]
        """
        o, t = self.outcome, self.targets
        return {
            **settings_fields(self.experiment, self.settings, self.config),
            "owner": o.owner,
            "hypothesis": o.hypothesis,
            "tags": list(o.tags),
            "status": o.status,
            "decided_on": o.decided_on,
            "target_propensities": None
            if t is None
            else {
                "file": t.file,
                "checksum": t.checksum,
                "rows": t.rows,
                "recorded_at": t.recorded_at.isoformat(),
            },
            "evaluations": [
                {
                    "evaluation_id": e.evaluation_id,
                    "recorded_at": e.recorded_at.isoformat(),
                    "arms": list(e.arms),
                    "metrics": list(e.metrics),
                }
                for e in self.evaluations
            ],
        }


def settings_fields(
    experiment: str, s: ExperimentSettings, config: ExperimentConfig
) -> dict[str, Any]:
    """The settings and the saved configuration as JSON (the start of
    :meth:`ExperimentRecord.to_dict`)."""
    return {
        "experiment": experiment,
        "arms": s.arms,
        "control": s.control_arm,
        "split": s.split,
        "window_from": s.window_from.isoformat() if s.window_from else None,
        "window_to": s.window_to.isoformat() if s.window_to else None,
        "config": config.recorded(),
    }


def read_record(store: Database, experiment: str) -> ExperimentRecord:
    """Everything recorded for ``experiment``, on one connection."""
    from abeval.store.evaluations import listed_evaluations
    from abeval.store.experiment_outcomes import read_outcome
    from abeval.store.experiments import get_settings
    from abeval.store.ope_target import recorded

    with store.connect() as conn:
        settings = get_settings(conn, experiment)
        return ExperimentRecord(
            experiment=experiment,
            settings=settings,
            config=read_config(conn, experiment),
            outcome=read_outcome(conn, experiment),
            targets=recorded(conn, experiment),
            evaluations=listed_evaluations(conn, experiment),
        )
