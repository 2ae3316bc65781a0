"""Ranked logging with known truth, for the off-policy estimators
(docs/metrics.md#ranked-lists-cascade-and-whole-list-estimators).

Users are of ``types`` kinds (drawn with equal probability). A personalised
Plackett–Luce policy ranks ``items`` items for a user of type t with scores
``s[t, a]``: the item at position k is drawn from those not above it with
probability s[t, a] / Σ_{b not above} s[t, b] (the *step* probability, logged as
``propensity_given_above``); the first ``positions`` are shown. The logged
``propensity`` is the marginal probability of the item at its position for the
user's type, exact by enumerating every ordered list of ``positions`` items.

Clicks follow one of two models, with attractiveness α[t, a]:

- ``position_based``: a click at k with probability θ_k · α[t, a_k], independently;
- ``cascade``: the user reads from the top and clicks the first attractive item,
  so a click at k has probability α[t, a_k] · Π_{j<k} (1 − α[t, a_j]).

The source arm logs under the logging scores, the target arm under the target
scores. :func:`target_rows` gives the target's exact probabilities for every
source request: for each position k and every item not shown above k, its
marginal probability at k (``probability``) and its step probability given the
logged items above k (``probability_given_above``): the rows Cascade-DR needs.
:meth:`RankedWorld.true_ctr` is the target's exact CTR per impression.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
import pandas as pd

ClickModel = Literal["position_based", "cascade"]


@dataclass(frozen=True)
class RankedWorld:
    """The policies and the click model of one simulated experiment."""

    log_scores: np.ndarray  # (types, items)
    target_scores: np.ndarray  # (types, items)
    attraction: np.ndarray  # (types, items)
    examination: np.ndarray  # (positions,), position-based clicks only
    click_model: ClickModel

    @property
    def types(self) -> int:
        return int(self.log_scores.shape[0])

    @property
    def positions(self) -> int:
        return int(self.examination.shape[0])

    @cached_property
    def lists(self) -> np.ndarray:
        """Every ordered list of ``positions`` distinct items, (lists, positions)."""
        items = self.log_scores.shape[1]
        return np.array(list(itertools.permutations(range(items), self.positions)))

    def list_probabilities(self, scores: np.ndarray) -> np.ndarray:
        """P(list | type) under the Plackett–Luce policy of ``scores``, (types, lists)."""
        lists = self.lists
        out = np.ones((self.types, len(lists)))
        above = np.zeros((self.types, len(lists)))
        total = scores.sum(axis=1, keepdims=True)
        for k in range(self.positions):
            chosen = scores[:, lists[:, k]]
            out *= chosen / (total - above)
            above += chosen
        return out

    def marginals(self, scores: np.ndarray) -> np.ndarray:
        """P(item a at position k | type), (types, items, positions)."""
        probs = self.list_probabilities(scores)
        out = np.zeros((self.types, scores.shape[1], self.positions))
        for k in range(self.positions):
            for a in range(scores.shape[1]):
                out[:, a, k] = probs[:, self.lists[:, k] == a].sum(axis=1)
        return out

    def click_probabilities(self, lists: np.ndarray, types: np.ndarray) -> np.ndarray:
        """P(click at k) for each list shown to a user of each type, (n, positions)."""
        alpha = self.attraction[types[:, None], lists]
        if self.click_model == "position_based":
            return alpha * self.examination[None, :]
        reach = np.cumprod(np.hstack([np.ones((len(lists), 1)), 1 - alpha[:, :-1]]), axis=1)
        return alpha * reach

    def true_ctr(self) -> float:
        """The target's exact CTR per impression (types equally likely)."""
        probs = self.list_probabilities(self.target_scores)
        lists = np.tile(self.lists, (self.types, 1))
        types = np.repeat(np.arange(self.types), len(self.lists))
        clicks = self.click_probabilities(lists, types).sum(axis=1)
        return float((probs.reshape(-1) * clicks).sum() / self.types / self.positions)


def example_world(click_model: ClickModel, seed: int = 0, items: int = 6) -> RankedWorld:
    """Three user types, ``items`` items, three positions: the target ranks by a
    score closer to each type's attractiveness than the logging policy does."""
    rng = np.random.default_rng(seed)
    types = 3
    attraction = rng.uniform(0.05, 0.5, size=(types, items))
    log_scores = np.exp(rng.normal(0.0, 0.6, size=(types, items)))
    target_scores = np.exp(2.0 * np.log(attraction / attraction.mean()) + rng.normal(0, 0.3))
    return RankedWorld(
        log_scores=log_scores,
        target_scores=target_scores,
        attraction=attraction,
        examination=np.array([1.0, 0.7, 0.5]),
        click_model=click_model,
    )


