"""How well an offline signal predicts the online lift, over experiments
(docs/metrics.md#agreement-across-experiments).

The input is one :class:`Point` per (experiment, treatment arm): the offline
lift a signal gave (``offline``, oriented so that a larger value means "better"
by the signal) and the online lift measured in the test (``online``), each with
its interval, the online lift's standard error, and the experiment the point
belongs to (``cluster``). :func:`agreement` returns, all in one frozen
:class:`Agreement`:

- sign agreement and the points where both lifts were significant;
- Spearman, Kendall (tau-b) and Pearson correlations, each with a percentile
  bootstrap interval that resamples *experiments* (arms of one experiment share
  its control, so they are resampled together);
- a calibration slope of the online on the offline lift, by inverse-variance
  weighted least squares with a between-experiment variance τ² estimated by the
  method of moments (meta-regression), its interval by Hartung–Knapp–Sidik–Jonkman
  with t(k − 2);
- decision quality: precision and false-negative rate of "offline says better"
  against "online significantly better".

Degenerate inputs (too few experiments, no variation) give a ``status`` and
``None``, never an exception. numpy is imported inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from abeval.stats.distributions import t_isf
from abeval.stats.results import JsonResult

if TYPE_CHECKING:
    import numpy as np

AgreementStatus = Literal["ok", "no_data", "too_few_experiments", "no_variation"]

#: Fewest experiments for a correlation (and its bootstrap) and for the slope.
MIN_EXPERIMENTS = 3
#: Up to this many points the permutation p-value enumerates every permutation.
EXACT_PERMUTATIONS = 8
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Point:
    """One experiment × treatment arm: the signal's offline lift and the online lift.

    ``offline_ci``/``online_ci`` are None when the interval is undefined;
    ``online_se`` (the online lift's standard error) weighs the point in the
    calibration slope and is None when unknown; ``arm`` names the treatment arm
    within the experiment (the family-wise permutation moves an experiment's
    arms together, arm onto arm); ``offline_se``, the offline lift's standard
    error, is what the forecast model reads (None when unknown)."""

    cluster: str
    offline: float
    online: float
    offline_ci: tuple[float, float] | None = None
    online_ci: tuple[float, float] | None = None
    online_se: float | None = None
    arm: str = ""
    offline_se: float | None = None


@dataclass(frozen=True)
class SignCounts(JsonResult):
    """``agree`` of ``points`` have lifts of the same strict sign (a lift of
    exactly 0 agrees with nothing); ``both_significant`` points have both
    intervals excluding 0, of which ``both_significant_agree`` on the same side."""

    points: int
    agree: int
    share: float | None
    both_significant: int
    both_significant_agree: int


@dataclass(frozen=True)
class Correlation(JsonResult):
    """A correlation over the points and its percentile bootstrap interval over
    experiments; ``resamples_used`` counts the resamples where it was defined.
    ``p_value`` (Spearman only): the one-sided permutation p-value of a
    correlation at least this large when offline and online lifts are unrelated."""

    estimate: float | None
    ci: tuple[float, float] | None
    resamples_used: int
    status: AgreementStatus
    message: str
    p_value: float | None = None


@dataclass(frozen=True)
class Calibration(JsonResult):
    """online ≈ intercept + slope · offline, weighted by 1 / (se² + τ²): the
    slope with its Hartung–Knapp–Sidik–Jonkman standard error and t(k − 2)
    interval, the intercept, τ² and
    the number of points used (those with an online standard error above 0)."""

    slope: float | None
    se: float | None
    ci: tuple[float, float] | None
    intercept: float | None
    tau2: float | None
    points: int
    status: AgreementStatus
    message: str


@dataclass(frozen=True)
class DecisionQuality(JsonResult):
    """ "Offline says better" (its interval lies above 0) against "online
    significantly better" (its interval lies above 0), counted over the points:
    ``precision`` = TP / (TP + FP), ``false_negative_rate`` = FN / (TP + FN);
    None when the denominator is 0."""

    true_positives: int
    false_positives: int
    false_negatives: int
    true_negatives: int
    precision: float | None
    false_negative_rate: float | None


@dataclass(frozen=True)
class Agreement(JsonResult):
    """Everything :func:`agreement` says about one signal."""

    experiments: int
    points: int
    sign: SignCounts
    spearman: Correlation
    kendall: Correlation
    pearson: Correlation
    calibration: Calibration
    decisions: DecisionQuality
    alpha: float
    resamples: int
    seed: int


def _side(ci: tuple[float, float] | None) -> int:
    """+1 when the interval lies above 0, -1 below, else 0."""
    if ci is None:
        return 0
    return 1 if ci[0] > 0 else -1 if ci[1] < 0 else 0


def _sign(x: float) -> int:
    return 1 if x > 0 else -1 if x < 0 else 0


def sign_counts(points: Sequence[Point]) -> SignCounts:
    """Sign agreement and the significant pairs (:class:`SignCounts`)."""
    agree = sum(1 for p in points if _sign(p.offline) * _sign(p.online) == 1)
    sides = [(_side(p.offline_ci), _side(p.online_ci)) for p in points]
    both = [(a, b) for a, b in sides if a != 0 and b != 0]
    return SignCounts(
        points=len(points),
        agree=agree,
        share=agree / len(points) if points else None,
        both_significant=len(both),
        both_significant_agree=sum(1 for a, b in both if a == b),
    )


def decision_quality(points: Sequence[Point]) -> DecisionQuality:
    """Precision and false-negative rate of the offline decision
    (:class:`DecisionQuality`)."""
    tp = fp = fn = tn = 0
    for p in points:
        says = _side(p.offline_ci) == 1
        better = _side(p.online_ci) == 1
        tp += says and better
        fp += says and not better
        fn += better and not says
        tn += not says and not better
    return DecisionQuality(
        true_positives=tp,
        false_positives=fp,
        false_negatives=fn,
        true_negatives=tn,
        precision=tp / (tp + fp) if tp + fp else None,
        false_negative_rate=fn / (tp + fn) if tp + fn else None,
    )


# --------------------------------------------------------------------------- correlations


def _weighted_pearson(x: np.ndarray, y: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Pearson's r of each row's sample, where point j appears ``m[:, j]`` times;
    NaN where x or y does not vary. ``x``, ``y``: (rows, n) or (n,); ``m``: (rows, n)."""
    import numpy as np

    total = m.sum(axis=1, keepdims=True)
    mx = (m * x).sum(axis=1, keepdims=True) / total
    my = (m * y).sum(axis=1, keepdims=True) / total
    dx, dy = x - mx, y - my
    sxy = (m * dx * dy).sum(axis=1)
    sxx = (m * dx * dx).sum(axis=1)
    syy = (m * dy * dy).sum(axis=1)
    # Variation below rounding noise of the values is no variation.
    scale_x = (m * x * x).sum(axis=1) * 1e-24
    scale_y = (m * y * y).sum(axis=1) * 1e-24
    ok = (sxx > scale_x) & (syy > scale_y) & (sxx > 0) & (syy > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(ok, sxy / np.sqrt(np.where(ok, sxx * syy, 1.0)), np.nan)
    return np.clip(r, -1.0, 1.0)


def _ranks(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties share the mean rank) of each point in each
    row's sample, where point j appears ``m[:, j]`` times."""
    less = (v[None, :] < v[:, None]).astype(float)  # less[i, j]: v_j < v_i
    equal = (v[None, :] == v[:, None]).astype(float)
    return m @ less.T + (m @ equal.T + 1.0) / 2.0


def _kendall_b(x: np.ndarray, y: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row's sample (point j appearing ``m[:, j]`` times):
    (concordant − discordant) / √(pairs untied in x · pairs untied in y). Copies
    of one point are tied in both and add nothing; NaN where a variable is constant."""
    import numpy as np

    sx = np.sign(x[:, None] - x[None, :])
    sy = np.sign(y[:, None] - y[None, :])
    # Σ over unordered pairs of the sample = ½ mᵀ A m (the diagonal of A is 0).
    s = np.einsum("ri,ij,rj->r", m, sx * sy, m) / 2.0
    nx = np.einsum("ri,ij,rj->r", m, np.abs(sx), m) / 2.0
    ny = np.einsum("ri,ij,rj->r", m, np.abs(sy), m) / 2.0
    ok = (nx > 0) & (ny > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(ok, s / np.sqrt(np.where(ok, nx * ny, 1.0)), np.nan)
    return np.clip(tau, -1.0, 1.0)


def _statistic(name: str, x: np.ndarray, y: np.ndarray, m: np.ndarray) -> np.ndarray:
    if name == "spearman":
        return _weighted_pearson(_ranks(x, m), _ranks(y, m), m)
    if name == "kendall":
        return _kendall_b(x, y, m)
    return _weighted_pearson(x, y, m)


def resample_clusters(k: int, resamples: int, seed: int) -> np.ndarray:
    """The bootstrap draws: ``resamples`` rows of ``k`` cluster indices drawn with
    replacement, ``numpy.random.default_rng(seed).integers(0, k, (resamples, k))``
    (documented so that a test can redraw them)."""
    import numpy as np

    return np.random.default_rng(seed).integers(0, k, size=(resamples, k))


def correlations(
    points: Sequence[Point], alpha: float, resamples: int, seed: int
) -> tuple[Correlation, Correlation, Correlation]:
    """Spearman, Kendall tau-b and Pearson with percentile bootstrap intervals
    over clusters (module docstring); resamples where a statistic is undefined
    (a variable constant in the resample) are left out of its interval."""
    import numpy as np

    clusters = sorted({p.cluster for p in points})
    if len(clusters) < MIN_EXPERIMENTS or len(points) < MIN_EXPERIMENTS:
        message = f"{len(clusters)} experiments: a correlation needs {MIN_EXPERIMENTS} or more"
        empty = Correlation(None, None, 0, "too_few_experiments", message)
        return empty, empty, empty
    x = np.array([p.offline for p in points], dtype=float)
    y = np.array([p.online for p in points], dtype=float)
    index = {c: i for i, c in enumerate(clusters)}
    member = np.zeros((len(clusters), len(points)))
    for j, p in enumerate(points):
        member[index[p.cluster], j] = 1.0
    draws = resample_clusters(len(clusters), resamples, seed)
    counts = np.zeros((resamples, len(clusters)))
    np.add.at(counts, (np.repeat(np.arange(resamples), len(clusters)), draws.ravel()), 1.0)
    weights = counts @ member  # times each point appears in each resample
    ones = np.ones((1, len(points)))
    out = []
    for name in ("spearman", "kendall", "pearson"):
        estimate = float(_statistic(name, x, y, ones)[0])
        if not math.isfinite(estimate):
            out.append(
                Correlation(None, None, 0, "no_variation", "offline or online lifts are all equal")
            )
            continue
        boot = _statistic(name, x, y, weights)
        boot = boot[np.isfinite(boot)]
        ci = None
        if boot.size:
            lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
            ci = (float(lo), float(hi))
        p_value = spearman_p_value(x, y, estimate, resamples, seed) if name == "spearman" else None
        out.append(Correlation(estimate, ci, int(boot.size), "ok", "", p_value))
    return out[0], out[1], out[2]


def spearman_p_value(
    x: np.ndarray, y: np.ndarray, observed: float, resamples: int, seed: int
) -> float:
    """One-sided permutation p-value of Spearman's ρ: the share of pairings of the
    online lifts with the offline ones whose ρ is at least ``observed``. Every
    permutation up to :data:`EXACT_PERMUTATIONS` points; beyond, ``resamples``
    seeded random permutations and (count + 1) / (resamples + 1)."""
    import itertools

    import numpy as np

    ones = np.ones((1, x.size))
    rx = _ranks(x, ones)[0]
    ry = _ranks(y, ones)[0]
    if x.size <= EXACT_PERMUTATIONS:
        orders = np.array(list(itertools.permutations(range(x.size))))
        exact = True
    else:
        rng = np.random.default_rng(seed)
        orders = np.array([rng.permutation(x.size) for _ in range(resamples)])
        exact = False
    rho = _weighted_pearson(rx, ry[orders], np.ones(orders.shape))
    hits = int(np.sum(rho >= observed - 1e-12))
    return hits / len(orders) if exact else (hits + 1) / (len(orders) + 1)


# --------------------------------------------------------------------------- calibration


def calibration(points: Sequence[Point], alpha: float) -> Calibration:
    """The calibration slope by meta-regression (docs/metrics.md#calibration-slope):
    weights 1/se² give the residual heterogeneity Q; τ² = max(0, (Q − (k − 2)) /
    (Σw − tr((XᵀWX)⁻¹ XᵀW²X))) (method of moments, the DerSimonian–Laird estimator
    extended to a covariate); then weighted least squares with w* = 1/(se² + τ²).
    The slope's variance is the Hartung–Knapp–Sidik–Jonkman one, q·[(XᵀW*X)⁻¹]₁₁
    with q = Σ w*·residual² / (k − 2), and its interval uses Student's t with
    k − 2 degrees of freedom (the normal interval with this τ² covers 87–91%
    with 5–12 experiments, HKSJ 95–97%: benchmarks/RESULTS.md)."""
    import numpy as np

    usable = [p for p in points if p.online_se is not None and p.online_se > 0]
    k = len(usable)
    if k < MIN_EXPERIMENTS:
        return Calibration(
            None, None, None, None, None, k, "too_few_experiments",
            f"{k} points with an online standard error: the slope needs {MIN_EXPERIMENTS} or more",
        )  # fmt: skip
    x = np.array([p.offline for p in usable])
    y = np.array([p.online for p in usable])
    v = np.array([p.online_se for p in usable], dtype=float) ** 2
    design = np.column_stack([np.ones(k), x])
    if np.ptp(x) <= 1e-12 * max(float(np.max(np.abs(x))), 1e-300):
        return Calibration(
            None, None, None, None, None, k, "no_variation", "the offline lifts are all equal"
        )
    w = 1.0 / v
    beta, info_inv = _wls(design, y, w)
    residual = y - design @ beta
    q = float(np.sum(w * residual**2))
    trace = float(np.sum(w) - np.trace(info_inv @ (design.T * w**2) @ design))
    tau2 = max(0.0, (q - (k - 2)) / trace) if trace > 0 else 0.0
    w = 1.0 / (v + tau2)
    beta, info_inv = _wls(design, y, w)
    # Hartung–Knapp–Sidik–Jonkman: the variance scaled by the weighted residual
    # mean square, with Student's t on k − 2 degrees of freedom.
    scale = float(np.sum(w * (y - design @ beta) ** 2)) / (k - 2)
    se = math.sqrt(max(scale * float(info_inv[1, 1]), 0.0))
    t = t_isf(alpha / 2, k - 2)
    slope = float(beta[1])
    return Calibration(
        slope, se, (slope - t * se, slope + t * se), float(beta[0]), tau2, k, "ok", ""
    )


def _wls(design: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted least squares: the coefficients and (XᵀWX)⁻¹."""
    import numpy as np

    info = (design.T * w) @ design
    info_inv = np.linalg.inv(info)
    return info_inv @ ((design.T * w) @ y), info_inv


# --------------------------------------------------------------------------- all together


def agreement(
    points: Sequence[Point],
    alpha: float = 0.05,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Agreement:
    """Every agreement statistic of one signal over ``points`` (module docstring)."""
    points = [p for p in points if math.isfinite(p.offline) and math.isfinite(p.online)]
    spearman, kendall, pearson = correlations(points, alpha, resamples, seed)
    return Agreement(
        experiments=len({p.cluster for p in points}),
        points=len(points),
        sign=sign_counts(points),
        spearman=spearman,
        kendall=kendall,
        pearson=pearson,
        calibration=calibration(points, alpha),
        decisions=decision_quality(points),
        alpha=alpha,
        resamples=resamples,
        seed=seed,
    )
