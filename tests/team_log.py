"""A small log of add_to_cart and play events in two arms, and a metrics file over
it: the team-defined metrics tests (DuckDB and PostgreSQL) share them."""

from __future__ import annotations

import numpy as np

EXP = "carts"
START = np.datetime64("2024-05-10T00:00:00")
METRICS_TOML = """
[cart_rate]
kind = "proportion"
event = "add_to_cart"

[carts]
kind = "mean"
event = "add_to_cart"

[cart_value]
kind = "mean"
event = "add_to_cart"
value = "sum"

[value_per_cart]
kind = "ratio"
numerator = { event = "add_to_cart", value = "sum" }
denominator = { event = "add_to_cart" }

[mobile_plays]
kind = "mean"
event = "play"
where = { device = "mobile" }
lower_is_better = true

[capped_value]
kind = "mean"
event = "add_to_cart"
value = "sum"
cap = 0.9
"""


def team_log(seed: int = 11) -> list[dict[str, str]]:
    """Exposed users in two arms with add_to_cart (value) and play events, some before
    their exposure (pre-period, not counted after it), a device per event, and one
    user never exposed (not analysed)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, str]] = []

    def row(arm: str, user: str, ts: np.datetime64, kind: str, value: str, device: str) -> None:
        rows.append(
            {
                "experiment": EXP,
                "arm": arm,
                "user_id": user,
                "ts": str(ts),
                "event_type": kind,
                "value": value,
                "device": device,
            }
        )

    for i in range(60):
        arm = "control" if i % 2 == 0 else "treatment"
        user = f"u{i}"
        exposed = START + np.timedelta64(int(rng.integers(0, 48 * 60)), "m")
        row(arm, user, exposed, "exposure", "", "mobile" if i % 3 else "desktop")
        for _ in range(int(rng.poisson(1.2 if arm == "control" else 1.6))):
            ts = exposed + np.timedelta64(int(rng.integers(1, 3000)), "m")
            row(arm, user, ts, "add_to_cart", str(int(rng.integers(1, 90))), "mobile")
        for _ in range(int(rng.poisson(0.7))):  # before exposure: the pre-period
            ts = exposed - np.timedelta64(int(rng.integers(60, 5000)), "m")
            row(arm, user, ts, "add_to_cart", str(int(rng.integers(1, 90))), "mobile")
        for _ in range(int(rng.poisson(2.0))):
            ts = exposed + np.timedelta64(int(rng.integers(1, 3000)), "m")
            device = "mobile" if rng.random() < 0.6 else "desktop"
            row(arm, user, ts, "play", str(int(rng.integers(1, 600))), device)
    row("treatment", "ghost", START, "add_to_cart", "50", "mobile")  # no exposure
    return rows
