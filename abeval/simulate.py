"""Simulated experiment logs with known true effects.

:func:`simulate` returns an Arrow table in the event format of ``DESIGN.md`` §2
(plus one column per configured segment); :func:`write_events` writes one to
``.csv``, ``.csv.gz``, ``.parquet`` or ``.jsonl`` in chunks; :func:`expected_effects`
gives the truth the analysis should recover. Everything is vectorised (numpy)
and deterministic given :attr:`SimulationConfig.seed`.

The model
---------
Users are assigned to an arm with probabilities ``split`` (equal by default) and
to one value of each segment column (``device`` by default) with its share. The
first arm is the control. Segments carry no effect: every per-segment truth
equals the overall truth.

* Activity. User *u* has a rate ``λ_u ~ Gamma(shape=activity_dispersion,
  mean=requests_per_user - 1)``. In the experiment window the user makes
  ``1 + Poisson(λ_u)`` requests; the first is their exposure (an ``exposure``
  event at the same instant). Before it, in the ``pre_period_days`` leading up to
  their exposure, they make ``Poisson(λ_u · pre_period_days / days)`` requests.
  Pre-period events carry the user's assigned arm but were served and behave as
  control (nothing is treated before exposure), so pre-period metrics are a
  valid CUPED covariate: correlated with the post-period through ``λ_u`` and
  ``θ_u``, unaffected by the treatment.
* Candidates. A request shows ``list_length`` distinct items drawn from a
  catalogue with Zipf popularity ``p_i ∝ 1 / rank^item_popularity_exponent``
  (item ids are a seeded permutation of the popularity ranks). Each candidate
  is relevant to the request independently with probability ``relevant_share``.
* Ranking (the logging policy). Items are ordered by a Plackett–Luce policy:
  a relevant candidate has weight ``w_arm``, an irrelevant one weight 1. The
  control (and every pre-period request) uses ``w = control_relevance_weight``;
  each treatment arm uses the weight that yields its configured CTR lift
  (solved exactly, see below), so a positive lift means relevant items are
  ranked higher. ``propensity`` is the policy's marginal probability of showing
  that item at that position given the candidates:
  ``P(relevant item at k) = q_k(R) / R`` and ``P(irrelevant item at k) =
  (1 - q_k(R)) / (L - R)``, where ``q_k(R)`` is the probability that position
  *k* holds a relevant item when *R* of the *L* candidates are relevant.
* Clicks (examination model). ``P(click) = θ_u · e_k · a``, where
  ``e_k`` is the examination probability of position *k* (``position_bias``,
  default ``1 / log2(k + 1)``), ``a = 1`` for a relevant item and
  ``irrelevant_attractiveness`` otherwise, and ``θ_u ~ Beta`` with concentration
  ``user_propensity_concentration`` and the mean that makes the control's CTR
  equal ``base_ctr``. Every factor is at most 1, so this is a probability.
* Purchases. A click leads to a purchase with probability
  ``base_purchase_rate · (1 + true_conversion_lift[arm])``; its ``value`` is
  lognormal with mean ``revenue_mean`` and log-scale ``revenue_sigma`` (rounded
  to cents, so ≥ 0). A purchase names the request and item of its click.
* Time. Exposures are uniform over the window (ending an hour early); later
  requests are uniform between the exposure and the end of the window; a click
  follows its impression by 1 s plus at most 10 min, a purchase its click by
  1 s plus at most 45 min; pre-period requests end an hour before exposure.
  Every event therefore falls inside its period.

True effects
------------
With ``E_w[a_k] = Σ_R Binomial(R; L, relevant_share) · (q_k(R) + (1 - q_k(R))
· irrelevant_attractiveness)``, the expected click-through rate of an arm with
weight *w* is ``E[θ] · (1/L) Σ_k e_k E_w[a_k]``, and ``q_k(R)`` is computed
exactly by dynamic programming over the Plackett–Luce draws. Hence, per arm and
exactly (up to the float precision of the solver):

* CTR (Σ clicks / Σ impressions): ``base_ctr · (1 + true_ctr_lift[arm])``
  (by default +5% for every treatment arm);
* purchase per click: ``base_purchase_rate · (1 + true_conversion_lift[arm])``
  (by default +3%);
* clicks, purchases and revenue per user: ``requests_per_user · L`` times the
  per-impression rates, so their lifts are ``(1 + ctr lift)`` and ``(1 + ctr
  lift)(1 + conversion lift)`` minus 1; average order value has no effect.

:func:`expected_effects` returns all of these. The share of users with a
purchase has no closed form here (its lift is close to, and below, the
purchases-per-user lift). In the pre-period every arm has the control's truth.

Column ``propensity`` is present only with ``with_propensities`` and
``event_id`` only with ``with_event_ids``; ``position`` is set on impressions,
``value`` on purchases, ``request_id`` and ``item_id`` on all but exposures.
Ids: users ``u<n>``, requests ``r<n>``, items ``i<n>``, events
``<experiment>-<seed>-<row>`` (unique per row, and across simulations that differ
in experiment or seed). Rows are in time order within blocks of about a million
rows (blocks of users), not across them. ``ts`` is ``timestamp[ms, UTC]``; text
files carry it as ``2025-03-03T08:00:00.000Z``.
"""

