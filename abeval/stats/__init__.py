"""The statistics layer: per-arm sufficient statistics in, frozen results out.

Pure functions, no SQL and no I/O. Conventions follow GrowthBook's gbstats
where both define a thing (docs/metrics.md#comparing-arms), checked against
``tests/stats/data/gbstats_reference.json``. Degenerate inputs never raise and never give NaN:
the result carries a ``status`` and a ``message`` and ``None`` where a number
is not defined.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from abeval.stats.bayesian import (
        NormalPrior,
        compare_bayesian,
        posterior,
    )
    from abeval.stats.cuped import (
        cuped_theta,
    )
    from abeval.stats.fieller import (
        FiellerInterval,
        fieller_interval,
    )
    from abeval.stats.frequentist import (
        compare,
        confidence_interval,
        critical_value,
        p_value,
    )
    from abeval.stats.interleaving import (
        InterleavingResult,
        InterleavingStats,
        compare_interleaved,
    )
    from abeval.stats.moments import (
        EffectMoments,
        effect_moments,
    )
    from abeval.stats.multiple import (
        adjust_comparisons,
        adjust_pvalues,
        adjusted_alphas,
    )
    from abeval.stats.paired import (
        PairedComparison,
        adjust_holm,
        paired_comparison,
        sign_flip_p_value,
    )
    from abeval.stats.power import (
        detectable_effect,
        minimum_detectable_effect,
        power_of_test,
        required_users,
    )
    from abeval.stats.results import (
        BayesianResult,
        Comparison,
        FiellerTerms,
        Lift,
        Posterior,
        PowerResult,
        RelativeInterval,
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
    from abeval.stats.srm import (
        DEFAULT_SRM_THRESHOLD,
        srm_test,
    )
    from abeval.stats.sufficient import (
        ArmStats,
        CupedStats,
        MeanStats,
        ProportionStats,
        RatioCupedStats,
        RatioStats,
    )

# name -> module that defines it; loaded on first use (PEP 562) so that importing
# a light part such as abeval.stats.sufficient does not import scipy.
_LAZY = {
    "ArmStats": "abeval.stats.sufficient",
    "BayesianResult": "abeval.stats.results",
    "Comparison": "abeval.stats.results",
    "CupedStats": "abeval.stats.sufficient",
    "DEFAULT_SRM_THRESHOLD": "abeval.stats.srm",
    "DEFAULT_TUNING_N": "abeval.stats.sequential",
    "EffectMoments": "abeval.stats.moments",
    "FiellerInterval": "abeval.stats.fieller",
    "FiellerTerms": "abeval.stats.results",
    "InterleavingResult": "abeval.stats.interleaving",
    "InterleavingStats": "abeval.stats.interleaving",
    "Lift": "abeval.stats.results",
    "MeanStats": "abeval.stats.sufficient",
    "NormalPrior": "abeval.stats.bayesian",
    "PairedComparison": "abeval.stats.paired",
    "Posterior": "abeval.stats.results",
    "PowerResult": "abeval.stats.results",
    "ProportionStats": "abeval.stats.sufficient",
    "RatioCupedStats": "abeval.stats.sufficient",
    "RatioStats": "abeval.stats.sufficient",
    "RelativeInterval": "abeval.stats.results",
    "SrmResult": "abeval.stats.results",
    "Status": "abeval.stats.results",
    "adjust_comparisons": "abeval.stats.multiple",
    "adjust_holm": "abeval.stats.paired",
    "adjust_pvalues": "abeval.stats.multiple",
    "adjusted_alphas": "abeval.stats.multiple",
    "compare": "abeval.stats.frequentist",
    "compare_bayesian": "abeval.stats.bayesian",
    "compare_interleaved": "abeval.stats.interleaving",
    "confidence_interval": "abeval.stats.frequentist",
    "critical_value": "abeval.stats.frequentist",
    "cuped_theta": "abeval.stats.cuped",
    "detectable_effect": "abeval.stats.power",
    "effect_moments": "abeval.stats.moments",
    "fieller_interval": "abeval.stats.fieller",
    "minimum_detectable_effect": "abeval.stats.power",
    "paired_comparison": "abeval.stats.paired",
    "p_value": "abeval.stats.frequentist",
    "posterior": "abeval.stats.bayesian",
    "power_of_test": "abeval.stats.power",
    "required_users": "abeval.stats.power",
    "sequential_critical_value": "abeval.stats.sequential",
    "sequential_halfwidth": "abeval.stats.sequential",
    "sequential_p_value": "abeval.stats.sequential",
    "sequential_rho": "abeval.stats.sequential",
    "sign_flip_p_value": "abeval.stats.paired",
    "srm_test": "abeval.stats.srm",
}

__all__ = [
    "DEFAULT_SRM_THRESHOLD",
    "DEFAULT_TUNING_N",
    "ArmStats",
    "BayesianResult",
    "Comparison",
    "CupedStats",
    "EffectMoments",
    "FiellerInterval",
    "FiellerTerms",
    "InterleavingResult",
    "InterleavingStats",
    "Lift",
    "MeanStats",
    "NormalPrior",
    "PairedComparison",
    "Posterior",
    "PowerResult",
    "ProportionStats",
    "RatioCupedStats",
    "RatioStats",
    "RelativeInterval",
    "SrmResult",
    "Status",
    "adjust_comparisons",
    "adjust_holm",
    "adjust_pvalues",
    "adjusted_alphas",
    "compare",
    "compare_bayesian",
    "compare_interleaved",
    "confidence_interval",
    "critical_value",
    "cuped_theta",
    "detectable_effect",
    "effect_moments",
    "fieller_interval",
    "minimum_detectable_effect",
    "p_value",
    "paired_comparison",
    "posterior",
    "power_of_test",
    "required_users",
    "sequential_critical_value",
    "sequential_halfwidth",
    "sequential_p_value",
    "sequential_rho",
    "sign_flip_p_value",
    "srm_test",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'abeval.stats' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
