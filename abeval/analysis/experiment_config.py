"""An experiment's saved configuration (docs/usage.md#saved-configuration): what
``abeval experiment set`` records beside control, split and window, how it is
read and checked, and how a run's flags override it.

:class:`ExperimentConfig` holds only what was recorded (``None``: not recorded).
:func:`with_record` turns the report options of one run into the options the
report is built under: each setting from the run's flag when one was given, else
from the record, else the default; ``ReportOptions.sources`` says which. Writing
a configuration into the store: :mod:`abeval.analysis.config_recording`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

from abeval.analysis.online_metrics import Catalog, parse_online_metrics
from abeval.analysis.report_model import PlanRecord, ReportOptions
from abeval.choices import Correction
from abeval.errors import OptionError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

#: Where a setting of a report came from.
SettingSource = Literal["flag", "record", "default"]

#: The options ``experiment set`` records in the configuration, by field name,
#: with the flag that sets (and, with ``experiment unset``, removes) each.
OPTIONS: dict[str, str] = {
    "primary": "--primary",
    "secondary": "--secondary",
    "guardrails": "--guardrails",
    "caps": "--cap",
    "cuped_days": "--cuped-days",
    "target_mde": "--target-mde",
    "alpha": "--alpha",
    "correction": "--correction",
    "plan_users": "--plan-users",
    "plan_days": "--plan-days",
    "interleaving_of": "--interleaving-of",
}

#: Recorded options that link the experiment to another rather than set how its
#: report is built: no run's flag overrides them.
LINKS = frozenset({"interleaving_of"})


@dataclass(frozen=True)
class Guardrail:
    """A guardrail metric and the relative harm it may show at most (None: no margin)."""

    metric: str
    margin: float | None = None

    def text(self) -> str:
        return self.metric if self.margin is None else f"{self.metric}:{self.margin:.4g}"


@dataclass(frozen=True)
class ExperimentConfig:
    """The recorded configuration; ``None`` where nothing is recorded."""

    primary: tuple[str, ...] | None = None
    secondary: tuple[str, ...] | None = None
    guardrails: tuple[Guardrail, ...] | None = None
    caps: tuple[tuple[str, float], ...] | None = None
    cuped_days: int | None = None
    target_mde: float | None = None
    alpha: float | None = None
    correction: Correction | None = None
    plan_users: int | None = None
    plan_days: int | None = None
    #: The A/B test of the same two rankers this interleaved experiment compared
    #: (``--interleaving-of``): its Δ_AB is a signal of that test on the board.
    interleaving_of: str | None = None
    #: When the plan was recorded and on what data (set by
    #: :func:`abeval.analysis.config_recording.record`, no flag).
    plan_recorded: PlanRecord | None = None

    def recorded(self) -> dict[str, Any]:
        """The recorded options as JSON values, in :data:`OPTIONS` order."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if f.name == "guardrails":
                out[f.name] = [{"metric": g.metric, "margin": g.margin} for g in value]
            elif f.name == "caps":
                out[f.name] = dict(value)
            elif f.name == "plan_recorded":
                out[f.name] = value.to_dict()
            elif isinstance(value, tuple):
                out[f.name] = list(value)
            else:
                out[f.name] = value
        return out

    def options(self, o: ReportOptions) -> ReportOptions:
        """``o`` with this configuration's options as the flags of one run: their
        values set, and ``flags`` naming them (the record fills the others)."""
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        given = {k: v for k, v in given.items() if v is not None and k not in LINKS}
        given.pop("plan_recorded", None)  # how the plan was recorded, not an option
        guardrails = given.pop("guardrails", None)
        if guardrails is not None:
            given["guardrails"] = tuple(g.metric for g in guardrails)
            given["margins"] = tuple((g.metric, g.margin) for g in guardrails if g.margin)
        flags = frozenset(given) - {"margins"}
        return replace(o, **given, flags=flags)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ExperimentConfig:
        """The inverse of :meth:`recorded` (unknown keys are ignored)."""
        if not data:
            return cls()
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key == "guardrails":
                values[key] = tuple(Guardrail(g["metric"], g.get("margin")) for g in value)
            elif key == "caps":
                values[key] = tuple((str(k), float(v)) for k, v in value.items())
            elif key in ("primary", "secondary"):
                values[key] = tuple(value)
            elif key == "plan_recorded":
                values[key] = PlanRecord(**value)
            elif key in OPTIONS:
                values[key] = value
        return cls(**values)