from __future__ import annotations

import gzip
import itertools
import math
import queue
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abeval.store.events_format import KNOWN

# The event format is defined once, with the ingest that checks it.
EVENT_COLUMNS: tuple[str, ...] = KNOWN
EVENT_TYPES: tuple[str, ...] = ("exposure", "impression", "click", "purchase")
DEFAULT_CTR_LIFT = 0.05
DEFAULT_CONVERSION_LIFT = 0.03
FORMATS: tuple[str, ...] = ("csv", "csv.gz", "parquet", "jsonl")
T = TypeVar("T")
EventFormat = Literal["csv", "csv.gz", "parquet", "jsonl"]

_MS_PER_DAY = 86_400_000
_HOUR = 3_600_000
_CLICK_DELAY_MEAN, _CLICK_DELAY_MAX = 20_000, 600_000
_PURCHASE_DELAY_MEAN, _PURCHASE_DELAY_MAX = 480_000, 2_700_000
_ROWS_PER_BLOCK = 1_000_000  # users are simulated in blocks of about this many rows
_EXPOSURE, _IMPRESSION, _CLICK, _PURCHASE = range(4)


def _default_segments() -> dict[str, dict[str, float]]:
    return {"device": {"mobile": 0.6, "desktop": 0.3, "tablet": 0.1}}


@dataclass(frozen=True)
class SimulationConfig:
    """What to simulate. See the module docstring for the model behind each field."""

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
    need(c.catalogue >= c.list_length, "catalogue must hold at least list_length items")
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
    reserved = set(EVENT_COLUMNS)
    for column, values in c.segments.items():
        need(column not in reserved and column == column.lower(), f"bad segment column {column!r}")
        need(len(values) >= 1 and all(s > 0 for s in values.values()), f"bad shares for {column}")


# --------------------------------------------------------------------------- model


def relevant_at_position(list_length: int, weight: float) -> np.ndarray:
    """``q[R, k]``: probability that position ``k + 1`` holds a relevant item, when
    ``R`` of ``list_length`` candidates are relevant and a Plackett–Luce policy
    gives relevant items ``weight`` and the others 1. Exact (dynamic programming
    over how many relevant items the first draws took)."""
    n = list_length
    r = np.arange(n + 1, dtype=np.float64)[:, None]
    h = np.arange(n + 1, dtype=np.float64)[None, :]
    state = np.zeros((n + 1, n + 1))  # state[R, h]: P(h relevant among the first j draws)
    state[:, 0] = 1.0
    q = np.zeros((n + 1, n))
    for j in range(n):
        rel_left = np.clip(r - h, 0.0, None)
        irr_left = np.clip((n - r) - (j - h), 0.0, None)
        denom = rel_left * weight + irr_left
        p_rel = np.divide(rel_left * weight, denom, out=np.zeros_like(denom), where=denom > 0)
        took_rel = state * p_rel
        q[:, j] = took_rel.sum(axis=1)
        new = state - took_rel
        new[:, 1:] += took_rel[:, :-1]
        state = new
    return q


