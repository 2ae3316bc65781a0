"""The interleaving section of the report (docs/metrics.md#interleaving): an
experiment whose users all see lists merged from two rankers (one ``arm``,
impressions naming a ``team``) compares the rankers by Δ_AB, not by arms.

Which team is A: the one not named by ``--control`` (the baseline ranker is B),
else the one not named ``control``, else the first in sorted order; Δ_AB > 0
says A is preferred. The section gives Δ_AB credited by clicks (and by
purchases where the experiment has any), the balance of first picks between the
teams with its binomial test, the clicks no team is credited with, and the
decision: which ranker is preferred.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from abeval.errors import AbevalError, OptionError
from abeval.stats.interleaving import (
    InterleavingResult,
    InterleavingStats,
    compare_interleaved,
    detectable_delta,
    interleaving_users,
    sign_test,
)
from abeval.stats.power import required_users
from abeval.stats.results import JsonResult, lifted
from abeval.stats.srm import DEFAULT_SRM_THRESHOLD
from abeval.stats.sufficient import RatioStats
from abeval.store.sql.interleaving import interleaving_sums, team_balance

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

__all__ = [
    "InterleavingDecision",
    "InterleavingPlan",
    "InterleavingSection",
    "TeamBalance",
    "choose_teams",
    "interleaving_plan",
    "interleaving_section",
    "interleaving_stats",
]

#: What an interleaved experiment decides: a ranker is preferred (Δ_AB's interval
#: excludes 0), neither is, or Δ_AB could not be estimated.
InterleavingDecision = Literal["ranker_preferred", "no_preference", "undetermined"]


@dataclass(frozen=True)
class TeamBalance(JsonResult):
    """The first picks per team (requests whose top item is the team's). Team
    draft decides who picks first by a fair coin, so each team's share is 1/2;
    ``p_value`` is the exact two-sided binomial test of team A's share, flagged
    below ``threshold`` as the sample-ratio test is."""

    first_picks: dict[str, int]
    share_a: float | None
    p_value: float | None
    threshold: float
    flagged: bool


#: The keys of the click-credited result that the section's JSON holds at its top
#: level (issue 33's fixed shape): the headline Δ_AB with its counts.
HEADLINE_KEYS: tuple[str, ...] = (
    *("status", "message", "delta", "interval", "p_value", "wins", "losses", "ties"),
    *("users", "requests", "preference_share", "sign_p_value"),
)


@dataclass(frozen=True)
class InterleavingSection(JsonResult):
    """Δ_AB credited by clicks (the headline), the same credited by purchases, the
    balance of first picks and the decision. In JSON the headline's numbers
    (:data:`HEADLINE_KEYS`) stand at the top level beside the teams."""

    team_a: str
    team_b: str
    clicks: InterleavingResult = field(metadata=lifted(*HEADLINE_KEYS))
    decision: InterleavingDecision
    #: the preferred ranker when ``decision`` is ``ranker_preferred``
    preferred: str | None
    by_purchases: InterleavingResult | None
    balance: TeamBalance
    #: clicks on an item that no impression of the same request credits to a team
    uncredited_clicks: int


def choose_teams(teams: list[str], asked: str | None, experiment: str) -> tuple[str, str]:
    """(A, B): B is the baseline, the team ``asked`` for with ``control``, else the
    team named ``control``, else the second in sorted order."""
    if len(teams) != 2:
        raise AbevalError(
            f"experiment {experiment!r} is interleaved but its impressions name "
            f"{len(teams)} team{'s' if len(teams) != 1 else ''} ({', '.join(teams)}); "
            "an interleaved comparison needs exactly two: check the team column of the events"
        )
    ordered = sorted(teams)
    if asked is not None:
        if asked not in ordered:
            raise OptionError(
                "control",
                asked,
                f"experiment {experiment!r} is interleaved: name one of its teams "
                f"({', '.join(ordered)}) as the baseline",
                allowed=tuple(ordered),
            )
        baseline = asked
    else:
        baseline = "control" if "control" in ordered else ordered[1]
    return next(t for t in ordered if t != baseline), baseline


def balance_of(picks: dict[str, int], team_a: str, team_b: str) -> TeamBalance:
    """The first picks' balance: team A's share and its binomial test against 1/2."""
    a, b = picks.get(team_a, 0), picks.get(team_b, 0)
    p = sign_test(a, a + b)
    return TeamBalance(
        first_picks={team_a: a, team_b: b},
        share_a=a / (a + b) if a + b else None,
        p_value=p,
        threshold=DEFAULT_SRM_THRESHOLD,
        flagged=p is not None and p < DEFAULT_SRM_THRESHOLD,
    )


def decide(
    result: InterleavingResult, team_a: str, team_b: str
) -> tuple[InterleavingDecision, str | None]:
    """Which ranker is preferred: the one Δ_AB's interval favours when it excludes 0."""
    if result.interval is None or result.delta is None:
        return "undetermined", None
    low, high = result.interval
    if low > 0:
        return "ranker_preferred", team_a
    if high < 0:
        return "ranker_preferred", team_b
    return "no_preference", None


def section_of(
    clicks: InterleavingResult,
    purchases: InterleavingResult | None,
    balance: TeamBalance,
    uncredited: int,
    team_a: str,
    team_b: str,
) -> InterleavingSection:
    """The section from its parts (the click-credited result gives the headline)."""
    decision, preferred = decide(clicks, team_a, team_b)
    return InterleavingSection(
        team_a=team_a,
        team_b=team_b,
        clicks=clicks,
        decision=decision,
        preferred=preferred,
        by_purchases=purchases,
        balance=balance,
        uncredited_clicks=uncredited,
    )


def interleaving_stats(
    conn: Connection,
    experiment: str,
    teams: tuple[str, str],
    credit: Literal["click", "purchase"] = "click",
) -> InterleavingStats:
    """The per-user sums of ``experiment`` for ``teams`` = (A, B), crediting ``credit``."""
    return InterleavingStats.from_sums(**interleaving_sums(conn, experiment, *teams, credit))


def interleaving_section(
    conn: Connection,
    experiment: str,
    teams: tuple[str, str],
    *,
    alpha: float = 0.05,
) -> InterleavingSection:
    """Δ_AB of ``experiment`` for ``teams`` = (A, B), by clicks and by purchases,
    with the first picks' balance: four statements over the experiment's events."""
    team_a, team_b = teams

    def compared(credit: Literal["click", "purchase"]) -> InterleavingResult:
        stats = interleaving_stats(conn, experiment, teams, credit)
        return compare_interleaved(stats, confidence=1 - alpha)

    clicks = compared("click")
    bought = compared("purchase")
    picks, uncredited = team_balance(conn, experiment)
    purchases = bought if bought.requests > 0 else None
    return section_of(clicks, purchases, balance_of(picks, team_a, team_b), uncredited, *teams)


#: Why a plan of an interleaved experiment has no number of users.
InterleavingPlanStatus = Literal["ok", "no_preference_given", "no_requests", "zero_variance"]


@dataclass(frozen=True)
class InterleavingPlan(JsonResult):
    """``abeval power --experiment X`` for an interleaved experiment: the users an
    interleaved comparison needs to detect the preference ``delta``, what the
    users it has detect now, and beside them the users an A/B test needs for the
    CTR lift ``ctr_lift`` (both arms, from the experiment's per-user CTR)."""

    status: InterleavingPlanStatus
    message: str
    team_a: str
    team_b: str
    #: the |Δ_AB| to detect: given (``delta_rule`` "option") or observed
    delta: float | None
    delta_rule: Literal["option", "observed"]
    alpha: float
    power: float
    users: int
    decided_share: float | None
    detectable_now: float | None
    users_needed: int | None
    ctr_lift: float
    ab_users: int | None
    #: ab_users / users_needed: how many times fewer users interleaving needs, when
    #: ``delta`` was given (the user's pairing of a preference with a CTR lift)
    ratio: float | None


def interleaving_plan(
    stats: InterleavingStats,
    users: int,
    ctr: RatioStats,
    teams: tuple[str, str],
    *,
    delta: float | None,
    ctr_lift: float,
    alpha: float,
    power: float,
) -> InterleavingPlan:
    """The plan from the experiment's per-user interleaving ``stats``, its ``users``
    (all analysed, with a decided request or not) and its per-user ``ctr``."""
    from math import ceil

    observed = stats.per_user.mean if stats.requests else None
    target = abs(delta) if delta is not None else abs(observed) if observed else None
    share = stats.users / users if users else None
    variance = stats.per_user.variance
    ab = required_users(ctr.mean, ctr.variance, ctr_lift, alpha=alpha, power=power)
    ab_users = ab.total_users if ab.status == "ok" else None
    status: InterleavingPlanStatus = "ok"
    if not stats.requests or share is None:
        status = "no_requests"
    elif not variance > 0:
        status = "zero_variance"
    elif target is None:
        status = "no_preference_given"
    needed = (
        interleaving_users(target, variance, share, alpha=alpha, power=power)
        if status == "ok" and target is not None and share is not None
        else None
    )
    now = (
        detectable_delta(users, variance, share, alpha=alpha, power=power)
        if status != "no_requests" and share is not None
        else None
    )
    users_needed = ceil(needed) if needed is not None else None
    return InterleavingPlan(
        status=status,
        message="",
        team_a=teams[0],
        team_b=teams[1],
        delta=target,
        delta_rule="option" if delta is not None else "observed",
        alpha=alpha,
        power=power,
        users=users,
        decided_share=share,
        detectable_now=now,
        users_needed=users_needed,
        ctr_lift=ctr_lift,
        ab_users=ab_users,
        # only for a preference given beside the CTR lift: the pair is the user's claim
        ratio=ab_users / users_needed if ab_users and users_needed and delta else None,
    )
