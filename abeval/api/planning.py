"""Planning: what an experiment can detect and the users a lift needs (``Store.power``,
``Store.plan``), and power by hand (``plan_power``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from abeval.api.opened import Opened
from abeval.api.options import (
    Names,
    at_least,
    finite,
    given,
    keywords_checked,
    lift,
    positive,
    share,
    within,
)
from abeval.errors import OptionError

if TYPE_CHECKING:
    from abeval.analysis.planning import Plan
    from abeval.analysis.report_model import PowerInfo
    from abeval.stats import PowerResult


class Planning(Opened):
    """``Store.power`` and ``Store.plan``."""

    def power(
        self,
        experiment: str,
        *,
        metric: Names = None,
        mde: float | None = None,
        alpha: float | None = None,
        power: float = 0.8,
        sequential: bool = False,
        tuning_n: float = 5000.0,
        cuped_days: int | None = None,
    ) -> tuple[PowerInfo, ...]:
        """What ``experiment`` can detect now and the users a relative lift of
        ``mde`` (default: the recorded target, else 2%) needs, per metric (default
        the recorded primary metrics, else the report's) and treatment arm, planned
        from its own data at the α the decision uses (:meth:`plan`).

        >>> [(row.metric, row.users) for row in store.power("home-reco-v2", mde=0.02)]
        """
        return self.plan(
            experiment,
            metric=metric,
            mde=mde,
            alpha=alpha,
            power=power,
            sequential=sequential,
            tuning_n=tuning_n,
            cuped_days=cuped_days,
        ).power

    def plan(
        self,
        experiment: str,
        *,
        metric: Names = None,
        mde: float | None = None,
        alpha: float | None = None,
        power: float = 0.8,
        sequential: bool = False,
        tuning_n: float = 5000.0,
        cuped_days: int | None = None,
        delta: float | None = None,
    ) -> Plan:
        """:meth:`power` with the guardrails' non-inferiority plan and the options
        it was planned under. An option left None takes the experiment's saved
        configuration (``abeval experiment set``), else the default. For an
        interleaved experiment, ``Plan.interleaving``: the users needed to detect
        the preference ``delta`` (|Δ_AB|; None: the observed one) beside those an
        A/B test needs for the CTR lift ``mde`` (docs/metrics.md#interleaving).

        >>> plan = store.plan("home-reco-v2", mde=0.02)
        """
        from abeval.analysis.experiment_config import parse_config
        from abeval.analysis.online_metrics import parse_online_metrics
        from abeval.analysis.planning import plan_report
        from abeval.analysis.report_model import ReportOptions

        share("power", power)
        positive("tuning_n", tuning_n)
        if mde is not None:
            lift("mde", mde)
            positive("mde", mde)
        if delta is not None:
            within("delta", delta, 0.0, 0.5, "a preference Δ_AB is between 0 and 0.5")
            positive("delta", delta)
        catalog = self.catalog()
        metrics = (
            parse_online_metrics(metric, (), "metric", catalog=catalog)
            if metric is not None
            else None
        )
        given = parse_config(primary=metrics, alpha=alpha, cuped_days=cuped_days, target_mde=mde)
        base = ReportOptions(power=power, sequential=sequential, tuning_n=tuning_n, offline=False)
        return plan_report(self._store, experiment, given.options(base), catalog, delta)


@keywords_checked
def plan_power(
    baseline: float,
    *,
    sd: float | None = None,
    mde: float | None = None,
    users: int | None = None,
    arms: int = 2,
    alpha: float = 0.05,
    power: float = 0.8,
    sequential: bool = False,
    tuning_n: float = 5000.0,
) -> PowerResult:
    """Power by hand, as ``abeval power --baseline``: the users a relative lift of
    ``mde`` needs, or (``users`` per arm) the lift detectable; a proportion when
    ``sd`` is None, else a mean with that standard deviation per user.

    >>> abeval.api.plan_power(0.05, mde=0.02).users  # per arm, to detect a 2% lift of a 5% rate
    """
    from abeval.stats import minimum_detectable_effect, required_users

    if (mde is None) == (users is None):
        raise OptionError(
            "mde", mde, "give exactly one of {mde} or {users}", mentions=("mde", "users")
        )
    share("alpha", alpha)
    share("power", power)
    positive("tuning_n", tuning_n)
    if mde is not None:
        lift("mde", mde)
    at_least("arms", arms, 2, "a test needs a control and at least one treatment")
    finite("baseline", baseline)
    if sd is not None:
        positive("sd", sd)
    elif not 0 < baseline < 1:
        reason = "a proportion must be between 0 and 1; for a mean also give {sd}"
        raise OptionError("baseline", baseline, reason, mentions=("sd",))
    if users is not None:
        at_least("users", users, 2, "give at least 2 users per arm")
    variance = baseline * (1 - baseline) if sd is None else sd * sd
    if mde is not None:
        return required_users(
            baseline,
            variance,
            mde,
            alpha=alpha,
            power=power,
            n_arms=arms,
            sequential=sequential,
            tuning_n=tuning_n,
        )
    assert users is not None
    return minimum_detectable_effect(
        users, baseline, variance, alpha=alpha, power=power, sequential=sequential,
        tuning_n=tuning_n,
    )  # fmt: skip


@keywords_checked
def power_inputs(
    *,
    experiment: str | None = None,
    baseline: float | None = None,
    sd: float | None = None,
    users: int | None = None,
    metric: str | None = None,
    cuped_days: int | None = None,
) -> str:
    """Which power plan the options ask for, checked (``abeval power`` takes both):
    ``"data"``, planned from ``experiment``'s data (:meth:`Store.power`, which takes
    no ``baseline``, ``sd`` or ``users``), or ``"hand"``, from a ``baseline``
    (:func:`plan_power`, which has no ``metric`` or ``cuped_days``).

    >>> abeval.api.power_inputs(baseline=0.05)
    'hand'
    """
    if experiment is not None:
        for name, value in (("baseline", baseline), ("sd", sd), ("users", users)):
            reason = "plans from the data with {experiment}: leave it out"
            given(name, value is None, reason, ("experiment",))
        return "data"
    given("metric", metric is None, "needs {experiment}", ("experiment",))
    given("cuped_days", cuped_days is None, "needs {experiment}", ("experiment",))
    given(
        "baseline", baseline is not None, "give the control value, or {experiment}", ("experiment",)
    )
    return "hand"
