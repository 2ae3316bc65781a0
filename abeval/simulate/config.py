"""What a simulation is asked for: :class:`SimulationConfig`, its defaults and
the checks that refuse an impossible one (see :mod:`abeval.simulate` for the
model behind each field)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from abeval.store.events_format import KNOWN

# The event format is defined once, with the ingest that checks it; this
# simulator writes all of it but the step probabilities (abeval.simulate.ranked
# writes those).
EVENT_COLUMNS: tuple[str, ...] = tuple(
    c
    for c in KNOWN
    if c not in ("propensity_given_above", "team")  # team: interleaved logs
)
DEFAULT_CTR_LIFT = 0.05
DEFAULT_CONVERSION_LIFT = 0.03


def _default_segments() -> dict[str, dict[str, float]]:
    return {"device": {"mobile": 0.6, "desktop": 0.3, "tablet": 0.1}}


@dataclass(frozen=True)
class SimulationConfig:
    """What to simulate. See :mod:`abeval.simulate` for the model behind each field."""

    experiment: str = "home-reco-v2"
    arms: tuple[str, ...] = ("control", "treatment")
    #: Assignment probabilities per arm (normalised); None means equal.
    split: tuple[float, ...] | None = None
    users: int = 20_000
    seed: int = 0
    start: datetime = datetime(2025, 3, 3, tzinfo=UTC)
    days: int = 14
    pre_period_days: int = 14
    #: Mean requests per user in the experiment window (≥ 1: the exposure's request).
    requests_per_user: float = 6.0
    #: Gamma shape of the per-user activity rate; smaller means more heterogeneous.
    activity_dispersion: float = 1.5
    list_length: int = 10
    #: Candidates per request that the policy ranks (the top ``list_length`` are
    #: shown); None: ``list_length`` (every candidate is shown).
    candidates: int | None = None
    catalogue: int = 2_000
    item_popularity_exponent: float = 1.0
    #: Expected clicks per impression in the control arm.
    base_ctr: float = 0.05
    #: Relative CTR lift per non-control arm (arms not named: 0); None: +5% for each.
    true_ctr_lift: Mapping[str, float] | None = None
    #: P(purchase | click) in the control arm.
    base_purchase_rate: float = 0.08
    #: Relative lift of P(purchase | click) per non-control arm (arms not named: 0);
    #: None: +3% for each.
    true_conversion_lift: Mapping[str, float] | None = None
    revenue_mean: float = 40.0
    revenue_sigma: float = 0.8
    #: Examination probability per position: "log2" (1/log2(k+1)), "reciprocal"
    #: (1/k), "none" (1), or a non-increasing tuple of list_length values in (0, 1].
    position_bias: str | tuple[float, ...] = "log2"
    relevant_share: float = 0.2
    irrelevant_attractiveness: float = 0.1
    #: Plackett–Luce weight of a relevant item under the control policy (1 = random order).
    control_relevance_weight: float = 2.0
    #: Per arm (control included; arms not named: 0), the probability τ in [0, 1)
    #: that a request's irrelevant candidates are ordered by popularity instead of
    #: at random: changes which items are shown, never how many relevant ones.
    popularity_tilt: Mapping[str, float] | None = None
    #: Concentration (α + β) of the Beta distribution of users' click propensity.
    user_propensity_concentration: float = 3.0
    #: Attribute columns: column -> {value: share}.
    segments: Mapping[str, Mapping[str, float]] = field(default_factory=_default_segments)
    with_propensities: bool = True
    with_event_ids: bool = True

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def control(self) -> str:
        return self.arms[0]

    def ctr_lift(self, arm: str) -> float:
        """The configured relative CTR lift of ``arm`` (0 for the control)."""
        if arm == self.control:
            return 0.0
        lifts = self.true_ctr_lift
        return DEFAULT_CTR_LIFT if lifts is None else float(lifts.get(arm, 0.0))

    def conversion_lift(self, arm: str) -> float:
        """The configured relative lift of P(purchase | click) of ``arm`` (0 for the control)."""
        if arm == self.control:
            return 0.0
        lifts = self.true_conversion_lift
        return DEFAULT_CONVERSION_LIFT if lifts is None else float(lifts.get(arm, 0.0))

    def tilt(self, arm: str) -> float:
        """The configured popularity tilt τ of ``arm`` (0 when not named)."""
        return float((self.popularity_tilt or {}).get(arm, 0.0))

    @property
    def pool(self) -> int:
        """Candidates per request: ``candidates``, else ``list_length``."""
        return self.list_length if self.candidates is None else self.candidates

    @property
    def shares(self) -> tuple[float, ...]:
        """Assignment probabilities, normalised to sum to 1."""
        raw = self.split if self.split is not None else (1.0,) * len(self.arms)
        total = math.fsum(raw)
        return tuple(s / total for s in raw)

    @property
    def examination(self) -> np.ndarray:
        """Examination probability of positions 1..list_length."""
        k = np.arange(1, self.list_length + 1, dtype=np.float64)
        if isinstance(self.position_bias, tuple):
            return np.asarray(self.position_bias, dtype=np.float64)
        if self.position_bias == "log2":
            return 1.0 / np.log2(k + 1.0)
        if self.position_bias == "reciprocal":
            return 1.0 / k
        return np.ones_like(k)


def _validate(c: SimulationConfig) -> None:
    def need(ok: bool, message: str) -> None:
        if not ok:
            raise ValueError(message)

    need(len(c.arms) >= 1 and len(set(c.arms)) == len(c.arms), "arms must be distinct, >= 1")
    need(all(isinstance(a, str) and a for a in c.arms), "arm names must be non-empty strings")
    need(bool(c.experiment), "experiment must be non-empty")
    if c.split is not None:
        need(len(c.split) == len(c.arms), "split needs one share per arm")
        need(all(s > 0 for s in c.split), "split shares must be > 0")
    need(c.users >= 1, "users must be >= 1")
    need(c.start.tzinfo is not None, "start must be timezone-aware (UTC)")
    need(c.days >= 1 and c.pre_period_days >= 0, "days must be >= 1, pre_period_days >= 0")
    need(c.requests_per_user >= 1, "requests_per_user must be >= 1")
    need(c.activity_dispersion > 0, "activity_dispersion must be > 0")
    need(1 <= c.list_length <= 1000, "list_length must be in 1..1000")
    need(
        c.candidates is None or c.list_length <= c.candidates <= 1000,
        "candidates must be in list_length..1000",
    )
    need(c.catalogue >= c.pool, "catalogue must hold at least list_length (candidates) items")
    unknown_tilt = set(c.popularity_tilt or {}) - set(c.arms)
    need(not unknown_tilt, f"popularity_tilt names unknown arms: {sorted(unknown_tilt)}")
    need(
        all(0 <= v < 1 for v in (c.popularity_tilt or {}).values()),
        "popularity_tilt values must be in [0, 1)",
    )
    need(c.item_popularity_exponent >= 0, "item_popularity_exponent must be >= 0")
    need(0 < c.base_ctr < 1, "base_ctr must be in (0, 1)")
    need(0 <= c.base_purchase_rate <= 1, "base_purchase_rate must be in [0, 1]")
    for name, lifts in (
        ("true_ctr_lift", c.true_ctr_lift),
        ("true_conversion_lift", c.true_conversion_lift),
    ):
        unknown = set(lifts or {}) - set(c.arms[1:])
        need(not unknown, f"{name} names arms that are not treatment arms: {sorted(unknown)}")
        need(all(v > -1 for v in (lifts or {}).values()), f"{name} values must be > -1")
    for arm in c.arms[1:]:
        need(
            c.base_purchase_rate * (1 + c.conversion_lift(arm)) <= 1,
            f"purchase rate of arm {arm!r} exceeds 1: lower base_purchase_rate or the lift",
        )
    need(c.revenue_mean > 0 and c.revenue_sigma >= 0, "revenue_mean > 0, revenue_sigma >= 0")
    if isinstance(c.position_bias, tuple):
        e = c.position_bias
        need(len(e) == c.list_length, "position_bias tuple needs list_length values")
        need(all(0 < x <= 1 for x in e), "examination probabilities must be in (0, 1]")
        need(all(a >= b for a, b in itertools.pairwise(e)), "position_bias must not increase")
    else:
        need(c.position_bias in ("log2", "reciprocal", "none"), "unknown position_bias")
    need(0 < c.relevant_share < 1, "relevant_share must be in (0, 1)")
    need(0 <= c.irrelevant_attractiveness <= 1, "irrelevant_attractiveness must be in [0, 1]")
    need(c.control_relevance_weight > 0, "control_relevance_weight must be > 0")
    need(c.user_propensity_concentration > 0, "user_propensity_concentration must be > 0")
    reserved = set(KNOWN)
    for column, values in c.segments.items():
        need(column not in reserved and column == column.lower(), f"bad segment column {column!r}")
        need(len(values) >= 1 and all(s > 0 for s in values.values()), f"bad shares for {column}")
