"""The statistics layer: per-arm sufficient statistics in, frozen results out.

Pure functions, no SQL and no I/O. Conventions follow GrowthBook's gbstats
where both define a thing (DESIGN.md section 4), checked against
``reference/gbstats.json``. Degenerate inputs never raise and never give NaN:
the result carries a ``status`` and a ``message`` and ``None`` where a number
is not defined.
"""

from abeval.stats.bayesian import NormalPrior, compare_bayesian, posterior
from abeval.stats.cuped import cuped_theta
from abeval.stats.frequentist import compare, confidence_interval, p_value
from abeval.stats.moments import EffectMoments, effect_moments
from abeval.stats.multiple import adjust_comparisons, adjust_pvalues, adjusted_alphas
from abeval.stats.power import (
    detectable_effect,
    minimum_detectable_effect,
    power_of_test,
    required_users,
)
from abeval.stats.results import (
    BayesianResult,
    Comparison,
    Lift,
    Posterior,
    PowerResult,
    SrmResult,
    Status,
)
from abeval.stats.sequential import (
    DEFAULT_TUNING_N,
    sequential_critical_value,
    sequential_halfwidth,
    sequential_p_value,
    sequential_rho,
)
from abeval.stats.srm import DEFAULT_SRM_THRESHOLD, srm_test
from abeval.stats.sufficient import (
    ArmStats,
    CupedStats,
    MeanStats,
    ProportionStats,
    RatioCupedStats,
    RatioStats,
)

__all__ = [
    "DEFAULT_SRM_THRESHOLD",
    "DEFAULT_TUNING_N",
    "ArmStats",
    "BayesianResult",
    "Comparison",
    "CupedStats",
    "EffectMoments",
    "Lift",
    "MeanStats",
    "NormalPrior",
    "Posterior",
    "PowerResult",
    "ProportionStats",
    "RatioCupedStats",
    "RatioStats",
    "SrmResult",
    "Status",
    "adjust_comparisons",
    "adjust_pvalues",
    "adjusted_alphas",
    "compare",
    "compare_bayesian",
    "confidence_interval",
    "cuped_theta",
    "detectable_effect",
    "effect_moments",
    "minimum_detectable_effect",
    "p_value",
    "posterior",
    "power_of_test",
    "required_users",
    "sequential_critical_value",
    "sequential_halfwidth",
    "sequential_p_value",
    "sequential_rho",
    "srm_test",
]
