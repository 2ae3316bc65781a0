"""The overall decision per treatment arm (docs/metrics.md#decision) as a table of
cases: hand-built comparisons, each with the decision the stated rule gives."""

from __future__ import annotations

from dataclasses import replace

import pytest

from abeval.analysis.comparisons import metric_results
from abeval.analysis.decision import decision_basis, decisions, judged_results, plan_progress
from abeval.analysis.online_metrics import BUILTIN_CATALOG
from abeval.analysis.report_model import (
    ArmValue,
    Health,
    OnlineMetricResult,
    PowerInfo,
    ReportOptions,
    Role,
)
from abeval.analysis.verdicts import verdicts
from abeval.stats.results import (
    BayesianResult,
    Comparison,
    Lift,
    Posterior,
    PowerResult,
    SrmResult,
)
from abeval.store.sql.online_variables import Moments

TARGET = 0.02
OPTIONS = ReportOptions(target_mde=TARGET)

# Relative lifts and their (corrected) intervals, by what they say at α.
BETTER = (0.05, (0.02, 0.08))  # significant improvement
WORSE = (-0.05, (-0.08, -0.02))  # significant harm
NARROW = (0.002, (-0.01, 0.014))  # not significant, inside ±2%
WIDE = (0.01, (-0.04, 0.06))  # not significant, too wide to rule out 2%
BROKEN = None  # the comparison could not be made


def _result(
    metric: str, role: Role, lift: tuple[float, tuple[float, float]] | None
) -> OnlineMetricResult:
    effect, ci = lift if lift is not None else (None, None)
    comparison = Comparison(
        status="ok" if lift is not None else "zero_denominator",
        message="" if lift is not None else "no impressions in control",
        method="welch",
        alpha=0.05,
        control_n=100,
        treatment_n=100,
        control_mean=1.0 if lift is not None else None,
        treatment_mean=1.0 + effect if effect is not None else None,
        absolute=Lift(effect, ci=ci),
        relative=Lift(effect, ci=ci),
    )
    significant = ci is not None and (ci[0] > 0 or ci[1] < 0)
    bayes = BayesianResult(
        status="ok",
        message="",
        alpha=0.05,
        control_n=100,
        treatment_n=100,
        control_mean=None,
        treatment_mean=None,
        absolute=Posterior(None),
        relative=Posterior(None),
        prior_scale=None,
        prior_mean=None,
        prior_variance=None,
        lower_is_better=False,
    )
    value = ArmValue(value=1.0, numerator=100.0, denominator=100.0, users=100)
    return OnlineMetricResult(
        metric=metric,
        label=metric,
        kind="mean",
        role=role,
        arm="b",
        control=value,
        treatment=value,
        comparison=comparison,
        unadjusted=None,
        bayesian=bayes,
        significant=significant,
        status=comparison.status,
        message=comparison.message,
    )


def _health(srm_flagged: bool = False) -> Health:
    srm = SrmResult(
        status="ok",
        message="",
        users=(100, 100),
        expected=(100.0, 100.0),
        statistic=0.0,
        dof=1,
        p_value=1e-6 if srm_flagged else 0.9,
        threshold=0.001,
        flagged=srm_flagged,
    )
    return Health(
        srm=srm,
        users_seen=200,
        users_analysed=200,
        users_in_several_arms=0,
        clicks_without_impression=0,
        purchases_without_click=0,
        duplicate_impressions=0,
        events_outside_population=0,
        events_before_exposure=0,
        events=1000,
        first_ts=None,
        last_ts=None,
        problems=(),
    )


def _power(metric: str, detectable: float) -> PowerInfo:
    result = PowerResult(
        status="ok",
        message="",
        alpha=0.05,
        power=0.8,
        baseline_mean=1.0,
        baseline_variance=1.0,
        mde_relative=detectable,
        mde_absolute=detectable,
        users_by_arm=(100, 100),
        total_users=200,
        critical_value=1.96,
        sequential=False,
        tuning_n=None,
    )
    return PowerInfo(
        metric=metric,
        arm="b",
        detectable=result,
        needed_for_target=result,
        users_per_day=None,
        more_days_needed=None,
    )


