"""The few distribution functions the statistics layer needs, on ``scipy.special``.

``scipy.stats`` takes about a second to import; these thin wrappers over the
special functions give the same values (the tests compare them with
``scipy.stats``) at a fraction of the start-up cost of every ``abeval report``.
"""

from __future__ import annotations

import math

from scipy import special


def norm_cdf(x: float) -> float:
    """Φ(x)."""
    return float(special.ndtr(x))


def norm_sf(x: float, loc: float = 0.0, scale: float = 1.0) -> float:
    """1 − Φ((x − loc) / scale)."""
    return float(special.ndtr(-(x - loc) / scale))


def norm_isf(q: float) -> float:
    """z with 1 − Φ(z) = q."""
    return float(-special.ndtri(q))


def norm_pdf(x: float) -> float:
    """φ(x)."""
    return math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def t_sf(x: float, dof: float) -> float:
    """P(T > x) for Student's t with ``dof`` degrees of freedom."""
    return float(special.stdtr(dof, -x))


def t_isf(q: float, dof: float) -> float:
    """t with P(T > t) = q."""
    return float(-special.stdtrit(dof, q))


def chi2_sf(x: float, dof: float) -> float:
    """P(X > x) for χ² with ``dof`` degrees of freedom."""
    return float(special.chdtrc(dof, x))