def parse_margin(text: str, metric: str, given: str | Sequence[str]) -> float:
    """``2%`` → 0.02, ``0.02`` → 0.02; an :class:`OptionError` on ``guardrails``
    (``given``: the whole value) for anything else."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise OptionError(
            "guardrails",
            given,
            f"cannot read the margin {raw!r} of {metric}; write METRIC:MARGIN with a "
            f"percentage or a fraction between 0 and 1, such as {metric}:2% or {metric}:0.02",
            allowed="METRIC[:MARGIN],...",
        )
    return value


def parse_guardrails(
    value: str | Sequence[str], catalog: Catalog | None = None
) -> tuple[Guardrail, ...]:
    """``revenue_per_user:2%,impressions_per_user`` (or a list of such) → guardrails,
    the names checked (against ``catalog``, as :func:`parse_online_metrics` checks them);
    an :class:`OptionError` carries ``value`` as given."""
    given = value if isinstance(value, str) else ",".join(value)
    out: list[Guardrail] = []
    for part in given.split(","):
        if not part.strip():
            continue
        name, sep, margin = part.partition(":")
        try:
            name = parse_online_metrics(name.strip(), (), "guardrails", catalog=catalog)[0]
        except OptionError as exc:
            raise OptionError("guardrails", value, exc.reason, allowed=exc.allowed) from None
        if any(g.metric == name for g in out):
            raise OptionError(
                "guardrails", value, f"names {name} twice; give each guardrail once, one margin"
            )
        out.append(Guardrail(name, parse_margin(margin, name, value) if sep else None))
    return tuple(out)


def check_plan(value: int | None, parameter: str) -> int | None:
    """A planned horizon is a positive whole number."""
    if value is not None and value < 1:
        what, flag = (
            ("user", "--plan-users") if parameter == "plan_users" else ("day", "--plan-days")
        )
        raise OptionError(
            parameter,
            value,
            f"a plan needs at least 1 {what}; give the planned {what}s in all arms, or "
            f"remove the plan with `abeval experiment unset EXPERIMENT {flag}`",
            allowed=">= 1",
        )
    return value


#: The longest CUPED pre-period: what a timestamp's arithmetic holds in every engine.
MAX_CUPED_DAYS = 3650


def check_options(config: ExperimentConfig) -> ExperimentConfig:
    """Check the values of a configuration about to be used or recorded; return it."""
    if config.alpha is not None and not 0 < config.alpha < 1:
        reason = "must be between 0 and 1 (exclusive)"
        raise OptionError("alpha", config.alpha, reason, allowed="0 < alpha < 1")
    if config.target_mde is not None and not 0 < config.target_mde < math.inf:
        reason = "must be a number above 0"
        raise OptionError("target_mde", config.target_mde, reason, allowed="a number above 0")
    if config.cuped_days is not None and not 0 <= config.cuped_days <= MAX_CUPED_DAYS:
        reason = f"give 0 to {MAX_CUPED_DAYS:,} days (ten years)"
        raise OptionError("cuped_days", config.cuped_days, reason, allowed=f"0..{MAX_CUPED_DAYS}")
    corrections = get_args(Correction)
    if config.correction is not None and config.correction not in corrections:
        reason = f"choose from {', '.join(corrections)}"
        raise OptionError("correction", config.correction, reason, allowed=corrections)
    check_plan(config.plan_users, "plan_users")
    check_plan(config.plan_days, "plan_days")
    if config.interleaving_of is not None and not config.interleaving_of:
        reason = "name the A/B test of the same two rankers"
        raise OptionError("interleaving_of", config.interleaving_of, reason)
    return config


def with_record(
    o: ReportOptions,
    config: ExperimentConfig,
    flags: frozenset[str],
    experiment: str = "EXPERIMENT",
) -> ReportOptions:
    """The options of one run: each recordable setting from its flag when it is in
    ``flags``, else from ``config`` when recorded, else ``o``'s (the default). A
    flag may not loosen the recorded plan (:func:`check_plan_flag`)."""
    sources: dict[str, SettingSource] = {}
    values: dict[str, Any] = {}
    for name in (n for n in OPTIONS if n not in LINKS):
        recorded = getattr(config, name)
        if name in flags:
            check_plan_flag(name, getattr(o, name), recorded, experiment)
            sources[name] = "flag"
        elif recorded is not None:
            sources[name] = "record"
            if name == "guardrails":
                values["guardrails"] = tuple(g.metric for g in recorded)
                values["margins"] = tuple((g.metric, g.margin) for g in recorded if g.margin)
            else:
                values[name] = recorded
        else:
            sources[name] = "default"
    if config.plan_recorded is not None and not flags & {"plan_users", "plan_days"}:
        values["plan_recorded"] = config.plan_recorded
    return replace(o, **values, sources=tuple(sources.items()))


def check_plan_flag(name: str, given: Any, recorded: Any, experiment: str) -> None:
    """A one-off ``--plan-users``/``--plan-days`` may not loosen the recorded plan
    (ask for fewer users or days than recorded): the plan gates the decision, and a
    plan shortened after the data are seen is no plan (docs/metrics.md#decision)."""
    if name not in ("plan_users", "plan_days") or recorded is None:
        return
    if given is None or given < recorded:
        what = "users" if name == "plan_users" else "days"
        raise OptionError(
            name,
            given,
            f"the recorded plan is {recorded:,} {what}, and one report cannot loosen it; "
            f"change the plan with `abeval experiment set {experiment} {OPTIONS[name]} N`",
            allowed=f">= {recorded}",
        )


def unknown_option_message(name: str) -> str:
    return f"no recordable option {name!r}; choose from {', '.join(OPTIONS.values())}"


def describe(name: str, config: ExperimentConfig) -> str:
    """One recorded option as ``experiment show`` prints it."""
    value = getattr(config, name)
    if name == "guardrails":
        return ", ".join(
            g.metric
            if g.margin is None
            else f"{g.metric} (may drop by at most {g.margin * 100:g}%)"
            for g in value
        )
    if name == "caps":
        return ", ".join(f"{m} at quantile {q:g}" for m, q in value)
    if name in ("primary", "secondary"):
        return ", ".join(value) or "none"
    if name == "target_mde":
        return f"{value:.4g} (relative)"
    if name == "interleaving_of":
        return f"{value} (the A/B test of the same two rankers)"
    return str(value)


def read_config(conn: Connection, experiment: str) -> ExperimentConfig:
    """The configuration recorded for ``experiment`` (empty when none is)."""
    from abeval.store.experiments import get_config

    return ExperimentConfig.from_json(get_config(conn, experiment))


def parse_config(
    *,
    primary: str | Sequence[str] | None = None,
    secondary: str | Sequence[str] | None = None,
    guardrails: str | Sequence[str] | None = None,
    caps: Sequence[str] | Mapping[str, float] | None = None,
    cuped_days: int | None = None,
    target_mde: float | None = None,
    alpha: float | None = None,
    correction: str | None = None,
    plan_users: int | None = None,
    plan_days: int | None = None,
    interleaving_of: str | None = None,
    catalog: Catalog | None = None,
) -> ExperimentConfig:
    """The recordable options as given (None: not given), parsed and checked: what
    ``experiment set`` records and what a run's flags override. An
    :class:`OptionError` names the first invalid one. Metric names are checked
    against ``catalog`` (a store's), else as :func:`parse_online_metrics` checks them
    without one."""
    from abeval.analysis.capping import parse_caps

    text = [f"{m}={q}" for m, q in caps.items()] if isinstance(caps, Mapping) else caps
    try:
        parsed_caps = parse_caps(list(text)) if text else None
    except ValueError as exc:
        raise OptionError("cap", caps, str(exc)) from None
    config = ExperimentConfig(
        primary=parse_online_metrics(primary, (), "primary", catalog=catalog)
        if primary is not None
        else None,
        secondary=parse_online_metrics(secondary, (), "secondary", catalog=catalog)
        if secondary is not None
        else None,
        guardrails=parse_guardrails(guardrails, catalog) if guardrails is not None else None,
        caps=parsed_caps,
        cuped_days=cuped_days,
        target_mde=target_mde,
        alpha=alpha,
        correction=correction,  # type: ignore[arg-type]
        plan_users=plan_users,
        plan_days=plan_days,
        interleaving_of=interleaving_of.strip() if interleaving_of is not None else None,
    )
    return check_options(config)
