"""The report's off-policy estimates (docs/metrics.md#off-policy-estimates).

For each treatment arm, two directions: the treatment's click-through rate
predicted from the control's logs, and the control's predicted from the
treatment's. Each arm's observed CTR is the ground truth for the other's
prediction. The store computes per-user sums (:mod:`abeval.store.sql.ope_source`), the
statistics layer turns them into estimates and diagnostics
(:mod:`abeval.stats.ope`); this module chooses the directions, where π_target
comes from, and judges whether the predicted lift agrees with the online one.
A candidate policy's estimate for the forecast, by the same headline rule, is
:mod:`abeval.analysis.ope_candidate`.

An OPE estimate does not reuse the target arm's clicks, so unlike the replayed
metrics it is independent evidence about the online lift: its *agreement*
(``agree``, ``disagree``, ``inconclusive``, by sign) and its *difference* from
the online lift (consistent or inconsistent at α,
:func:`abeval.stats.consistency.lift_difference`) are what the report judges.

π_target (:mod:`abeval.store.ope_target`) comes from a ``--target-propensities``
file for this run, else from the probabilities recorded with the experiment,
else from the target arm's own frequency of (item, position). The last is
*post-hoc* (``evidence``): it reads the target arm's own impressions and
assumes its lists do not depend on the user, so it is no prediction. Whether
it can stand in for π_target depends on the target, never on the source (the
weights π/μ divide by each impression's own logged μ, so a source whose
propensities vary between requests is fine): when the target arm's own logged
propensity of one (item, position) varies between requests, its lists depend
on the request, and the direction is estimated with ``varying_target`` set, a
warning that the frequency assumes clicks independent of what the target's
lists vary with (docs/metrics.md#target-probabilities says why this rather
than no estimate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from abeval.errors import OptionError
from abeval.stats.consistency import LiftDifference, lift_difference
from abeval.stats.ope import (
    MAX_MEAN_SKEW,
    MAX_TOP_SHARE,
    MIN_ESS_USERS,
    PRODUCTS_OF_THREE,
    Diagnostics,
    Estimate,
    Interval,
    diagnose,
    estimate_terms,
    estimates,
    independent_lift,
    log_linear,
    unavailable,
)
from abeval.stats.ope_ranking import STEP_ESTIMATORS, snrips_terms
from abeval.stats.results import JsonResult
from abeval.store import ope_target
from abeval.store.memory import memory_capped
from abeval.store.sql import ope_source

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

DEFAULT_CAP = 100.0
#: The estimator whose predicted lift is set beside the online lift and judged,
#: by the rule :data:`HEADLINE_RULE`: ``cascade_dr`` (unbiased under cascade
#: clicks, which include position-based ones) when the source's impressions and
#: the target's probabilities carry step probabilities and it is defined, else
#: ``snips``. ``headline_reason`` says which case held (:func:`headline`).
HEADLINE = "snips"
HEADLINE_RULE = "cascade_dr_if_given_above_else_snips"
HeadlineReason = Literal[
    "given_above",
    "empirical_target",
    "no_source_given_above",
    "no_target_given_above",
    "incomplete_candidates",
    "cascade_dr_undefined",
]

OpeStatusWord = Literal["ok", "not_requested", "no_propensities"]
#: Where π_target came from: this run's file, the experiment's record, neither.
TargetOrigin = Literal["file", "recorded", "none"]
#: A prediction (π_target given) or post-hoc (the target arm's own frequency).
OpeEvidence = Literal["prediction", "post_hoc"]


@dataclass(frozen=True)
class OpeOptions:
    """``--ope-cap``, ``--target-propensities``, ``--no-ope``."""

    enabled: bool = True
    cap: float = DEFAULT_CAP
    target_propensities: str | None = None
    #: Also each treatment's logs → the control (the report shows both directions;
    #: the agreement board reads control → treatment only).
    reverse: bool = True


@dataclass(frozen=True)
class ArmPropensities(JsonResult):
    """One arm's impressions (analysed users, after exposure), how many carry a
    propensity, and its observed CTR per impression (clicked impressions)."""

    arm: str
    impressions: int
    with_propensity: int
    without_propensity: int
    observed_ctr: Interval


@dataclass(frozen=True)
class VaryingTarget(JsonResult):
    """A post-hoc direction whose target arm logged one (item, position) with
    different propensities on different requests (``varying`` of the ``pairs``
    it logged with a propensity): its context-free frequency stands in for
    probabilities that depend on the request (``personalised_target``)."""

    status: Literal["personalised_target"]
    pairs: int
    varying: int
    share: float


@dataclass(frozen=True)
class OpeDirection(JsonResult):
    """The target arm's CTR predicted from the source arm's logs."""

    source: str
    target: str
    target_probabilities: str  # "file", "recorded" or "empirical"
    users: int
    impressions: int
    source_ctr: float | None
    target_ctr: float | None
    estimates: tuple[Estimate, ...]
    headline: str
    headline_rule: str
    headline_reason: str
    online_lift: Interval
    agreement: str  # "agree", "disagree", "inconclusive"
    diagnostics: Diagnostics
    positions: tuple[Diagnostics, ...]
    warnings: tuple[str, ...]
    evidence: OpeEvidence = "prediction"
    #: The headline's predicted lift minus the online lift (consistent at α or not).
    difference: LiftDifference | None = None
    #: Post-hoc, and the target's own logged propensities vary between requests.
    varying_target: VaryingTarget | None = None


@dataclass(frozen=True)
class OpeSection(JsonResult):
    """Everything the report shows about off-policy estimates."""

    status: OpeStatusWord
    message: str
    cap: float
    alpha: float
    file: str | None
    arms: tuple[ArmPropensities, ...]
    directions: tuple[OpeDirection, ...]
    warnings: tuple[str, ...]
    target_origin: TargetOrigin = "none"
    #: When the recorded probabilities were recorded (ISO 8601, UTC).
    recorded_at: str | None = None
    #: Without target probabilities: the command that records them.
    supply_command: str | None = None


def not_run(status: OpeStatusWord, message: str, o: OpeOptions, alpha: float) -> OpeSection:
    return OpeSection(status, message, o.cap, alpha, o.target_propensities, (), (), ())


def supply_command(experiment: str) -> str:
    """The command that records an experiment's target probabilities."""
    return f"abeval experiment set {experiment} --target-propensities FILE"


