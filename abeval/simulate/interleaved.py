"""Team-draft interleaved logs for two rankers of known quality.

The rankers are the two arms of a :class:`~abeval.simulate.config.SimulationConfig`
(``arms[0]`` is A, ``arms[1]`` is B): each is the Plackett–Luce policy of that arm
(its relevance weight solved from ``true_ctr_lift`` as for the A/B logs), over the
same users (activity, click propensity θ_u), candidates and position bias as the
A/B simulator (:mod:`abeval.simulate`). Every user sees interleaved lists, so
every row carries the one ``arm`` value ``interleaved``.

Team draft (Radlinski, Kurup and Joachims 2008, "How does clickthrough data
reflect retrieval quality?"): each request, both rankers draw their own ranking
of the candidates; then, round after round, a fair coin decides which ranker
picks first, and each ranker in turn adds its highest-ranked item not yet in the
list, until the list is full. Each impression's ``team`` names the ranker that
picked it.

Clicks follow the A/B simulator's examination model (``clicks="position"``:
``P(click) = θ_u · e_k · a``) or a cascade (``clicks="cascade"``: the user scans
from the top, clicks an item with probability ``θ_u · a`` and stops at the first
click; Craswell et al. 2008). A click leads to a purchase with the purchase rate
of the ranker whose item it is. Only the post-exposure requests are simulated
(an interleaved test has no pre-period covariate).

:func:`interleaved_requests` gives the per-request arrays (fast, for the
benchmark); :func:`simulate_interleaved` the event table with a ``team`` column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

from abeval.simulate.columns import labels, strings
from abeval.simulate.config import SimulationConfig
from abeval.simulate.events import draw_pools, order_pools
from abeval.simulate.model import Model, model_of

ClickModel = Literal["position", "cascade"]

#: The one arm value of an interleaved experiment.
INTERLEAVED_ARM = "interleaved"


@dataclass(frozen=True)
class InterleavedRequests:
    """One simulation's requests: who made them, what was shown, by whom, and what
    was clicked and bought."""

    user: np.ndarray  # (request,): user index
    users: int  # users simulated
    items: np.ndarray  # (request, slot): item popularity rank
    team: np.ndarray  # (request, slot): 0 = A, 1 = B
    clicked: np.ndarray  # (request, slot): bool
    bought: np.ndarray  # (request, slot): bool (only where clicked)

    def outcomes(self, credit: Literal["clicks", "purchases"] = "clicks") -> np.ndarray:
        """Per request: +1 when A's items got more credit, −1 when B's did, 0 for a
        tie with credit, and 2 for a request without credit."""
        hits = self.clicked if credit == "clicks" else self.bought
        a = (hits & (self.team == 0)).sum(axis=1)
        b = (hits & (self.team == 1)).sum(axis=1)
        return np.where(a + b == 0, 2, np.sign(a - b)).astype(np.int8)

    def per_user(
        self, credit: Literal["clicks", "purchases"] = "clicks"
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per user: requests won by A, lost by A, tied (with credit)."""
        outcome = self.outcomes(credit)

        def count(value: int) -> np.ndarray:
            return np.bincount(self.user[outcome == value], minlength=self.users)

        return count(1), count(-1), count(0)


def interleaved_requests(
    config: SimulationConfig, *, clicks: ClickModel = "position", seed: int | None = None
) -> InterleavedRequests:
    """Simulate ``config.users`` users' team-draft interleaved requests."""
    if len(config.arms) != 2:
        raise ValueError("an interleaved comparison needs exactly two arms (the rankers)")
    model = model_of(config)
    c = config
    rng = np.random.default_rng(np.random.SeedSequence(c.seed if seed is None else seed))
    m, k = model.theta_mean, c.user_propensity_concentration
    theta = rng.beta(m * k, (1 - m) * k, c.users)
    if c.requests_per_user > 1:
        scale = (c.requests_per_user - 1) / c.activity_dispersion
        rate = rng.gamma(c.activity_dispersion, scale, c.users)
    else:
        rate = np.zeros(c.users)
    per_user = 1 + rng.poisson(rate)
    user = np.repeat(np.arange(c.users), per_user)
    pools = draw_pools(rng, model, user.size)
    picks, team = team_draft(
        rng,
        order_pools(rng, model, pools, np.zeros(user.size, np.int64)),
        order_pools(rng, model, pools, np.ones(user.size, np.int64)),
        c.list_length,
        pool=c.pool,
    )
    relevant = np.take_along_axis(pools.relevant, picks, axis=1)
    clicked = _clicks(rng, model, theta[user], relevant, clicks)
    bought = clicked & (rng.random(clicked.shape) < model.purchase_rates[team])
    items = np.take_along_axis(pools.items, picks, axis=1)
    return InterleavedRequests(user, c.users, items, team, clicked, bought)


