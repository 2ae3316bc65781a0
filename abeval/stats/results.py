"""Frozen result dataclasses of the statistics layer: what every presenter reads.

Every result is a frozen dataclass whose numbers are finite floats or ``None``:
a value that is not defined (a relative lift over a zero baseline, the standard
error of a constant metric) is ``None``, the result's ``status`` says why and its
``message`` says it in words. Non-finite numbers are turned into ``None`` when a
result is built, so NaN and inf never reach a table or a JSON document.
``to_dict()`` returns plain JSON-ready values (dicts, lists, str, int, bool,
float, None).
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from types import MappingProxyType
from typing import Any, Literal

#: Why a comparison has no (or only partial) numbers. ``ok`` means everything
#: that the method defines is filled in.
Status = Literal[
    "ok",
    "invalid_input",  # a sum is NaN/inf, a count or a sum of squares is negative
    "empty_arm",  # an arm has no users
    "too_few_users",  # an arm has one user: no variance can be estimated
    "zero_denominator",  # a ratio metric whose denominator sums to 0 in an arm
    "zero_variance",  # the estimate has no variance: no test, no interval
    "zero_baseline",  # the control mean is 0: no relative lift
    "failed",  # the metric could not be computed (a team metric's definition or data)
]

SrmStatus = Literal["ok", "no_users", "single_arm", "invalid_input"]

PowerStatus = Status | Literal["unreachable"]

Method = Literal["welch", "sequential"]

Adjustment = Literal["holm", "bh"]

#: How the relative lift's interval is made: Fieller's theorem (consistent with
#: the absolute test) or the delta method (gbstats' numbers).
RelativeInterval = Literal["fieller", "delta"]

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


def finite(value: float | None) -> float | None:
    """``value`` as a plain float, or None when it is None, NaN or infinite."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _clean(value: Any) -> Any:
    """Numbers to plain int / finite float / None; an interval with an undefined end
    to None."""
    kind = type(value)  # the plain numbers first: the ABC checks below are slow
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is int or value is None or isinstance(value, bool | str):
        return value
    np = sys.modules.get("numpy")  # a numpy bool exists only once numpy is loaded
    if np is not None and isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return finite(float(value))
    if isinstance(value, tuple):
        items = tuple(_clean(v) for v in value)
        # an interval (or any tuple) with a non-finite number is undefined as a whole
        lost = any(v is not None and c is None for v, c in zip(value, items, strict=True))
        return None if lost else items
    return value


#: The metadata of a field of a result that its presenters read but that is no part
#: of its JSON document (``to_dict``): what a result carries along, such as the
#: metric catalog of the store it was computed from.
NOT_IN_JSON: Mapping[str, bool] = MappingProxyType({"json": False})


def _plain(value: Any) -> JsonValue:
    if is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in fields(value)
            if f.metadata.get("json", True)
        }
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return _clean(value)


class JsonResult:
    """Mixin for the frozen result dataclasses: sanitised numbers and ``to_dict``."""

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            object.__setattr__(self, f.name, _clean(getattr(self, f.name)))

    def to_dict(self) -> dict[str, JsonValue]:
        """Plain JSON-ready values: no dataclasses, tuples, numpy scalars, NaN or inf.

        >>> Lift(effect=0.1, ci=(0.02, 0.18)).to_dict()["ci"]
        [0.02, 0.18]
        """
        plain = _plain(self)
        assert isinstance(plain, dict)
        return plain


@dataclass(frozen=True)
class Lift(JsonResult):
    """One estimate of the treatment effect on one scale (absolute or relative).

    ``ci`` is the two-sided 1 − α interval (a confidence sequence for the
    sequential method), ``dof`` the Welch–Satterthwaite degrees of freedom (None
    for the sequential method, which is normal-asymptotic). After
    :func:`abeval.stats.adjust_comparisons`, ``p_adjusted`` is the
    multiplicity-adjusted p-value and ``ci_adjusted`` the matching interval at
    level 1 − ``alpha_adjusted``. ``interval_note`` says when the shown
    interval (``interval``) is unbounded (then it is None while the p-value is
    set) or clipped at −100% (Fieller, docs/metrics.md#relative-lift).
    """

    effect: float | None
    se: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    dof: float | None = None
    p_adjusted: float | None = None
    ci_adjusted: tuple[float, float] | None = None
    alpha_adjusted: float | None = None
    interval_note: str = ""

    @property
    def interval(self) -> tuple[float, float] | None:
        """The interval every presenter shows and judges significance by: the
        multiplicity-adjusted ``ci_adjusted`` once the lift has been adjusted (None
        when that interval is unbounded: never the unadjusted one in its place),
        else the unadjusted ``ci`` (None when it is not defined)."""
        adjusted = self.alpha_adjusted is not None or self.ci_adjusted is not None
        return self.ci_adjusted if adjusted else self.ci