def agreement(predicted: Interval, online: Interval) -> str:
    """``agree`` when both intervals exclude 0 on the same side, ``disagree`` on
    opposite sides, else ``inconclusive``."""

    def side(x: Interval) -> int:
        if x.ci is None:
            return 0
        return 1 if x.ci[0] > 0 else -1 if x.ci[1] < 0 else 0

    a, b = side(predicted), side(online)
    if a == 0 or b == 0:
        return "inconclusive"
    return "agree" if a == b else "disagree"


def ope_results(
    conn: Connection,
    experiment: str,
    control: str,
    treatments: list[str],
    o: OpeOptions,
    alpha: float,
    has_propensities: bool | None = None,
    population: str | None = None,
) -> OpeSection:
    """Both directions for every treatment arm (module docstring).
    ``has_propensities``: whether an impression carries a propensity, when the
    caller has asked already (else it is asked here); ``population``: a table
    holding the population over all the experiment's events, if one is kept."""
    if not o.enabled:
        return not_run("not_requested", "not requested", o, alpha)
    rows = None
    if o.target_propensities:  # the file readers of `abeval evaluate`, loaded only for a file
        from abeval.analysis.ope_file import read_target_propensities

        rows = read_target_propensities(o.target_propensities)
    if has_propensities is None:
        has_propensities = ope_source.has_propensities(conn, experiment)
    if not has_propensities:
        if o.target_propensities is not None:  # an option that would do nothing
            raise OptionError(
                "target_propensities",
                o.target_propensities,
                f"no impression of {experiment!r} carries a logged propensity, so no "
                "off-policy estimate can use target probabilities; leave it out, or ingest "
                "logs with a propensity column",
            )
        return not_run(
            "no_propensities", "no impression of this experiment carries a propensity", o, alpha
        )
    arms = [control, *treatments]
    # DuckDB's memory capped as for the replay: 1.8 GB at 10M events uncapped.
    with memory_capped(conn) as memory:
        source = ope_source.open_ope(conn, experiment, population)
        try:
            origin, shown, at, unmatched = _targets(conn, experiment, arms, rows, o)
            from_file = ope_source.file_pairs(conn, experiment) if origin != "none" else set()
            counts = source.arm_counts()
            memory.fit(sum(c.impressions for c in counts.values()))
            directions = []
            for arm in treatments:
                for src, tgt in ((control, arm), (arm, control))[: 2 if o.reverse else 1]:
                    if src not in counts or tgt not in counts:
                        continue
                    covered = (src, tgt) in from_file
                    sums = source.direction(src, tgt, o.cap, covered, PRODUCTS_OF_THREE)
                    varying = None if covered else varying_target(counts[tgt])
                    directions.append(_direction(sums, counts, alpha, origin, varying))
        finally:
            ope_source.close_ope(conn, source)
    arms_found = tuple(_arm(c, alpha) for c in counts.values())
    empty = [a for a in arms if a not in counts]
    warnings = [f"{a}: no impressions, so no estimate from or of it" for a in empty]
    if unmatched:
        warnings.append(
            f"{shown}: {unmatched:,} rows name no request of this experiment and are not used"
        )
    warnings += [
        f"{a.arm}: {a.without_propensity:,} impressions have no propensity and are left "
        "out of the estimates from its logs"
        for a in arms_found
        if a.without_propensity
    ]
    warnings += [f"{d.target} from {d.source}'s logs: {w}" for d in directions for w in d.warnings]
    return OpeSection(
        "ok",
        "",
        o.cap,
        alpha,
        shown,
        arms_found,
        tuple(directions),
        tuple(warnings),
        target_origin=origin,
        recorded_at=at,
        supply_command=supply_command(experiment) if origin != "recorded" else None,
    )


