"""Outlier caps (``--cap``, docs/metrics.md#outlier-capping): the pooled
quantile of a per-user variable over all analysed users and, per arm, the users
above it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from abeval.store.sql.online_pass import user_metrics_cte
from abeval.store.sql.online_variables import BUILTIN, VariableSet, as_float
from abeval.store.sql.parts import Cte, With

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


@dataclass(frozen=True)
class CapValue:
    """A per-user variable capped at the ``quantile`` of all analysed users (both
    arms pooled): the ``cap`` (None when no user has a value) and, per arm, the
    users whose value was above it."""

    variable: str
    quantile: float
    cap: float | None
    users_capped: dict[str, int]
    #: Per arm, the sum of the capped values, Σ min(xᵢ, cap) (what the capped
    #: metric sums; with ``users_capped``, the share of a lift the cap keeps).
    capped_sums: dict[str, float] = field(default_factory=dict)


def cap_values_sql(
    variable: str, quantile: float, base: With, variables: VariableSet = BUILTIN
) -> str:
    """The pooled ``quantile`` of the per-user ``variable`` (linear interpolation,
    ``percentile_cont``: the same on DuckDB and PostgreSQL) and, per arm, how many
    users lie above it and the sum of the capped values."""
    if variable not in {name for name, _ in variables.columns}:
        raise ValueError(f"cannot cap {variable!r}")
    q = float(quantile)
    cap = Cte(
        "cap",
        f"SELECT percentile_cont({q!r}) WITHIN GROUP (ORDER BY "
        f"CAST({variable} AS DOUBLE PRECISION)) AS value FROM user_metrics",
        ("user_metrics",),
    )
    return base.then(*user_metrics_cte(variables=variables), cap).sql(
        "SELECT u.arm, MIN(c.value) AS cap, "
        f"SUM(CASE WHEN u.{variable} > c.value THEN 1 ELSE 0 END) AS above, "
        f"SUM(CASE WHEN u.{variable} > c.value THEN c.value "
        f"ELSE CAST(u.{variable} AS DOUBLE PRECISION) END) AS capped_sum "
        "FROM user_metrics u CROSS JOIN cap c GROUP BY u.arm ORDER BY u.arm"
    )


def cap_values(
    conn: Connection,
    experiment: str,
    quantiles: Mapping[str, float],
    base: With,
    variables: VariableSet = BUILTIN,
) -> dict[str, CapValue]:
    """Per variable to cap: its cap (docs/metrics.md#outlier-capping)."""
    from sqlalchemy import text

    out = {}
    for variable, quantile in quantiles.items():
        rows = conn.execute(
            text(cap_values_sql(variable, quantile, base, variables)), {"experiment": experiment}
        ).fetchall()
        cap = as_float(rows[0].cap) if rows and rows[0].cap is not None else None
        out[variable] = CapValue(
            variable=variable,
            quantile=quantile,
            cap=cap,
            users_capped={str(r.arm): int(r.above or 0) for r in rows},
            capped_sums={str(r.arm): as_float(r.capped_sum or 0.0) for r in rows},
        )
    return out