def sample_lists(
    rng: np.random.Generator, scores: np.ndarray, types: np.ndarray, positions: int
) -> np.ndarray:
    """One Plackett–Luce list per request (the Gumbel trick: sort log-scores plus
    Gumbel noise), (n, positions)."""
    keys = np.log(scores[types]) + rng.gumbel(size=(len(types), scores.shape[1]))
    return np.argsort(-keys, axis=1)[:, :positions]


def step_probabilities(scores: np.ndarray, types: np.ndarray, lists: np.ndarray) -> np.ndarray:
    """P(a_k at k | a_1 … a_{k−1}) of each logged list under ``scores``, (n, positions)."""
    s = scores[types]
    chosen = np.take_along_axis(s, lists, axis=1)
    above = np.hstack([np.zeros((len(lists), 1)), np.cumsum(chosen, axis=1)[:, :-1]])
    return chosen / (s.sum(axis=1, keepdims=True) - above)


def impressions(
    world: RankedWorld,
    rng: np.random.Generator,
    arm: str,
    users: int,
    target: bool = False,
    max_requests: int = 4,
) -> pd.DataFrame:
    """Impressions of ``users`` users (1 to ``max_requests`` requests each) under
    the logging policy (or the target's with ``target``): arm, user, type,
    request, item, position, clicked, propensity, propensity_given_above."""
    scores = world.target_scores if target else world.log_scores
    user_types = rng.integers(0, world.types, size=users)
    counts = rng.integers(1, max_requests + 1, size=users)
    user = np.repeat(np.arange(users), counts)
    types = user_types[user]
    n, k = len(user), world.positions
    lists = sample_lists(rng, scores, types, k)
    clicked = rng.random((n, k)) < world.click_probabilities(lists, types)
    marginal = world.marginals(scores)[types[:, None], lists, np.arange(k)[None, :]]
    steps = step_probabilities(scores, types, lists)
    return pd.DataFrame(
        {
            "arm": arm,
            "user": np.repeat([f"{arm}-{u:05d}" for u in user], k),
            "type": np.repeat(types, k),
            "request": np.repeat([f"{arm}-r{i:06d}" for i in range(n)], k),
            "item": [f"i{a}" for a in lists.reshape(-1)],
            "position": np.tile(np.arange(1, k + 1), n),
            "clicked": clicked.reshape(-1),
            "propensity": marginal.reshape(-1),
            "propensity_given_above": steps.reshape(-1),
        }
    )


def target_rows(world: RankedWorld, source: pd.DataFrame, arm: str) -> pd.DataFrame:
    """The target's exact probabilities for every request of ``source``: per
    position k, a row for every item not logged above k (module docstring)."""
    k = world.positions
    items = world.log_scores.shape[1]
    marg = world.marginals(world.target_scores)
    first = source.iloc[::k]
    types = first["type"].to_numpy()
    lists = np.array([int(i[1:]) for i in source["item"]]).reshape(-1, k)
    s = world.target_scores[types]  # (n, items)
    rows = []
    above = np.zeros_like(s, dtype=bool)
    for pos in range(k):
        free = ~above
        total = np.where(free, s, 0.0).sum(axis=1, keepdims=True)
        rho = np.where(free, s / total, 0.0)
        req, item = np.nonzero(free)
        rows.append(
            pd.DataFrame(
                {
                    "arm": arm,
                    "request_id": first["request"].to_numpy()[req],
                    "item_id": [f"i{a}" for a in item],
                    "position": pos + 1,
                    "probability": marg[types[req], item, pos],
                    "probability_given_above": rho[req, item],
                }
            )
        )
        above[np.arange(len(lists)), lists[:, pos]] = True
    del items
    return pd.concat(rows, ignore_index=True)


def event_rows(logs: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """``logs`` (of :func:`impressions`) as rows of the event format: an
    impression per row and a click one second after each clicked one."""
    start = pd.Timestamp("2024-03-01T10:00:00")
    ts = start + pd.to_timedelta(np.arange(len(logs)) * 2, unit="s")
    imp = pd.DataFrame(
        {
            "experiment": experiment,
            "arm": logs["arm"].to_numpy(),
            "user_id": logs["user"].to_numpy(),
            "ts": ts,
            "event_type": "impression",
            "request_id": logs["request"].to_numpy(),
            "item_id": logs["item"].to_numpy(),
            "position": logs["position"].to_numpy(),
            "propensity": logs["propensity"].to_numpy(),
            "propensity_given_above": logs["propensity_given_above"].to_numpy(),
        }
    )
    clicks = imp[logs["clicked"].to_numpy()].copy()
    clicks["event_type"] = "click"
    clicks["ts"] = clicks["ts"] + pd.Timedelta(seconds=1)
    clicks[["position", "propensity", "propensity_given_above"]] = np.nan
    out = pd.concat([imp, clicks], ignore_index=True)
    out["ts"] = out["ts"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    out["position"] = out["position"].astype("Int64")
    return out