def varying_target(target: ope_source.ArmCounts) -> VaryingTarget | None:
    """:class:`VaryingTarget` when the target arm's own logged propensity of some
    (item, position) varies between requests, else None."""
    v = ope_target.varying_propensities(target)
    if not v.varying:
        return None
    return VaryingTarget("personalised_target", v.pairs, v.varying, v.varying / v.pairs)


def _targets(
    conn: Connection,
    experiment: str,
    arms: list[str],
    rows: list[ope_target.TargetRow] | None,
    o: OpeOptions,
) -> tuple[TargetOrigin, str | None, str | None, int]:
    """Fill the target table: this run's file (checked as a recording is), else
    the experiment's record. Returns where π_target came from, the file's name,
    when it was recorded and the file's rows that name no request."""
    if rows is not None and o.target_propensities is not None:
        ope_target.load_rows(conn, rows)
        ope_target.fill_arms(conn, experiment, arms, o.target_propensities)
        found = ope_target.check(conn, experiment, o.target_propensities)
        return "file", o.target_propensities, None, found.unmatched
    recorded = ope_target.load_recorded(conn, experiment)
    if recorded is None:
        return "none", None, None, 0
    at = recorded.recorded_at.isoformat(timespec="seconds")
    return "recorded", recorded.file, at, 0


def _arm(c: ope_source.ArmCounts, alpha: float) -> ArmPropensities:
    return ArmPropensities(
        arm=c.arm,
        impressions=c.impressions,
        with_propensity=c.with_propensity,
        without_propensity=c.impressions - c.with_propensity,
        observed_ctr=log_linear(c.observed, {"c": 1, "n": -1}, alpha),
    )


def _step_estimates(
    d: ope_source.DirectionSums, alpha: float, target_ctr: float | None
) -> tuple[tuple[Estimate, ...], HeadlineReason]:
    """The step estimators (``rips``, ``snrips``, ``sips``, ``cascade_dr``) of a
    direction whose target probabilities come from a file, and why the headline
    is what it is."""
    steps = d.steps
    names = ("rips", "snrips", "sips", "cascade_dr")
    if steps is None:
        return (), "empirical_target"
    if not steps.ok:
        if steps.with_given_above < steps.impressions:
            reason: HeadlineReason = "no_source_given_above"
            message = (
                f"{steps.impressions - steps.with_given_above:,} of {steps.impressions:,} "
                "source impressions have no propensity_given_above"
            )
        else:
            reason = "no_target_given_above"
            message = "the target probabilities have no probability_given_above"
        return tuple(unavailable(n, "no_given_above", message) for n in names), reason
    s = d.user
    found = [
        estimate_terms(s, name, ({num: 1, den: -1},), alpha, target_ctr, d.top)
        for name, (num, den) in STEP_ESTIMATORS.items()
    ]
    snrips = snrips_terms(steps.groups)
    found.insert(1, estimate_terms(s, "snrips", snrips, alpha, target_ctr, d.top))
    reason = "given_above"
    if steps.short_pairs:
        found[-1] = unavailable(
            "cascade_dr",
            "incomplete_candidates",
            f"at {steps.short_pairs:,} (request, position) pairs the target's step "
            "probabilities over the candidate items sum below 1",
        )
        reason = "incomplete_candidates"
    elif found[-1].ctr.value is None:
        reason = "cascade_dr_undefined"
    return tuple(found), reason


