"""A family-wise p-value for the board's signals: how often would the *best* of
all these signals rank the online lifts at least this well if no signal were
related to them (docs/metrics.md#noise-aware-board)?

The unit permuted is the experiment: its online lifts (one per treatment arm,
all sharing its control) move together, onto another experiment with as many
arms, arm j onto arm j (arms in the order of their names). For each permutation
every signal's Spearman ρ is recomputed over that signal's own points with the
permuted online lifts, and the maximum over the signals is kept (the "max-T"
method of Westfall and Young). A signal's p-value is the share of permutations
whose maximum is at least the signal's observed ρ: below α for any signal with
probability at most α when nothing is related, however many signals are shown.

Every permutation when there are at most :data:`EXACT_PERMUTATIONS` of them
(the identity included, so the smallest p is 1 / count); beyond, ``resamples``
seeded random ones and (hits + 1) / (resamples + 1).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from abeval.stats.agreement import MIN_EXPERIMENTS, Point
from abeval.stats.agreement_noise import rank_rows, row_pearson
from abeval.stats.results import JsonResult

if TYPE_CHECKING:
    import numpy as np

#: Up to this many permutations of the experiments (7! = 5,040) all are enumerated.
EXACT_PERMUTATIONS = 10_000


@dataclass(frozen=True)
class FamilyWise(JsonResult):
    """One p-value per signal in the order given (None where its ρ is
    undefined), over ``permutations`` permutations, ``exact`` when all were
    enumerated."""

    p_values: tuple[float | None, ...]
    observed: tuple[float | None, ...]
    permutations: int
    exact: bool
    status: Literal["ok", "too_few_experiments"]


def _layout(
    signals: Sequence[Sequence[Point]],
) -> tuple[list[str], dict[str, list[str]], dict[tuple[str, str], float]]:
    """The experiments, each one's arms (sorted) and the online lift of each slot."""
    online: dict[tuple[str, str], float] = {}
    for points in signals:
        for p in points:
            online.setdefault((p.cluster, p.arm), p.online)
    experiments = sorted({c for c, _ in online})
    arms = {e: sorted(a for c, a in online if c == e) for e in experiments}
    return experiments, arms, online


def _strata(experiments: list[str], arms: dict[str, list[str]]) -> list[list[int]]:
    """Indices of the experiments that can swap: those with as many arms."""
    by_size: dict[int, list[int]] = {}
    for i, e in enumerate(experiments):
        by_size.setdefault(len(arms[e]), []).append(i)
    return list(by_size.values())


def _permutations(
    strata: list[list[int]], k: int, resamples: int, seed: int
) -> tuple[np.ndarray, bool]:
    """Rows of ``k`` experiment indices (row r maps experiment i to row[r, i]) and
    whether they are all the permutations."""
    import numpy as np

    if math.prod(math.factorial(len(s)) for s in strata) <= EXACT_PERMUTATIONS:
        rows = []
        for combo in itertools.product(*(itertools.permutations(s) for s in strata)):
            row = np.arange(k)
            for stratum, image in zip(strata, combo, strict=True):
                row[stratum] = image
            rows.append(row)
        return np.array(rows), True
    rng = np.random.default_rng(seed)
    out = np.tile(np.arange(k), (resamples, 1))
    for stratum in strata:
        idx = np.array(stratum)
        for r in range(resamples):
            out[r, idx] = idx[rng.permutation(idx.size)]
    return out, False


def familywise_p(
    signals: Sequence[Sequence[Point]], resamples: int = 2000, seed: int = 0
) -> FamilyWise:
    """Max-ρ permutation p-values of ``signals`` (each a list of points oriented
    so that larger is better, ``Point.arm`` naming the arm); module docstring."""
    import numpy as np

    experiments, arms, online = _layout(signals)
    k = len(experiments)
    if k < MIN_EXPERIMENTS:
        return FamilyWise(tuple(None for _ in signals), tuple(None for _ in signals), 0, False,
                          "too_few_experiments")  # fmt: skip
    index = {e: i for i, e in enumerate(experiments)}
    width = max(len(a) for a in arms.values())
    slot = np.full((k, width), -1)
    values: list[float] = []
    for e in experiments:
        for j, a in enumerate(arms[e]):
            slot[index[e], j] = len(values)
            values.append(online[(e, a)])
    y = np.array(values)
    perms, exact = _permutations(_strata(experiments, arms), k, resamples, seed)
    best = np.full(len(perms), -np.inf)
    observed = [_signal_rho(points, slot, y, index, arms) for points in signals]
    for points, rho in zip(signals, observed, strict=True):
        if rho is None:
            continue
        permuted = _permuted_rho(points, perms, slot, y, index, arms)
        best = np.fmax(best, permuted)
    p_values: list[float | None] = []
    for rho in observed:
        if rho is None:
            p_values.append(None)
            continue
        hits = int(np.sum(best >= rho - 1e-12))
        p_values.append(hits / len(perms) if exact else (hits + 1) / (len(perms) + 1))
    return FamilyWise(tuple(p_values), tuple(observed), len(perms), exact, "ok")


def _columns(
    points: Sequence[Point], index: dict[str, int], arms: dict[str, list[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Each point's experiment index and arm position."""
    import numpy as np

    rows = np.array([index[p.cluster] for p in points])
    cols = np.array([arms[p.cluster].index(p.arm) for p in points])
    return rows, cols


def _permuted_rho(
    points: Sequence[Point],
    perms: np.ndarray,
    slot: np.ndarray,
    y: np.ndarray,
    index: dict[str, int],
    arms: dict[str, list[str]],
) -> np.ndarray:
    """The signal's ρ under each permutation (NaN where undefined)."""
    import numpy as np

    rows, cols = _columns(points, index, arms)
    x = np.array([p.offline for p in points])[None, :]
    permuted = y[slot[perms[:, rows], cols]]
    return np.asarray(row_pearson(rank_rows(x), rank_rows(permuted)))


def _signal_rho(
    points: Sequence[Point],
    slot: np.ndarray,
    y: np.ndarray,
    index: dict[str, int],
    arms: dict[str, list[str]],
) -> float | None:
    """The observed ρ (None with fewer than 3 experiments or no variation)."""
    import numpy as np

    if len({p.cluster for p in points}) < MIN_EXPERIMENTS:
        return None
    identity = np.arange(len(index))[None, :]
    value = float(_permuted_rho(points, identity, slot, y, index, arms)[0])
    return value if math.isfinite(value) else None
