"""The agreement board and the forecast as a notebook shows them (results across
experiments; :mod:`abeval.report.notebook` says what every shown result adds).
Apart from the report's, so that a report loads neither the board nor the forecast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from abeval.analysis.agreement import AgreementBoard
from abeval.analysis.forecast import ForecastReport
from abeval.formatting import interval, number, pct
from abeval.report import frames
from abeval.report.shown import Shown


@dataclass(frozen=True, repr=False)
class ShownBoard(Shown, AgreementBoard):
    """An AgreementBoard: one row per offline signal × online metric in ``to_frame()``.

    >>> store.agreement().to_frame()[["signal", "source", "online_metric", "spearman"]]
    """

    SHOWN: ClassVar[tuple[str, ...]] = (
        "rank",
        "signal",
        "source",
        "online_metric",
        "experiments",
        "sign_agreement",
        "spearman",
        "spearman_p",
        "slope",
        "precision",
    )

    def rows(self) -> list[frames.Row]:
        return frames.board_rows(self.to_dict())

    def headline(self) -> str:
        best: dict[str, Any] = {}
        for s in self.summary:
            best.setdefault(s.online_metric, s)
        tops = ", ".join(
            f"{m}: {s.signal} (Spearman {number(s.spearman)})" for m, s in best.items()
        )
        return (
            f"AgreementBoard: {len(self.summary)} signal × metric rows over "
            f"{len(self.experiments)} experiments; best {tops or 'none'}"
        )


@dataclass(frozen=True, repr=False)
class ShownForecast(Shown, ForecastReport):
    """A ForecastReport: one row per online metric in ``to_frame()``.

    >>> store.forecast(evidence).to_frame()[["metric", "lift", "interval_low", "interval_high"]]
    """

    SHOWN: ClassVar[tuple[str, ...]] = (
        "metric",
        "signal",
        "status",
        "lift",
        "interval_low",
        "interval_high",
        "p_positive",
        "k",
        "users",
        "days",
    )

    def rows(self) -> list[frames.Row]:
        from abeval.report.forecast_json import forecast_json

        return frames.forecast_rows(forecast_json(self))

    def headline(self) -> str:
        said = [
            f"{f.metric} {pct(f.forecast.point)} {interval(f.forecast.interval)} from {f.signal}"
            for f in self.forecasts
        ]
        return f"ForecastReport: {'; '.join(said) or 'no forecast'}"