@dataclass(frozen=True)
class FiellerTerms(JsonResult):
    """What the relative interval of Fieller's theorem is computed from: the
    absolute lift D and the control mean B with their variances and covariance,
    and whether the metric cannot be negative (then the interval stops at −100%).
    See docs/metrics.md#relative-lift."""

    numerator: float
    numerator_variance: float
    denominator: float
    denominator_variance: float
    covariance: float
    nonnegative: bool


@dataclass(frozen=True)
class Comparison(JsonResult):
    """A treatment arm against control for one metric (frequentist).

    ``control_mean`` and ``treatment_mean`` are the unadjusted arm means (the
    ratio Σm/Σd for a ratio metric). ``absolute`` is μT − μC, ``relative`` is
    (μT − μC)/|μC| (CUPED-adjusted means in the numerator when ``cuped``).
    ``theta`` and ``variance_reduction`` (share of the variance of the absolute
    lift removed by CUPED) are set when CUPED was applied; ``tuning_n`` when
    ``method`` is ``sequential``; ``adjustment`` once multiple-testing adjusted.
    ``relative_interval`` says how the relative interval was made: ``fieller``
    (its p-value is the absolute one, its interval excludes 0 exactly when that
    p-value is below α; ``fieller`` holds the terms; the relative ``se`` is
    still the delta method's, for reference) or ``delta`` (gbstats).
    """

    status: Status
    message: str
    method: Method
    alpha: float
    control_n: int
    treatment_n: int
    control_mean: float | None
    treatment_mean: float | None
    absolute: Lift
    relative: Lift
    cuped: bool = False
    theta: float | None = None
    variance_reduction: float | None = None
    tuning_n: float | None = None
    adjustment: Adjustment | None = None
    relative_interval: RelativeInterval = "delta"
    fieller: FiellerTerms | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class SrmResult(JsonResult):
    """Sample-ratio mismatch: Pearson χ² of users per arm against the expected split.

    ``expected`` are the expected user counts, ``flagged`` is p < ``threshold``.
    """

    status: SrmStatus
    message: str
    users: tuple[int, ...]
    expected: tuple[float, ...] | None
    statistic: float | None
    dof: int | None
    p_value: float | None
    threshold: float
    flagged: bool


@dataclass(frozen=True)
class Posterior(JsonResult):
    """Normal posterior of the lift on one scale.

    ``chance_to_win`` is P(lift > 0) (P(lift < 0) when lower is better);
    ``risk_control`` is the expected loss of keeping control, E[max(lift, 0)],
    ``risk_treatment`` that of shipping treatment, E[max(−lift, 0)] (signs
    swapped when lower is better); ``ci`` is the central 1 − α credible interval.
    """

    mean: float | None
    sd: float | None = None
    ci: tuple[float, float] | None = None
    chance_to_win: float | None = None
    risk_control: float | None = None
    risk_treatment: float | None = None


@dataclass(frozen=True)
class BayesianResult(JsonResult):
    """A treatment arm against control for one metric (Bayesian, normal posterior)."""

    status: Status
    message: str
    alpha: float
    control_n: int
    treatment_n: int
    control_mean: float | None
    treatment_mean: float | None
    absolute: Posterior
    relative: Posterior
    prior_scale: Literal["relative", "absolute"] | None
    prior_mean: float | None
    prior_variance: float | None
    lower_is_better: bool
    cuped: bool = False
    theta: float | None = None


@dataclass(frozen=True)
class PowerResult(JsonResult):
    """Sample size or minimum detectable effect of a two-sided test.

    ``users_by_arm`` are the users needed (or given) per arm, control first;
    ``total_users`` their sum. ``mde_relative`` is the detectable lift as a share
    of the baseline mean, ``mde_absolute`` in the metric's units.
    ``critical_value`` is the z (or confidence-sequence) multiplier of the
    standard error that the estimate must exceed.
    """

    status: PowerStatus
    message: str
    alpha: float
    power: float
    baseline_mean: float | None
    baseline_variance: float | None
    mde_relative: float | None
    mde_absolute: float | None
    users_by_arm: tuple[int, ...] | None
    total_users: int | None
    critical_value: float | None
    sequential: bool
    tuning_n: float | None
