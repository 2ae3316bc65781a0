"""The report of one experiment: ``Store.report`` and its options."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from abeval.api.opened import Opened
from abeval.api.options import Names, choice, cutoffs, forwards, keywords_checked, positive, window

if TYPE_CHECKING:
    from abeval.analysis.online_metrics import Catalog
    from abeval.analysis.report_model import ExperimentReport, ReportOptions


class Reporting(Opened):
    """``Store.report``."""

    @forwards("abeval.api.reporting:report_options")
    def report(
        self, experiment: str, checked: ReportOptions | None = None, **options: Any
    ) -> ExperimentReport:
        """The report of ``experiment`` (what ``abeval report`` writes): ``options``
        as :func:`report_options` takes them, or options it ``checked`` already.
        In Jupyter the report shows as its HTML page.

        >>> report = store.report("home-reco-v2", primary="ctr", alpha=0.01)
        >>> report.to_frame()[["metric", "arm", "relative_effect", "interval_low", "interval_high"]]
        """
        from abeval.analysis.online import build_report
        from abeval.report.notebook import ShownReport

        if checked is not None and options:
            raise TypeError("give either checked options or keyword options, not both")
        catalog = self.catalog()
        if checked is None:
            checked = report_options(catalog=catalog, **options)
        if checked.prior == "history":
            checked = self._with_learned_priors(experiment, checked, catalog)
        report = build_report(self._store, experiment, checked, catalog)
        return ShownReport.of(report)

    def _with_learned_priors(
        self, experiment: str, checked: ReportOptions, catalog: Catalog
    ) -> ReportOptions:
        """``checked`` with each primary metric's prior learned from the store's
        other experiments, read as ``Store.program`` reads them (its options)."""
        from dataclasses import replace

        from abeval.analysis.learned_priors import learned_priors

        program_options = report_options(catalog=catalog)
        priors = learned_priors(self._store, experiment, program_options, catalog, checked.primary)
        return replace(checked, priors=priors)


@keywords_checked
def report_options(
    *,
    control: str | None = None,
    alpha: float | None = None,
    correction: str | None = None,
    relative_interval: str = "fieller",
    sequential: bool = False,
    tuning_n: float = 5000.0,
    cuped_days: int | None = None,
    segment: str | None = None,
    primary: Names = None,
    guardrails: Names = None,
    secondary: Names = None,
    target_mde: float | None = None,
    k: str | Sequence[int] = (5, 10),
    offline: bool = True,
    window_from: str | datetime | None = None,
    window_to: str | datetime | None = None,
    cap: Sequence[str] | Mapping[str, float] | None = None,
    target_propensities: str | Path | None = None,
    ope_cap: float = 100.0,
    ope: bool = True,
    plan_users: int | None = None,
    plan_days: int | None = None,
    prior: str = "flat",
    catalog: Catalog | None = None,
) -> ReportOptions:
    """The report's options, checked: the CLI's options under their Python names
    (``--from`` is ``window_from``, ``--cap`` takes ``{"revenue_per_user": 0.99}``
    too). An :class:`OptionError` names the first invalid one.

    The options ``abeval experiment set`` records (primary, secondary and
    guardrail metrics, guardrails as ``METRIC[:MARGIN]``, caps, CUPED days, target
    MDE, alpha, correction, the planned horizon) are None when not given: the
    report then takes the experiment's saved configuration, else the default
    (docs/usage.md#saved-configuration). The metrics named are checked against
    ``catalog``, a store's (:meth:`Store.catalog`); without one, a name that is not
    built in is kept for the report to check against its store's.

    ``prior``: the Bayesian view's, ``flat`` (default) or ``history`` (each
    metric's learned from the store's other experiments;
    docs/metrics.md#a-prior-learned-from-history).

    >>> checked = abeval.api.report_options(primary="ctr", k="5,10", alpha=0.01)
    >>> store.report("home-reco-v2", checked)
    """
    from abeval.analysis.experiment_config import parse_config
    from abeval.analysis.history_prior import PRIOR_CHOICES
    from abeval.analysis.ope import OpeOptions
    from abeval.analysis.report_model import ReportOptions
    from abeval.choices import RelativeIntervalChoice

    choice("relative_interval", relative_interval, get_args(RelativeIntervalChoice))
    choice("prior", prior, PRIOR_CHOICES)
    positive("tuning_n", tuning_n)
    positive("ope_cap", ope_cap)
    start, end = window(window_from, window_to)
    given = parse_config(
        primary=primary,
        secondary=secondary,
        guardrails=guardrails,
        caps=cap,
        cuped_days=cuped_days,
        target_mde=target_mde,
        alpha=alpha,
        correction=correction,
        plan_users=plan_users,
        plan_days=plan_days,
        catalog=catalog,
    )
    return given.options(
        ReportOptions(
            control=control,
            relative_interval=relative_interval,  # type: ignore[arg-type]
            sequential=sequential,
            tuning_n=tuning_n,
            segment=segment,
            offline_ks=cutoffs(k),
            offline=offline,
            window_from=start,
            window_to=end,
            ope=OpeOptions(ope, ope_cap, str(target_propensities) if target_propensities else None),
            prior=prior,  # type: ignore[arg-type]
        )
    )