def headline(
    d: ope_source.DirectionSums, alpha: float, target_ctr: float | None
) -> tuple[tuple[Estimate, ...], Estimate, HeadlineReason]:
    """Every estimate of a direction, the headline one (:data:`HEADLINE_RULE`)
    and why it is the headline."""
    steps, reason = _step_estimates(d, alpha, target_ctr)
    found = estimates(d.user, alpha, target_ctr, d.top) + steps
    chosen = "cascade_dr" if reason == "given_above" else HEADLINE
    return found, next(e for e in found if e.estimator == chosen), reason


def _direction(
    d: ope_source.DirectionSums,
    counts: dict[str, ope_source.ArmCounts],
    alpha: float,
    origin: TargetOrigin,
    varying: VaryingTarget | None = None,
) -> OpeDirection:
    s = d.user
    target = counts[d.target].observed
    target_ctr = target.sums["c"] / target.sums["n"] if target.sums["n"] else None
    found, head, reason = headline(d, alpha, target_ctr)
    chosen = head.estimator
    online = independent_lift(target, counts[d.source].observed, alpha)
    overall = diagnose(None, d.positions)
    warnings = overall.warnings + user_warnings(head)
    predicted = head.predicted_lift
    return OpeDirection(
        source=d.source,
        target=d.target,
        target_probabilities=("recorded" if origin == "recorded" else "file")
        if d.from_file
        else "empirical",
        users=s.users,
        impressions=int(s.sums["n"]),
        source_ctr=s.sums["c"] / s.sums["n"] if s.sums["n"] else None,
        target_ctr=target_ctr,
        estimates=found,
        headline=chosen,
        headline_rule=HEADLINE_RULE,
        headline_reason=reason,
        online_lift=online,
        agreement=agreement(predicted, online),
        diagnostics=overall,
        positions=tuple(diagnose(p.position, [p]) for p in d.positions),
        warnings=warnings,
        evidence="prediction" if d.from_file else "post_hoc",
        difference=lift_difference(predicted.value, predicted.se, online.value, online.se, alpha),
        varying_target=varying,
    )


def user_warnings(head: Estimate) -> tuple[str, ...]:
    """What the headline estimate's weights over users call for: its normal
    interval is unreliable below :data:`~abeval.stats.ope.MIN_ESS_USERS`
    effective users, or above :data:`~abeval.stats.ope.MAX_MEAN_SKEW` skewness of
    their mean when it has no skewness-corrected interval to show instead
    (:func:`~abeval.stats.ope.shown_interval`); it rests on a handful of users above
    :data:`~abeval.stats.ope.MAX_TOP_SHARE` of its weighted clicks in the top 1%."""
    u = head.users
    if u is None:
        return ()
    out = []
    if "few_users" in u.reasons and u.ess_users is not None:
        out.append(
            f"{head.estimator}: its weights are worth {u.ess_users:.1f} users (below "
            f"{MIN_ESS_USERS:g}), so its normal interval is unreliable (in simulation such "
            "intervals covered 87-93% of the time, not 95%)"
        )
    elif (
        u.interval == "unreliable"
        and "skewed" in u.reasons
        and u.mean_skewness is not None
        and u.skewness is not None
    ):
        out.append(
            f"{head.estimator}: its weights over users are skewed ({u.skewness:.1f}, so "
            f"{u.mean_skewness:.2f} for their mean, above {MAX_MEAN_SKEW:g}): its normal interval "
            "is unreliable (in simulation such intervals covered 86-95%, missing almost only on "
            "one side)"
        )
    if u.top_share is not None and u.top_share > MAX_TOP_SHARE:
        out.append(
            f"{head.estimator}: the 1% of users with the largest weights carry "
            f"{u.top_share:.1%} of its weighted clicks (above {MAX_TOP_SHARE:.0%}): the "
            "estimate rests on a handful of users"
        )
    return tuple(out)