def _binomial_pmf(n: int, p: float) -> np.ndarray:
    return np.array([math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)])


def _attractiveness_by_position(config: SimulationConfig, weight: float) -> np.ndarray:
    """``E_w[a_k]`` for each position."""
    q = relevant_at_position(config.list_length, weight)
    pmf = _binomial_pmf(config.list_length, config.relevant_share)
    a0 = config.irrelevant_attractiveness
    return np.asarray(pmf @ (q + (1.0 - q) * a0))


def _click_weight(config: SimulationConfig, weight: float) -> float:
    """Mean over positions of ``e_k · E_w[a_k]``: the CTR divided by ``E[θ]``."""
    return float(np.mean(config.examination * _attractiveness_by_position(config, weight)))


def _solve_weight(config: SimulationConfig, lift: float, arm: str) -> float:
    """The Plackett–Luce relevance weight whose CTR is ``(1 + lift)`` times the control's."""
    w_c = config.control_relevance_weight
    if lift == 0:
        return w_c
    target = (1.0 + lift) * _click_weight(config, w_c)
    lo, hi = -30.0, 30.0  # log-weights: relevant items (almost) always last / first
    g_lo, g_hi = _click_weight(config, math.exp(lo)), _click_weight(config, math.exp(hi))
    if not g_lo <= target <= g_hi:
        base = _click_weight(config, w_c)
        raise ValueError(
            f"true_ctr_lift {lift:+.4g} for arm {arm!r} is not reachable by re-ranking: "
            f"with these settings the lift must lie in [{g_lo / base - 1:+.4g}, "
            f"{g_hi / base - 1:+.4g}] (a lower irrelevant_attractiveness or "
            "control_relevance_weight widens it)"
        )
    # Illinois (regula falsi) on f(x) = g(e^x) - target, which increases in x
    f_lo, f_hi = g_lo - target, g_hi - target
    x = lo
    side = 0
    for _ in range(200):
        x = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        f_x = _click_weight(config, math.exp(x)) - target
        if abs(f_x) <= 1e-15 * target or hi - lo < 1e-12:
            break
        if f_x < 0:
            lo, f_lo = x, f_x
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = x, f_x
            if side == 1:
                f_lo /= 2
            side = 1
    return math.exp(x)


@dataclass(frozen=True)
class ArmTruth:
    """Expected values for one arm in the experiment window (post-exposure)."""

    arm: str
    share: float
    relevance_weight: float  # Plackett–Luce weight of relevant items in this arm's ranking
    ctr: float  # clicks per impression
    purchase_rate: float  # purchases per click
    purchases_per_impression: float
    mean_order_value: float
    revenue_per_impression: float
    requests_per_user: float
    impressions_per_user: float
    clicks_per_user: float
    purchases_per_user: float
    revenue_per_user: float


@dataclass(frozen=True)
class ExpectedEffects:
    """The truth behind a simulation; ``pre_period`` holds the (control) truth of
    every arm before exposure."""

    control: str
    arms: Mapping[str, ArmTruth]
    pre_period: ArmTruth
    user_propensity_mean: float  # E[θ]

    def value(self, metric: str, arm: str) -> float:
        return float(getattr(self.arms[arm], metric))

    def relative_lift(self, metric: str, arm: str) -> float:
        """``(μ_arm - μ_control) / μ_control`` for an :class:`ArmTruth` field."""
        base = self.value(metric, self.control)
        return self.value(metric, arm) / base - 1.0 if base else 0.0

    def absolute_lift(self, metric: str, arm: str) -> float:
        return self.value(metric, arm) - self.value(metric, self.control)