def team_draft(
    rng: np.random.Generator,
    order_a: np.ndarray,
    order_b: np.ndarray,
    length: int,
    *,
    pool: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Merge two rankings of each request's candidates (rows of candidate indices,
    best first) by team draft: the candidate index and the team (0 = A, 1 = B) of
    each of the ``length`` slots. ``pool``: the candidates per request the indices
    point into (None: as many as a ranking holds; a ranking may hold only its top
    ``length`` of more candidates)."""
    n_req, n_pool = order_a.shape[0], order_a.shape[1] if pool is None else pool
    rows = np.arange(n_req)
    taken = np.zeros((n_req, n_pool), dtype=bool)
    picks = np.zeros((n_req, length), dtype=np.int64)
    team = np.zeros((n_req, length), dtype=np.int8)
    orders = (order_a, order_b)
    first = np.zeros(n_req, dtype=np.int8)
    for slot in range(length):
        if slot % 2 == 0:  # a new round: a coin decides who picks first
            first = np.asarray(rng.random(n_req) < 0.5, dtype=np.int8)
            who = first
        else:
            who = 1 - first
        # each ranker's best candidate not yet taken
        best = np.empty(n_req, dtype=np.int64)
        for t, order in enumerate(orders):
            at = np.flatnonzero(who == t)
            free = ~np.take_along_axis(taken[at], order[at], axis=1)
            best[at] = order[at, np.argmax(free, axis=1)]
        picks[:, slot] = best
        team[:, slot] = who
        taken[rows, best] = True
    return picks, team


def _clicks(
    rng: np.random.Generator,
    model: Model,
    theta: np.ndarray,
    relevant: np.ndarray,
    clicks: ClickModel,
) -> np.ndarray:
    attract = np.where(relevant, 1.0, model.config.irrelevant_attractiveness)
    if clicks == "position":
        p = theta[:, None] * model.exam[None, :] * attract
        return np.asarray(rng.random(p.shape) < p)
    if clicks == "cascade":
        hit = rng.random(attract.shape) < theta[:, None] * attract
        first = np.cumsum(hit, axis=1) == 1
        return np.asarray(hit & first)
    raise ValueError(f"unknown click model {clicks!r}: choose position or cascade")


def simulate_interleaved(config: SimulationConfig, *, clicks: ClickModel = "position") -> pa.Table:
    """The event table of a team-draft interleaved experiment: an exposure per user,
    the impressions (with ``team``), the clicks and the purchases; every row's
    ``arm`` is ``interleaved``. Times: requests uniform over the window, clicks
    one second after their impression, purchases one second after their click."""
    sim = interleaved_requests(config, clicks=clicks)
    c, model = config, model_of(config)
    rng = np.random.default_rng(np.random.SeedSequence(c.seed, spawn_key=(7,)))
    start = int(c.start.timestamp() * 1000)
    span = c.days * 86_400_000 - 3_600_000
    req_ts = start + (rng.random(sim.user.size) * span).astype(np.int64)
    n_req, length = sim.items.shape
    first = np.full(sim.users, np.iinfo(np.int64).max)
    np.minimum.at(first, sim.user, req_ts)
    req, slot = np.divmod(np.arange(n_req * length), length)
    click_req, click_slot = np.nonzero(sim.clicked)
    buy_req, buy_slot = np.nonzero(sim.bought)
    kind = np.concatenate(
        [
            np.zeros(sim.users, np.int8),
            np.full(req.size, 1, np.int8),
            np.full(click_req.size, 2, np.int8),
            np.full(buy_req.size, 3, np.int8),
        ]
    )
    row_req = np.concatenate([np.zeros(sim.users, np.int64), req, click_req, buy_req])
    row_slot = np.concatenate([np.zeros(sim.users, np.int64), slot, click_slot, buy_slot])
    row_user = np.concatenate([np.arange(sim.users), sim.user[row_req[sim.users :]]])
    ts = np.concatenate([first, req_ts[req], req_ts[click_req] + 1000, req_ts[buy_req] + 2000])
    order = np.lexsort((row_slot, kind, ts))
    kind, row_req, row_slot, row_user, ts = (
        kind[order],
        row_req[order],
        row_slot[order],
        row_user[order],
        ts[order],
    )
    has_request = kind != 0
    is_imp = kind == 1
    value = np.round(rng.lognormal(model.value_mu, c.revenue_sigma, kind.size), 2)
    return pa.table(
        {
            "experiment": pa.repeat(pa.scalar(c.experiment, pa.string()), kind.size),
            "arm": pa.repeat(pa.scalar(INTERLEAVED_ARM, pa.string()), kind.size),
            "user_id": strings("u", np.arange(sim.users)).take(pa.array(row_user)),
            "ts": pa.array(ts, pa.timestamp("ms", tz="UTC")),
            "event_type": labels(("exposure", "impression", "click", "purchase"), kind),
            "request_id": strings("r", np.arange(n_req)).take(pa.array(row_req, mask=~has_request)),
            "item_id": model.item_ids.take(
                pa.array(sim.items[row_req, row_slot], mask=~has_request)
            ),
            "position": pa.array((row_slot + 1).astype(np.int32), mask=~is_imp),
            "value": pa.array(value, mask=kind != 3),
            "team": _teams(c.arms, sim.team[row_req, row_slot], is_imp),
        }
    )


def _teams(arms: tuple[str, ...], team: np.ndarray, is_imp: np.ndarray) -> pa.Array:
    """The team of each impression's item; null on other rows."""
    import pyarrow.compute as pc

    return pc.if_else(pa.array(is_imp), labels(arms, team), pa.scalar(None, pa.string()))
