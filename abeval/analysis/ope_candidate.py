"""A candidate policy's off-policy estimate, for ``abeval forecast --target-propensities``:
its click-through rate and lift predicted from production's (the control arm's)
logs of an experiment with the candidate's target probabilities, by the headline
estimator of the report's off-policy section (:func:`abeval.analysis.ope.headline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from abeval.analysis.ope import DEFAULT_CAP, headline, user_warnings
from abeval.stats.ope import PRODUCTS_OF_THREE, Estimate, diagnose
from abeval.stats.results import JsonResult
from abeval.store import ope_target
from abeval.store.memory import memory_capped
from abeval.store.sql import ope_source

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


#: The target name a candidate policy's rows get in the target table: it is no
#: arm of the experiment, so no arm's rows can be mistaken for it.
CANDIDATE = "(candidate)"


@dataclass(frozen=True)
class CandidateEstimate(JsonResult):
    """A candidate policy's click-through rate predicted from production's
    (the control arm's) logs with the candidate's target probabilities: the
    headline estimate (:data:`HEADLINE_RULE`), why it is the headline, and
    the warnings its weights call for."""

    experiment: str
    control: str
    users: int
    impressions: int
    headline: Estimate
    headline_reason: str
    warnings: tuple[str, ...]


def candidate_estimate(
    conn: Connection,
    experiment: str,
    control: str,
    rows: list[ope_target.TargetRow],
    shown: str,
    cap: float = DEFAULT_CAP,
    alpha: float = 0.05,
) -> CandidateEstimate:
    """The candidate's CTR and lift over ``control`` from ``control``'s logs of
    ``experiment``, its probabilities given by ``rows`` (a target file read by
    :func:`~abeval.analysis.ope_file.read_target_propensities`; the rows
    :func:`candidate_rows` keeps). The file is checked as a report's is (it must
    cover half the control's requests and belong to this experiment)."""
    from abeval.errors import InputError

    rows = candidate_rows(rows, control, shown)
    if not ope_source.has_propensities(conn, experiment):
        raise InputError(
            f"experiment {experiment!r}: no impression carries a propensity, so no "
            "off-policy estimate can be formed from its logs"
        )
    with memory_capped(conn) as memory:
        source = ope_source.open_ope(conn, experiment)
        try:
            ope_target.load_rows(conn, rows)
            ope_target.check(conn, experiment, shown)
            counts = source.arm_counts()
            if control not in counts:
                raise InputError(
                    f"experiment {experiment!r}: its control {control!r} has no impressions"
                )
            memory.fit(counts[control].impressions)
            sums = source.direction(control, CANDIDATE, cap, True, PRODUCTS_OF_THREE)
        finally:
            ope_source.close_ope(conn, source)
    _, head, reason = headline(sums, alpha, None)
    overall = diagnose(None, sums.positions)
    return CandidateEstimate(
        experiment=experiment,
        control=control,
        users=sums.user.users,
        impressions=int(sums.user.sums["n"]),
        headline=head,
        headline_reason=reason,
        warnings=overall.warnings + user_warnings(head),
    )


def candidate_rows(
    rows: list[ope_target.TargetRow], control: str, shown: str
) -> list[ope_target.TargetRow]:
    """The rows of a target file that give the candidate's probabilities on
    ``control``'s requests, relabelled :data:`CANDIDATE`: as ``report`` reads a
    file for the direction from ``control`` to one arm. A row whose ``arm``
    names the control is the control's probability on another arm's request
    (the reverse direction) and is left out; rows without an arm are the
    candidate's; the other rows must all name one arm (the candidate's), else
    one line naming the arms and the fix."""
    from abeval.errors import InputError

    named = sorted({r[0] for r in rows if r[0] is not None and r[0] != control})
    if len(named) > 1:
        listed = ", ".join(repr(a) for a in named)
        raise InputError(
            f"{shown}: rows for {len(named)} target arms ({listed}); the candidate is one "
            f"target: keep the rows of one arm (those of {control!r}, the production arm, "
            "are left out anyway)"
        )
    return [(CANDIDATE, *r[1:]) for r in rows if r[0] != control]