class _Model:
    """Per-config constants: solved weights, propensity tables, item sampler."""

    def __init__(self, config: SimulationConfig) -> None:
        c = config
        self.config = c
        self.exam = c.examination
        self.weights = np.array(
            [c.control_relevance_weight] + [_solve_weight(c, c.ctr_lift(a), a) for a in c.arms[1:]]
        )
        g_control = _click_weight(c, self.weights[0])
        self.theta_mean = c.base_ctr / g_control
        if self.theta_mean >= 1:
            raise ValueError(
                f"base_ctr {c.base_ctr} is too high for this position bias and relevance: "
                f"it must be below {g_control:.4g}"
            )
        self.purchase_rates = np.array(
            [c.base_purchase_rate]
            + [c.base_purchase_rate * (1 + c.conversion_lift(a)) for a in c.arms[1:]]
        )
        # propensity[arm, R, k, relevant]
        n = c.list_length
        self.propensity = np.zeros((len(c.arms), n + 1, n, 2))
        counts = np.arange(n + 1, dtype=np.float64)[:, None]
        for i, w in enumerate(self.weights):
            q = relevant_at_position(n, float(w))
            self.propensity[i, :, :, 1] = np.divide(
                q, counts, out=np.zeros_like(q), where=counts > 0
            )
            self.propensity[i, :, :, 0] = np.divide(
                1 - q, n - counts, out=np.zeros_like(q), where=counts < n
            )
        ranks = np.arange(1, c.catalogue + 1, dtype=np.float64)
        popularity = ranks ** (-c.item_popularity_exponent)
        self.item_cdf = np.cumsum(popularity / popularity.sum())
        self.item_cdf[-1] = 1.0
        perm_rng = np.random.default_rng(np.random.SeedSequence(c.seed, spawn_key=(1 << 30,)))
        self.item_ids = _strings("i", perm_rng.permutation(c.catalogue))  # by popularity rank
        self.value_mu = math.log(c.revenue_mean) - c.revenue_sigma**2 / 2

    def truth(self, arm_index: int, share: float, requests: float) -> ArmTruth:
        c = self.config
        ctr = self.theta_mean * _click_weight(c, float(self.weights[arm_index]))
        rate = float(self.purchase_rates[arm_index])
        per_imp = requests * c.list_length
        return ArmTruth(
            arm=c.arms[arm_index],
            share=share,
            relevance_weight=float(self.weights[arm_index]),
            ctr=ctr,
            purchase_rate=rate,
            purchases_per_impression=ctr * rate,
            mean_order_value=c.revenue_mean,
            revenue_per_impression=ctr * rate * c.revenue_mean,
            requests_per_user=requests,
            impressions_per_user=per_imp,
            clicks_per_user=per_imp * ctr,
            purchases_per_user=per_imp * ctr * rate,
            revenue_per_user=per_imp * ctr * rate * c.revenue_mean,
        )

    @cached_property
    def effects(self) -> ExpectedEffects:
        c = self.config
        arms = {
            a: self.truth(i, s, c.requests_per_user)
            for i, (a, s) in enumerate(zip(c.arms, c.shares, strict=True))
        }
        pre_requests = (c.requests_per_user - 1) * c.pre_period_days / c.days
        return ExpectedEffects(
            control=c.control,
            arms=arms,
            pre_period=self.truth(0, 1.0, pre_requests),
            user_propensity_mean=self.theta_mean,
        )


_MODELS: dict[str, _Model] = {}


def _model(config: SimulationConfig) -> _Model:
    """The (cached) model of a configuration."""
    key = repr(config)
    model = _MODELS.get(key)
    if model is None:
        model = _MODELS[key] = _Model(config)
        while len(_MODELS) > 16:
            del _MODELS[next(iter(_MODELS))]
    return model


def expected_effects(config: SimulationConfig) -> ExpectedEffects:
    """The true per-arm expectations and lifts of a simulation (see module docstring)."""
    return _model(config).effects


def expected_rows_per_user(config: SimulationConfig) -> float:
    """Expected number of rows the simulation writes per user (all periods)."""
    eff = expected_effects(config)
    rows = 1.0  # exposure
    for truth in eff.arms.values():
        rows += (
            truth.share
            * truth.impressions_per_user
            * (1 + truth.ctr + truth.ctr * truth.purchase_rate)
        )
    pre = eff.pre_period
    rows += pre.impressions_per_user * (1 + pre.ctr + pre.ctr * pre.purchase_rate)
    return rows


def users_for_rows(rows: int, config: SimulationConfig | None = None) -> int:
    """How many users make a simulation of about ``rows`` rows with ``config``."""
    return max(1, round(rows / expected_rows_per_user(config or SimulationConfig())))