# (case, ctr, conversion, guardrail, srm flagged, detectable lift of each primary, decision)
CASES = [
    ("sample ratio mismatch beats a win", BETTER, BETTER, NARROW, True, None, "invalid"),
    ("a primary could not be compared", BETTER, BROKEN, NARROW, False, None, "invalid"),
    ("one primary better, one worse", BETTER, WORSE, NARROW, False, None, "roll_back"),
    ("primary better, guardrail worse", BETTER, NARROW, WORSE, False, None, "roll_back"),
    ("a primary worse, nothing better", WIDE, WORSE, NARROW, False, None, "roll_back"),
    ("guardrail worse with flat primaries", NARROW, NARROW, WORSE, False, None, "roll_back"),
    ("one primary better, rest flat", BETTER, WIDE, NARROW, False, None, "ship"),
    ("both primaries better", BETTER, BETTER, NARROW, False, None, "ship"),
    ("guardrail better does not block", BETTER, NARROW, BETTER, False, None, "ship"),
    ("win but guardrail unchecked", BETTER, NARROW, BROKEN, False, None, "keep_running"),
    ("both intervals inside ±MDE", NARROW, NARROW, NARROW, False, None, "no_effect"),
    ("wide but planned power reached", WIDE, WIDE, NARROW, False, 0.015, "no_effect"),
    ("power reached exactly at the MDE", WIDE, NARROW, NARROW, False, TARGET, "no_effect"),
    ("wide and underpowered", WIDE, WIDE, NARROW, False, 0.05, "keep_running"),
    ("one settled, one open", NARROW, WIDE, NARROW, False, None, "keep_running"),
    ("guardrail unchecked, no win", NARROW, NARROW, BROKEN, False, None, "no_effect"),
]


