"""The policy and user model of one configuration: the solved relevance weights,
the users' mean click propensity, the purchase rates, the propensity tables and
the item sampler, computed once per configuration (and cached); and the
expectations derived from them (:func:`expected_effects`)."""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from abeval.simulate.columns import strings
from abeval.simulate.config import SimulationConfig
from abeval.simulate.effects import (
    ArmTruth,
    ExpectedEffects,
    click_weight,
    irrelevant_at_position,
    relevant_at_position,
    solve_weight,
)


class Model:
    """Per-config constants: solved weights, propensity tables, item sampler."""

    def __init__(self, config: SimulationConfig) -> None:
        c = config
        self.config = c
        self.exam = c.examination
        self.weights = np.array(
            [c.control_relevance_weight] + [solve_weight(c, c.ctr_lift(a), a) for a in c.arms[1:]]
        )
        g_control = click_weight(c, self.weights[0])
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
        # propensity[arm, R, k, relevant] without the tilt; R counts the relevant candidates
        n, shown = c.pool, c.list_length
        self.tilts = np.array([c.tilt(a) for a in c.arms])
        self.propensity = np.zeros((len(c.arms), n + 1, shown, 2))
        # irrelevant_rank[arm][R, k, m]: P(position k holds the m-th most popular irrelevant
        # candidate | popularity order), only for tilted arms
        self.irrelevant_rank: list[np.ndarray | None] = []
        counts = np.arange(n + 1, dtype=np.float64)[:, None]
        for i, w in enumerate(self.weights):
            q = relevant_at_position(n, float(w))[:, :shown]
            self.propensity[i, :, :, 1] = np.divide(
                q, counts, out=np.zeros_like(q), where=counts > 0
            )
            self.propensity[i, :, :, 0] = np.divide(
                1 - q, n - counts, out=np.zeros_like(q), where=counts < n
            )
            tilted = self.tilts[i] > 0
            rank = irrelevant_at_position(n, float(w))[:, :shown] if tilted else None
            self.irrelevant_rank.append(rank)
        ranks = np.arange(1, c.catalogue + 1, dtype=np.float64)
        popularity = ranks ** (-c.item_popularity_exponent)
        self.item_cdf = np.cumsum(popularity / popularity.sum())
        self.item_cdf[-1] = 1.0
        perm_rng = np.random.default_rng(np.random.SeedSequence(c.seed, spawn_key=(1 << 30,)))
        self.item_ids = strings("i", perm_rng.permutation(c.catalogue))  # by popularity rank
        self.value_mu = math.log(c.revenue_mean) - c.revenue_sigma**2 / 2

    def propensities(
        self,
        arm: int,
        n_relevant: np.ndarray,
        slot: np.ndarray,
        relevant: np.ndarray,
        irrelevant_rank: np.ndarray,
    ) -> np.ndarray:
        """The policy of arm index ``arm``'s probability of showing each item at
        ``slot`` (0-based), given its request's number of relevant candidates, its
        relevance and (for an irrelevant one) its popularity rank among the
        request's irrelevant candidates (0 = most popular). See :mod:`abeval.simulate`."""
        base = self.propensity[arm, n_relevant, slot, relevant.astype(np.int64)]
        table, tau = self.irrelevant_rank[arm], float(self.tilts[arm])
        if table is None:
            return np.asarray(base)
        by_rank = table[n_relevant, slot, np.where(relevant, 0, irrelevant_rank)]
        return np.asarray(np.where(relevant, base, (1 - tau) * base + tau * by_rank))

    def truth(self, arm_index: int, share: float, requests: float) -> ArmTruth:
        c = self.config
        ctr = self.theta_mean * click_weight(c, float(self.weights[arm_index]))
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


_MODELS: dict[str, Model] = {}


def model_of(config: SimulationConfig) -> Model:
    """The (cached) model of a configuration."""
    key = repr(config)
    model = _MODELS.get(key)
    if model is None:
        model = _MODELS[key] = Model(config)
        while len(_MODELS) > 16:
            del _MODELS[next(iter(_MODELS))]
    return model


def expected_effects(config: SimulationConfig) -> ExpectedEffects:
    """The true per-arm expectations and lifts of a simulation (see :mod:`abeval.simulate`)."""
    return model_of(config).effects


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