# --------------------------------------------------------------------------- generation


def _strings(prefix: str, numbers: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """``prefix + str(n)`` for each number, null where ``valid`` is False."""
    mask = None if valid is None else ~valid
    digits = pc.cast(pa.array(numbers, mask=mask), pa.string())
    return pc.binary_join_element_wise(prefix, digits, "")


def _labels(values: tuple[str, ...] | list[str], index: np.ndarray) -> pa.Array:
    dictionary = pa.DictionaryArray.from_arrays(pa.array(index), pa.array(values, pa.string()))
    return dictionary.cast(pa.string())


def _choice(rng: np.random.Generator, n: int, probabilities: np.ndarray) -> np.ndarray:
    cdf = np.cumsum(probabilities / probabilities.sum())
    cdf[-1] = 1.0
    return np.searchsorted(cdf, rng.random(n), side="right").astype(np.int32)


def _distinct_items(rng: np.random.Generator, cdf: np.ndarray, rows: int, n: int) -> np.ndarray:
    """``rows`` × ``n`` item ranks from the popularity distribution, distinct within
    each row (duplicates are redrawn until none are left)."""
    items = np.searchsorted(cdf, rng.random((rows, n)), side="right").astype(np.int32)
    items.sort(axis=1)
    todo = np.flatnonzero((items[:, 1:] == items[:, :-1]).any(axis=1))
    for _ in range(10_000):
        if todo.size == 0:
            return items
        sub = items[todo]
        dup = np.zeros(sub.shape, dtype=bool)
        dup[:, 1:] = sub[:, 1:] == sub[:, :-1]
        sub[dup] = np.searchsorted(cdf, rng.random(int(dup.sum())), side="right")
        sub.sort(axis=1)
        items[todo] = sub
        todo = todo[(sub[:, 1:] == sub[:, :-1]).any(axis=1)]
    raise RuntimeError("could not draw distinct items: enlarge the catalogue")


def _block_sizes(config: SimulationConfig) -> list[int]:
    per_block = max(1_000, int(_ROWS_PER_BLOCK / expected_rows_per_user(config)))
    full, rest = divmod(config.users, per_block)
    return [per_block] * full + ([rest] if rest else [])


def iter_event_batches(config: SimulationConfig) -> Iterator[pa.Table]:
    """The simulation as a sequence of tables (blocks of users, about a million
    rows each, each sorted by time). Their concatenation is :func:`simulate`."""
    model = _model(config)
    user_offset = request_offset = row_offset = 0
    for block, n_users in enumerate(_block_sizes(config)):
        table, n_requests = _simulate_block(
            model, block, n_users, user_offset, request_offset, row_offset
        )
        user_offset += n_users
        request_offset += n_requests
        row_offset += table.num_rows
        yield table


def simulate(config: SimulationConfig | None = None) -> pa.Table:
    """Simulate an experiment's event log (see the module docstring)."""
    config = config or SimulationConfig()
    return pa.concat_tables(list(iter_event_batches(config)))


def event_schema(config: SimulationConfig) -> pa.Schema:
    """The Arrow schema of :func:`simulate`'s output for ``config``."""
    fields = [
        pa.field("experiment", pa.string(), nullable=False),
        pa.field("arm", pa.string(), nullable=False),
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("ts", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("event_type", pa.string(), nullable=False),
        pa.field("request_id", pa.string()),
        pa.field("item_id", pa.string()),
        pa.field("position", pa.int32()),
        pa.field("value", pa.float64()),
    ]
    if config.with_event_ids:
        fields.append(pa.field("event_id", pa.string(), nullable=False))
    if config.with_propensities:
        fields.append(pa.field("propensity", pa.float64()))
    fields += [pa.field(column, pa.string(), nullable=False) for column in config.segments]
    return pa.schema(fields)


def _simulate_block(
    model: _Model,
    block: int,
    n: int,
    user_offset: int,
    request_offset: int,
    row_offset: int,
) -> tuple[pa.Table, int]:
    c = model.config
    rng = np.random.default_rng(np.random.SeedSequence(c.seed, spawn_key=(block,)))
    n_list = c.list_length
    start_ms = int(c.start.timestamp() * 1000)
    end_ms = start_ms + c.days * _MS_PER_DAY

    # users
    arm = _choice(rng, n, np.asarray(c.shares))
    segment_index = {
        column: _choice(rng, n, np.fromiter(values.values(), dtype=np.float64))
        for column, values in c.segments.items()
    }
    m, k = model.theta_mean, c.user_propensity_concentration
    theta = rng.beta(m * k, (1 - m) * k, n)
    if c.requests_per_user > 1:
        scale = (c.requests_per_user - 1) / c.activity_dispersion
        rate = rng.gamma(c.activity_dispersion, scale, n)
    else:
        rate = np.zeros(n)
    n_post = 1 + rng.poisson(rate)
    n_pre = rng.poisson(rate * (c.pre_period_days / c.days))
    exposure = start_ms + (rng.random(n) * (end_ms - _HOUR - start_ms)).astype(np.int64)

    # requests: per user, the pre-period ones, then the exposure's, then later ones
    per_user = n_pre + n_post
    n_req = int(per_user.sum())
    req_user = np.repeat(np.arange(n), per_user)
    first = np.cumsum(per_user) - per_user
    nth = np.arange(n_req) - first[req_user]
    pre = nth < n_pre[req_user]
    u = rng.random(n_req)
    exp_ts = exposure[req_user]
    pre_span = c.pre_period_days * _MS_PER_DAY - _HOUR
    post_span = end_ms - _HOUR - exp_ts
    req_ts = np.where(
        pre,
        exp_ts - _HOUR - (u * pre_span).astype(np.int64),
        exp_ts + (u * post_span).astype(np.int64),
    )
    req_ts[nth == n_pre[req_user]] = exp_ts[nth == n_pre[req_user]]  # the exposure's request
    policy = np.where(pre, 0, arm[req_user])

    # ranked lists
    candidates = _distinct_items(rng, model.item_cdf, n_req, n_list)
    relevant = rng.random((n_req, n_list)) < c.relevant_share
    gumbel = -np.log(-np.log(rng.random((n_req, n_list))))
    keys = relevant * np.log(model.weights)[policy][:, None] + gumbel
    order = np.argsort(-keys, axis=1)
    items = np.take_along_axis(candidates, order, axis=1)
    rel = np.take_along_axis(relevant, order, axis=1)
    n_relevant = relevant.sum(axis=1)

    # behaviour
    attract = np.where(rel, 1.0, c.irrelevant_attractiveness)
    p_click = theta[req_user][:, None] * model.exam[None, :] * attract
    clicked = rng.random((n_req, n_list)) < p_click
    click_req, click_slot = np.nonzero(clicked)
    n_clicks = click_req.size
    bought = rng.random(n_clicks) < model.purchase_rates[policy[click_req]]
    click_delay = 1_000 + np.minimum(
        rng.exponential(_CLICK_DELAY_MEAN, n_clicks), _CLICK_DELAY_MAX
    ).astype(np.int64)
    click_ts = req_ts[click_req] + click_delay
    buy = np.flatnonzero(bought)
    n_buys = buy.size
    buy_delay = 1_000 + np.minimum(
        rng.exponential(_PURCHASE_DELAY_MEAN, n_buys), _PURCHASE_DELAY_MAX
    ).astype(np.int64)
    value = np.round(rng.lognormal(model.value_mu, c.revenue_sigma, n_buys), 2)

    # rows: exposure, impressions, clicks, purchases
    n_imp = n_req * n_list
    imp_req = np.repeat(np.arange(n_req), n_list)
    imp_slot = np.tile(np.arange(n_list), n_req)
    kinds = np.concatenate(
        [
            np.full(n, _EXPOSURE, np.int8),
            np.full(n_imp, _IMPRESSION, np.int8),
            np.full(n_clicks, _CLICK, np.int8),
            np.full(n_buys, _PURCHASE, np.int8),
        ]
    )
    row_req = np.concatenate([np.zeros(n, np.int64), imp_req, click_req, click_req[buy]])
    row_slot = np.concatenate([np.zeros(n, np.int64), imp_slot, click_slot, click_slot[buy]])
    row_user = np.concatenate(
        [np.arange(n), req_user[imp_req], req_user[click_req], req_user[click_req[buy]]]
    )
    ts = np.concatenate([exposure, req_ts[imp_req], click_ts, click_ts[buy] + buy_delay])
    # time order; at the same millisecond: exposure, impressions by position, clicks, purchases
    sort_key = (ts << 12) | (kinds.astype(np.int64) << 10) | row_slot
    order_rows = np.argsort(sort_key, kind="stable")
    kinds, row_req, row_slot, row_user, ts = (
        kinds[order_rows],
        row_req[order_rows],
        row_slot[order_rows],
        row_user[order_rows],
        ts[order_rows],
    )
    n_rows = kinds.size
    has_request = kinds != _EXPOSURE
    is_imp = kinds == _IMPRESSION
    is_buy = kinds == _PURCHASE

    values = np.concatenate([np.full(n + n_imp + n_clicks, np.nan), value])[order_rows]
    columns: dict[str, pa.Array] = {
        "experiment": pa.repeat(pa.scalar(c.experiment, pa.string()), n_rows),
        "arm": _labels(c.arms, arm[row_user]),
        "user_id": _strings("u", np.arange(n) + user_offset).take(pa.array(row_user)),
        "ts": pa.array(ts, pa.timestamp("ms", tz="UTC")),
        "event_type": _labels(EVENT_TYPES, kinds),
        "request_id": _strings("r", np.arange(n_req) + request_offset).take(
            pa.array(row_req, mask=~has_request)
        ),
        "item_id": model.item_ids.take(pa.array(items[row_req, row_slot], mask=~has_request)),
        "position": pa.array((row_slot + 1).astype(np.int32), mask=~is_imp),
        "value": pa.array(values, mask=~is_buy),
    }
    if c.with_event_ids:
        prefix = f"{c.experiment}-{c.seed}-"
        columns["event_id"] = _strings(prefix, np.arange(n_rows) + row_offset)
    if c.with_propensities:
        prop = model.propensity[
            policy[row_req], n_relevant[row_req], row_slot, rel[row_req, row_slot].astype(np.int64)
        ]
        # 6 decimals keep text files short; tiny propensities keep full precision (never 0)
        prop = np.where(prop >= 1e-3, np.round(prop, 6), prop)
        columns["propensity"] = pa.array(prop, mask=~is_imp)
    for column, index in segment_index.items():
        columns[column] = _labels(list(c.segments[column]), index[row_user])
    table = pa.Table.from_pydict(columns, schema=event_schema(c))
    return table, n_req


# --------------------------------------------------------------------------- files


def format_of(path: str | Path) -> EventFormat:
    """The file format named by a path's extension."""
    name = str(path).lower()
    for ext, fmt in (
        (".csv.gz", "csv.gz"),
        (".csv", "csv"),
        (".parquet", "parquet"),
        (".pq", "parquet"),
        (".jsonl", "jsonl"),
        (".ndjson", "jsonl"),
    ):
        if name.endswith(ext):
            return fmt  # type: ignore[return-value]
    raise ValueError(f"cannot tell the format of {path}: use .csv, .csv.gz, .parquet or .jsonl")


def _iso_timestamps(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    """``ts`` as ISO 8601 UTC text (``2025-03-03T08:00:00.000Z``) for text formats."""
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    i = table.schema.get_field_index("ts")
    if i < 0 or not pa.types.is_timestamp(table.schema.field(i).type):
        return table
    ts = table.column(i)
    naive = ts.cast(pa.timestamp(ts.type.unit))  # same instant, formatted without a zone
    text = pc.utf8_replace_slice(pc.cast(naive, pa.string()), 10, 11, "T")
    text = pc.binary_join_element_wise(text, "Z", "")
    return table.set_column(i, pa.field("ts", pa.string(), nullable=False), text)


def _batches(source: SimulationConfig | pa.Table) -> Iterator[pa.Table]:
    if isinstance(source, SimulationConfig):
        yield from iter_event_batches(source)
    else:
        for batch in source.to_batches(max_chunksize=_ROWS_PER_BLOCK):
            yield pa.Table.from_batches([batch], schema=source.schema)


def _prefetch(items: Iterator[T], depth: int = 1) -> Iterator[T]:
    """``items``, produced in a background thread up to ``depth`` ahead: numpy and
    Arrow release the GIL, so simulating the next block overlaps writing this one."""
    channel: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(message: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                channel.put(message, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:
            put(("error", exc))

    worker = threading.Thread(target=produce, name="abeval-simulate", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = channel.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        worker.join()


def write_events(
    source: SimulationConfig | pa.Table,
    path: str | Path,
    format: EventFormat | None = None,
) -> int:
    """Write a simulation (simulated block by block, never all in memory) or a
    table to ``path``, in the format its extension names unless ``format`` is
    given. Timestamps are ISO 8601 UTC text in CSV and JSON Lines, and
    ``timestamp[ms, UTC]`` in Parquet. Returns the number of rows written."""
    fmt = format or format_of(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        return _write_parquet(_prefetch(_batches(source)), path)
    text = _prefetch(_iso_timestamps(batch) for batch in _batches(source))
    if fmt == "jsonl":
        return _write_jsonl(text, path)
    # Strings are quoted only when needed: the generator's own ids never need it, so
    # a simulation is written unquoted unless one of the configured labels needs quotes.
    plain = isinstance(source, SimulationConfig) and not any(
        set(label) & set(',"\r\n') for label in _labels_of(source)
    )
    return _write_csv(text, path, compress=fmt == "csv.gz", quote=not plain)


def _labels_of(config: SimulationConfig) -> list[str]:
    labels = [config.experiment, *config.arms, *config.segments]
    for values in config.segments.values():
        labels += list(values)
    return labels


def _write_csv(batches: Iterator[pa.Table], path: Path, compress: bool, quote: bool) -> int:
    with path.open("wb") as raw:
        if not compress:
            return _write_csv_to(batches, raw, quote)
        # Python's gzip at level 6 (gzip's default) is twice as fast as Arrow's level 9;
        # mtime 0 and no name keep the output byte-for-byte reproducible
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as gz:
            return _write_csv_to(batches, gz, quote)


def _write_csv_to(batches: Iterator[pa.Table], sink: IO[bytes] | gzip.GzipFile, quote: bool) -> int:
    """CSV with a plain header; strings quoted (``quote``) or never quoted (Arrow then
    refuses a value that would need quotes rather than write a broken file)."""
    import pyarrow.csv as csv

    rows = 0
    style = "needed" if quote else "none"
    options = csv.WriteOptions(quoting_style=style, include_header=False)
    writer: csv.CSVWriter | None = None
    for table in batches:
        if writer is None:
            # Arrow quotes every header name; write a plain header (the names are simple)
            sink.write((",".join(table.column_names) + "\n").encode())
            writer = csv.CSVWriter(sink, table.schema, write_options=options)
        writer.write_table(table)
        rows += table.num_rows
    if writer is not None:
        writer.close()
    return rows


def _write_parquet(batches: Iterator[pa.Table], path: Path) -> int:
    import pyarrow.parquet as pq

    rows = 0
    writer: pq.ParquetWriter | None = None
    try:
        for table in batches:
            if writer is None:
                writer = pq.ParquetWriter(str(path), table.schema, compression="zstd")
            writer.write_table(table)
            rows += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    return rows


def _write_jsonl(batches: Iterator[pa.Table], path: Path) -> int:
    """JSON Lines through DuckDB's writer, streaming the batches (one object a line).
    The batches' timestamps are already text."""
    import duckdb

    texts = iter(batches)
    first = next(texts, None)
    if first is None:
        path.write_bytes(b"")
        return 0
    rows = 0

    def counted() -> Iterator[pa.RecordBatch]:
        nonlocal rows
        for table in itertools.chain([first], texts):
            rows += table.num_rows
            yield from table.to_batches()

    reader = pa.RecordBatchReader.from_batches(first.schema, counted())
    with duckdb.connect() as con:
        con.execute("SET preserve_insertion_order = true")
        con.register("events_source", reader)
        target = str(path).replace("'", "''")
        con.execute(f"COPY (SELECT * FROM events_source) TO '{target}' (FORMAT JSON)")
    return rows
