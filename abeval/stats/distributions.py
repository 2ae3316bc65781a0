"""The few distribution functions the statistics layer needs, on ``scipy.special``.

``scipy.stats`` takes about a second to import; these thin wrappers over the
special functions give the same values (the tests compare them with
``scipy.stats``) at a fraction of the start-up cost of every ``abeval report``.
``scipy.special`` itself (with numpy, about 0.3 s) is imported on the first call,
so that a command that computes no statistic does not load it.
"""

from __future__ import annotations

import math
from typing import Any


def _special() -> Any:
    """``scipy.special``, imported on first use."""
    from scipy import special

    return special


def norm_cdf(x: float) -> float:
    """Φ(x)."""
    return float(_special().ndtr(x))


def norm_sf(x: float, loc: float = 0.0, scale: float = 1.0) -> float:
    """1 − Φ((x − loc) / scale)."""
    return float(_special().ndtr(-(x - loc) / scale))


def norm_isf(q: float) -> float:
    """z with 1 − Φ(z) = q."""
    return float(-_special().ndtri(q))


def norm_pdf(x: float) -> float:
    """φ(x)."""
    return math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def t_sf(x: float, dof: float) -> float:
    """P(T > x) for Student's t with ``dof`` degrees of freedom."""
    return float(_special().stdtr(dof, -x))


def t_isf(q: float, dof: float) -> float:
    """t with P(T > t) = q."""
    return float(-_special().stdtrit(dof, q))


def chi2_sf(x: float, dof: float) -> float:
    """P(X > x) for χ² with ``dof`` degrees of freedom."""
    return float(_special().chdtrc(dof, x))


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X ≤ k) for X ~ Binomial(n, p)."""
    return float(_special().bdtr(k, n, p))