@pytest.mark.parametrize(
    ("ctr", "conversion", "guardrail", "srm", "detectable", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_decision_table(ctr, conversion, guardrail, srm, detectable, expected) -> None:
    metrics = [
        _result("ctr", "primary", ctr),
        _result("conversion", "primary", conversion),
        _result("impressions_per_user", "guardrail", guardrail),
    ]
    power = [_power(m, detectable) for m in ("ctr", "conversion")] if detectable else []
    (decision,) = decisions(metrics, _health(srm), power, OPTIONS, BUILTIN_CATALOG)
    assert decision.arm == "b"
    assert decision.decision == expected
    assert decision.srm_flagged is srm
    assert [p.metric for p in decision.primaries] == ["ctr", "conversion"]
    assert [g.metric for g in decision.guardrails] == ["impressions_per_user"]
    # No per-metric verdict says ship when the arm's decision is not ship.
    cards = verdicts(metrics, _health(srm), OPTIONS, [decision], catalog=BUILTIN_CATALOG)
    if expected != "ship":
        assert all(v.verdict != "ship" for v in cards)
    else:
        assert any(v.verdict == "ship" for v in cards)


def test_decision_inputs_are_the_rule_inputs() -> None:
    metrics = [
        _result("ctr", "primary", BETTER),
        _result("conversion", "primary", NARROW),
        _result("impressions_per_user", "guardrail", WORSE),
    ]
    (d,) = decisions(metrics, _health(), [_power("ctr", 0.03)], OPTIONS, BUILTIN_CATALOG)
    ctr, conversion = d.primaries
    assert (ctr.direction, ctr.relative_effect, ctr.interval) == ("better", 0.05, (0.02, 0.08))
    assert ctr.within_target is False and ctr.detectable == 0.03
    assert (conversion.direction, conversion.within_target) == ("flat", True)
    assert conversion.detectable is None
    assert d.guardrails[0].direction == "worse" and d.guardrails[0].within_target is None
    assert d.target_mde == TARGET
    assert d.reason == "significantly worse: Impressions per user -5.00% [-8.00%, -2.00%]"
    as_json = d.to_dict()
    assert as_json["primaries"][0]["interval"] == [0.02, 0.08]


def test_each_arm_is_decided_on_its_own_results() -> None:
    """A guardrail harmed in one arm does not roll back another."""
    good = [_result("ctr", "primary", BETTER), _result("impressions_per_user", "guardrail", NARROW)]
    bad = [
        replace(_result("ctr", "primary", NARROW), arm="c"),
        replace(_result("impressions_per_user", "guardrail", WORSE), arm="c"),
    ]
    out = decisions([*good, *bad], _health(), [], OPTIONS, BUILTIN_CATALOG)
    assert [(d.arm, d.decision) for d in out] == [("b", "ship"), ("c", "roll_back")]
    cards = verdicts([*good, *bad], _health(), OPTIONS, out, catalog=BUILTIN_CATALOG)
    assert [(v.arm, v.verdict) for v in cards] == [("b", "ship"), ("c", "no_effect")]


def test_no_primary_is_invalid() -> None:
    (d,) = decisions(
        [_result("impressions_per_user", "guardrail", NARROW)],
        _health(),
        [],
        OPTIONS,
        BUILTIN_CATALOG,
    )
    assert (d.decision, d.reason) == ("invalid", "no primary metric to decide on")


# --- guardrails with a margin (non-inferiority), docs/metrics.md#guardrails ---

MARGIN = 0.02
NEAR = (-0.004, (-0.015, 0.007))  # not significant; its worse end is inside a 2% margin
LOOSE = (-0.004, (-0.031, 0.023))  # not significant; its worse end reaches past 2%
BEYOND = (-0.06, (-0.09, -0.03))  # even its best end is a 3% harm: past a 2% margin
SLIGHT = (-0.008, (-0.012, -0.004))  # significantly worse, every end within 2%

# (case, guardrail result, its margin, decision, guardrail state)
GUARDRAIL_CASES = [
    ("inside its margin: ship", NEAR, MARGIN, "ship", "passed"),
    ("past its margin, not worse: underpowered", LOOSE, MARGIN, "keep_running", "underpowered"),
    ("past its margin without one: today's rule", LOOSE, None, "ship", "passed"),
    # non-inferiority (issue 36, item 3): a roll-back needs the harm shown beyond
    # the margin, the interval's best end past it
    (
        "significantly worse, not shown past its margin",
        WORSE,
        MARGIN,
        "keep_running",
        "underpowered",
    ),
    ("harm shown beyond its margin", BEYOND, MARGIN, "roll_back", "worse"),
    ("significantly worse, shown within its margin", SLIGHT, MARGIN, "ship", "passed"),
    ("significantly worse without a margin: today's rule", WORSE, None, "roll_back", "worse"),
    ("a wide margin takes the loose interval", LOOSE, 0.05, "ship", "passed"),
    ("could not be compared", BROKEN, MARGIN, "keep_running", "unchecked"),
]


@pytest.mark.parametrize(
    ("guardrail", "margin", "expected", "state"),
    [c[1:] for c in GUARDRAIL_CASES],
    ids=[c[0] for c in GUARDRAIL_CASES],
)
def test_guardrail_margin_table(guardrail, margin, expected, state) -> None:
    metrics = [
        _result("ctr", "primary", BETTER),
        _result("impressions_per_user", "guardrail", guardrail),
    ]
    margins = (("impressions_per_user", margin),) if margin is not None else ()
    (d,) = decisions(metrics, _health(), [], replace(OPTIONS, margins=margins), BUILTIN_CATALOG)
    (g,) = d.guardrails
    assert (d.decision, g.guardrail, g.margin) == (expected, state, margin)
    if guardrail is not None:  # the largest drop the interval allows: minus its lower end
        assert g.largest_harm == pytest.approx(-guardrail[1][0])


def test_underpowered_guardrail_says_why() -> None:
    metrics = [
        _result("ctr", "primary", BETTER),
        _result("impressions_per_user", "guardrail", LOOSE),
    ]
    o = replace(OPTIONS, margins=(("impressions_per_user", MARGIN),))
    (d,) = decisions(metrics, _health(), [], o, BUILTIN_CATALOG)
    assert d.reason == (
        "CTR +5.00% [+2.00%, +8.00%] significantly better, but guardrail Impressions per "
        "user is underpowered: its interval allows a harm of 3.10%, past its 2.00% margin"
    )


@pytest.mark.parametrize(
    ("guardrail", "margin", "block"),
    [
        (
            LOOSE,
            MARGIN,
            "guardrail Impressions per user is underpowered: its interval allows a harm of "
            "3.10%, past its 2.00% margin",
        ),
        (BROKEN, MARGIN, "guardrail Impressions per user could not be checked"),
    ],
    ids=["underpowered", "unchecked"],
)
def test_a_blocked_win_keeps_its_verdict_and_says_what_blocks_it(guardrail, margin, block) -> None:
    """Every primary gets a verdict when a guardrail blocks the arm: the significant
    one is named once, with its interval, followed by the block."""
    metrics = [
        _result("ctr", "primary", BETTER),
        _result("conversion", "primary", WIDE),
        _result("impressions_per_user", "guardrail", guardrail),
    ]
    o = replace(OPTIONS, margins=(("impressions_per_user", margin),))
    out = decisions(metrics, _health(), [], o, BUILTIN_CATALOG)
    ctr, conversion = verdicts(metrics, _health(), o, out, catalog=BUILTIN_CATALOG)
    assert (ctr.metric, ctr.verdict) == ("ctr", "keep_running")
    assert ctr.reason == (
        "ctr +5.00% [+2.00%, +8.00%] significantly better after holm correction, but the "
        f"arm's decision is keep running: {block}"
    )
    assert (conversion.metric, conversion.verdict) == ("conversion", "keep_running")


# --- what the decision reads: the plan (docs/metrics.md#decision) ---


def test_no_plan_reads_the_sequential_intervals() -> None:
    assert decision_basis(OPTIONS, plan_progress(OPTIONS, 7, 1000)) == "sequential_no_plan"
    asked = replace(OPTIONS, sequential=True, plan_days=14)
    assert decision_basis(asked, plan_progress(asked, 7, 1000)) == "sequential_requested"


@pytest.mark.parametrize(
    ("days", "users", "plan_days", "plan_users", "reached"),
    [
        (7, 9600, 14, 20000, False),
        (14, 9600, 14, 20000, False),  # the days are reached, the users not
        (14, 20000, 14, 20000, True),
        (20, 25000, None, 20000, True),
        (13, 50000, 14, None, False),
    ],
)
def test_plan_is_reached_when_every_part_is(days, users, plan_days, plan_users, reached) -> None:
    o = replace(OPTIONS, plan_days=plan_days, plan_users=plan_users)
    progress = plan_progress(o, days, users)
    assert progress is not None and progress.reached is reached
    expected = "fixed_plan_reached" if reached else "plan_not_reached"
    assert decision_basis(o, progress) == expected


def test_before_the_plan_the_decision_waits() -> None:
    metrics = [
        _result("ctr", "primary", BETTER),
        _result("impressions_per_user", "guardrail", NARROW),
    ]
    o = replace(OPTIONS, plan_days=14, plan_users=20000)
    progress = plan_progress(o, 7, 9600)
    (d,) = decisions(
        metrics, _health(), [], o, BUILTIN_CATALOG, basis="plan_not_reached", progress=progress
    )
    assert (d.decision, d.basis) == ("keep_running", "plan_not_reached")
    assert d.reason == "day 7 of 14, 48% of the planned users; an early read needs --sequential"
    assert d.to_dict()["progress"] == {
        "days": 7,
        "users": 9600,
        "plan_days": 14,
        "plan_users": 20000,
        "reached": False,
        "decided_day": None,
    }
    # A sample ratio mismatch is not a matter of waiting.
    (bad,) = decisions(
        metrics, _health(True), [], o, BUILTIN_CATALOG, basis="plan_not_reached", progress=progress
    )
    assert bad.decision == "invalid"
    # Once reached, the rule decides on the fixed-horizon results.
    done = plan_progress(o, 14, 20000)
    (d,) = decisions(
        metrics, _health(), [], o, BUILTIN_CATALOG, basis="fixed_plan_reached", progress=done
    )
    assert d.decision == "ship"


def _moments(n: int, clicks: float) -> Moments:
    """One arm of n users with 10 impressions each and ``clicks`` clicks in all,
    spread as evenly as whole clicks allow."""
    ones = int(clicks)
    return Moments(
        n=n,
        sums={"clicks": float(ones), "impressions": 10.0 * n},
        cross={
            ("clicks", "clicks"): ones - ones * ones / n,
            ("impressions", "impressions"): 0.0,
            ("clicks", "impressions"): 0.0,
        },
    )


def test_past_the_planned_look_the_decision_made_there_stands() -> None:
    # issue 36, item 2: day 3 reaches a 3-day plan with no difference; a big lift
    # by day 5 does not turn the decision into a ship
    flat = {"control": _moments(3000, 300), "treatment": _moments(3000, 300)}
    lifted = {"control": _moments(5000, 500), "treatment": _moments(5000, 900)}
    daily = [
        ("2026-01-01", {"control": _moments(1000, 100), "treatment": _moments(1000, 100)}),
        ("2026-01-02", {"control": _moments(2000, 200), "treatment": _moments(2000, 200)}),
        ("2026-01-03", flat),
        ("2026-01-04", {"control": _moments(4000, 400), "treatment": _moments(4000, 700)}),
        ("2026-01-05", lifted),
    ]
    o = replace(OPTIONS, primary=("ctr",), guardrails=(), secondary=(), cuped_days=0, plan_days=3)
    now = metric_results(lifted, "control", ["treatment"], o, BUILTIN_CATALOG)[0]
    judged, basis, progress = judged_results(
        now, lifted, daily, "control", ["treatment"], o, BUILTIN_CATALOG, (), 5
    )
    assert basis == "fixed_plan_reached"
    assert progress is not None and (progress.days, progress.decided_day) == (5, 3)
    (ctr,) = judged
    assert ctr.comparison.relative.effect == pytest.approx(0.0)  # day 3's data
    (d,) = decisions(judged, _health(), [], o, BUILTIN_CATALOG, basis=basis, progress=progress)
    assert d.decision != "ship"
    assert d.reason.endswith(
        "(as of day 3, the planned look: the decision made there stands, later days do not "
        "change it)"
    )
    # on the planned day itself nothing is frozen
    _, _, on_day = judged_results(
        now, flat, daily[:3], "control", ["treatment"], o, BUILTIN_CATALOG, (), 3
    )
    assert on_day is not None and on_day.decided_day is None
