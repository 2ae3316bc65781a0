"""Hall's skewness-corrected interval for an off-policy estimate
(abeval.stats.skew_interval, abeval.stats.ope.skew_corrected), against an
independent numpy computation: the per-user influence values formed directly,
their moments with numpy, and Hall's equation √n·g(T) = ±z solved by bisection
on the polynomial g rather than by its closed-form inverse."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest
from scipy.stats import norm

from abeval.stats.ope import cube, estimate, log_linear, skew_corrected
from abeval.stats.skew_interval import hall_interval, triple, triples

Z = float(norm.ppf(0.975))


@dataclass(frozen=True)
class Sums:
    users: int
    sums: dict[str, float]
    products: dict[tuple[str, str], float]


def user_sums(x: dict[str, np.ndarray], with_triples: bool = True) -> Sums:
    names = list(x)
    sums = {k: float(v.sum()) for k, v in x.items()}
    if "w" in x:
        sums[cube("w")] = float((x["w"] ** 3).sum())
    if with_triples:
        for a, b, c in triples(names):
            sums[triple(a, b, c)] = float((x[a] * x[b] * x[c]).sum())
    products = {(a, b): float((x[a] * x[b]).sum()) for i, a in enumerate(names) for b in names[i:]}
    return Sums(len(next(iter(x.values()))), sums, products)


def hall_by_bisection(
    psi: np.ndarray, value: float, se: float, alpha: float = 0.05
) -> tuple[float, float]:
    """Hall's interval from its definition, γ the skewness (divisor n) of the
    influence values ``psi``."""
    d = psi - psi.mean()
    return bisected(value, se, (d**3).mean() / (d**2).mean() ** 1.5, len(psi), alpha)


def bisected(value: float, se: float, gamma: float, n: int, alpha: float) -> tuple[float, float]:
    """g(T) = T + γT²/3 + γ²T³/27 + γ/(6n); the endpoints value − σ̂·T where
    √n·g(T) = ∓z, σ̂ = se·√n; g is increasing, so bisection finds T."""
    z = float(norm.ppf(1 - alpha / 2))

    def solve(target: float) -> float:
        lo, hi = -50.0, 50.0
        for _ in range(200):
            t = (lo + hi) / 2
            g = t + gamma * t * t / 3 + gamma**2 * t**3 / 27 + gamma / (6 * n)
            lo, hi = (t, hi) if np.sqrt(n) * g < target else (lo, t)
        return (lo + hi) / 2

    sigma = se * np.sqrt(n)
    return value - sigma * solve(z), value - sigma * solve(-z)


def skewed_logs(n: int, seed: int) -> dict[str, np.ndarray]:
    """Per-user sums of lognormal weights (heavy right tail) and 10% clicks."""
    rng = np.random.default_rng(seed)
    imps = 1 + rng.poisson(3, n).astype(float)
    w = rng.lognormal(-0.5, 1.2, n) * imps
    c = rng.binomial(imps.astype(int), 0.1).astype(float)
    wc = w * c / imps * rng.uniform(0.5, 1.5, n)
    return {"wc": wc, "w": w, "n": imps, "c": c}


@pytest.mark.parametrize("estimator", ["snips", "ips"])
def test_hall_interval_of_a_ratio_matches_numpy(estimator: str) -> None:
    x = skewed_logs(500, 7)
    s = user_sums(x)
    num, den = ("wc", "w") if estimator == "snips" else ("wc", "n")
    ctr = log_linear(s, {num: 1, den: -1}, 0.05)
    assert ctr.value is not None and ctr.se is not None
    # Independently: the ratio, its influence values and their standard error.
    r = x[num].sum() / x[den].sum()
    psi = (x[num] - r * x[den]) / x[den].mean()
    se = psi.std(ddof=1) / np.sqrt(len(psi))
    d = psi - psi.mean()
    gamma = (d**3).mean() / (d**2).mean() ** 1.5
    assert ctr.value == pytest.approx(r, rel=1e-12)
    assert ctr.se == pytest.approx(se, rel=1e-9)
    assert ctr.skewness == pytest.approx(gamma, rel=1e-6)
    assert gamma > 1.0  # skewed enough for the correction to matter
    hall = skew_corrected(ctr, s.users, 0.05)
    assert hall is not None and hall.ci is not None and hall.kind == "skew_corrected"
    lo, hi = hall_by_bisection(psi, r, se)
    assert hall.ci == pytest.approx((lo, hi), rel=1e-9)
    # Right-skewed influence values: the interval reaches further above than below.
    assert hi - r > r - lo
    assert (hall.value, hall.se) == (ctr.value, ctr.se)


def test_the_lift_interval_of_a_skewed_estimate_is_hall_on_its_influence_values() -> None:
    """snips's predicted lift, (Σwc/Σw)·(Σn/Σc) − 1, with Hall's interval from the
    same estimate the report reads once only the skewness fires."""
    x = skewed_logs(2000, 11)
    s = user_sums(x)
    e = estimate(s, "snips", 0.05)
    assert e.users is not None and e.users.reasons == ("skewed",)
    assert e.users.interval == "skew_corrected"
    assert (e.ctr.kind, e.predicted_lift.kind) == ("skew_corrected", "skew_corrected")
    m = {k: v.mean() for k, v in x.items()}
    f = m["wc"] / m["w"] * m["n"] / m["c"]
    psi = f * (x["wc"] / m["wc"] - x["w"] / m["w"] + x["n"] / m["n"] - x["c"] / m["c"])
    se = psi.std(ddof=1) / np.sqrt(len(psi))
    assert e.predicted_lift.ci == pytest.approx(hall_by_bisection(psi, f - 1, se), rel=1e-9)
    # Without the sums of three products (an older store): the normal interval, unreliable.
    plain = Sums(s.users, {k: v for k, v in s.sums.items() if "*" not in k}, s.products)
    old = estimate(plain, "snips", 0.05)
    assert old.users is not None and old.users.interval == "unreliable"
    assert old.ctr.kind == "normal" and old.ctr.skewness is None
    assert old.ctr.value is not None and old.ctr.se is not None
    assert old.ctr.ci == pytest.approx(
        (old.ctr.value - Z * old.ctr.se, old.ctr.value + Z * old.ctr.se)
    )


def test_symmetric_data_give_the_normal_interval() -> None:
    """Values symmetric about their mean have skewness 0 (to rounding): Hall's
    interval is then the normal one within 1e-9, and it approaches it linearly
    as the skewness goes to 0."""
    rng = np.random.default_rng(3)
    half = rng.normal(5.0, 1.0, 400)
    y = np.concatenate([half, 10.0 - half])  # mirrored about 5
    s = user_sums({"y": y, "n": np.ones_like(y)})
    iv = log_linear(s, {"y": 1, "n": -1}, 0.05)
    assert iv.value is not None and iv.se is not None and iv.skewness is not None
    assert abs(iv.skewness) < 1e-9
    hall = skew_corrected(iv, s.users, 0.05)
    assert hall is not None and hall.ci is not None
    normal = (iv.value - Z * iv.se, iv.value + Z * iv.se)
    assert hall.ci == pytest.approx(normal, abs=1e-9)
    gaps = []
    for gamma in (1e-2, 1e-4, 1e-6, 1e-8, 0.0):
        lo, hi = hall_interval(5.0, 0.1, gamma, 800, 0.05)
        gaps.append(max(abs(lo - (5.0 - Z * 0.1)), abs(hi - (5.0 + Z * 0.1))))
    assert gaps[-1] < 1e-12 and gaps[-2] < 1e-9
    for a, b in itertools.pairwise(gaps[:-1]):
        assert b == pytest.approx(a / 100, rel=0.05)


def test_hall_is_monotone_and_finite_at_large_skewness() -> None:
    """At a skewness large enough that 1 + γx < 0 the cube root stays real."""
    for gamma in (40.0, -40.0, 3.0):
        lo, hi = hall_interval(1.0, 0.5, gamma, 30, 0.05)
        assert np.isfinite(lo) and np.isfinite(hi) and lo < 1.0 < hi
        assert (lo, hi) == pytest.approx(bisected(1.0, 0.5, gamma, 30, 0.05), rel=1e-9)


def test_values_too_alike_for_their_skewness_keep_the_normal_interval() -> None:
    """Per-user values that differ only far below their size (1000 + 1e-6 × a
    skewed noise) leave their spread to rounding in the raw sums the store
    returns: no skewness is read from them (it would be noise, and once put an
    interval beside its estimate), and the interval is the normal one, around the
    value. A skewness beyond √n, which no n values have, is refused likewise."""
    rng = np.random.default_rng(8)
    y = 1000.0 + 1e-6 * rng.lognormal(0.0, 1.5, 500)
    s = user_sums({"y": y, "n": np.ones_like(y)})
    iv = log_linear(s, {"y": 1, "n": -1}, 0.05)
    assert iv.value is not None and iv.se is not None and iv.ci is not None
    assert iv.skewness is None and skew_corrected(iv, s.users, 0.05) is None
    assert iv.ci[0] <= iv.value <= iv.ci[1]
    # sums whose third moment claims a skewness of 40 over 9 users (at most (n−2)/√(n−1) = 2.5)
    fake = Sums(
        9,
        {"y": 9.0, "n": 9.0, triple("y", "y", "y"): 9.0 + 40.0 * 8.0**1.5 / 9.0**0.5}
        | {triple(*t): 9.0 for t in triples(["y", "n"]) if t != ("y", "y", "y")},
        {("y", "y"): 17.0, ("n", "n"): 9.0, ("n", "y"): 9.0},
    )
    assert log_linear(fake, {"y": 1, "n": -1}, 0.05).skewness is None
