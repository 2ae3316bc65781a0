"""Results as tables: the rows of ``.to_frame()`` (a pandas DataFrame) and of the
compact table a notebook shows (``_repr_html_``).

Every row is read from the result's JSON document (``to_dict()``, what
``--format json`` writes), so that a cell is the JSON's number. Columns are named
as the JSON keys; a two-number interval ``[low, high]`` under key ``K`` becomes the
columns ``K_low`` and ``K_high``; a nested value is named by its path
(``control.value``, ``events.click``). pandas is an optional extra
(``pip install 'abeval[pandas]'``): only :func:`frame` imports it.

>>> experiment_rows([{"experiment": "e", "arms": [{"arm": "a", "users": 3, "events": {}}]}])
[{'experiment': 'e', 'arm': 'a', 'users': 3}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from abeval.errors import AbevalError

Row = dict[str, Any]


def frame(rows: Sequence[Row], columns: Sequence[str] = ()) -> Any:
    """A pandas DataFrame of ``rows`` (``columns`` first, in that order, when the
    rows are empty too); an :class:`AbevalError` when pandas is not installed."""
    try:
        import pandas as pd
    except ImportError:
        raise AbevalError("to_frame() needs pandas: pip install 'abeval[pandas]'") from None
    names = list(dict.fromkeys([*columns, *(k for r in rows for k in r)]))
    return pd.DataFrame.from_records(list(rows), columns=names)


def flat(document: Mapping[str, Any]) -> Row:
    """The scalar entries of one JSON object, intervals split in two
    (``spearman_ci`` → ``spearman_ci_low``, ``spearman_ci_high``, both None when the
    interval is); other lists and nested objects are left out.

    >>> flat({"rho": 0.5, "rho_ci": [0.1, 0.8], "slope_ci": None, "pairs": [1, 2, 3]})
    {'rho': 0.5, 'rho_ci_low': 0.1, 'rho_ci_high': 0.8, 'slope_ci_low': None, 'slope_ci_high': None}
    """
    row: Row = {}
    for key, value in document.items():
        if isinstance(value, list) and _interval(value):
            row[f"{key}_low"], row[f"{key}_high"] = value
        elif value is None and _interval_key(key):
            row[f"{key}_low"] = row[f"{key}_high"] = None
        elif not isinstance(value, list | dict):
            row[key] = value
    return row


def _interval_key(key: str) -> bool:
    """Whether ``key`` names an interval (None when undefined)."""
    return key == "interval" or key.endswith(("_ci", "_interval"))


def _interval(value: list[Any]) -> bool:
    return len(value) == 2 and all(isinstance(v, int | float) for v in value)


def interleaving_rows(section: Mapping[str, Any]) -> list[Row]:
    """One row per credit (clicks, then purchases where the experiment has them) of
    an interleaved report's ``interleaving`` object: Δ_AB, its interval, the p-value
    and the counts, with the two teams."""
    credits = [("click", section), ("purchase", section["by_purchases"])]
    keys = ("delta", "p_value", "wins", "losses", "ties", "requests", "users")
    rows = []
    for credit, r in credits:
        if r is None:
            continue
        low, high = r["interval"] if r["interval"] is not None else (None, None)
        rows.append(
            {"credit": credit, "team_a": section["team_a"], "team_b": section["team_b"]}
            | {k: r[k] for k in keys}
            | {"interval_low": low, "interval_high": high, "status": r["status"]}
        )
    return rows


def report_rows(document: Mapping[str, Any]) -> list[Row]:
    """One row per metric × treatment arm of a report's JSON: the arms' values and,
    under the metric's ``basis`` (the decision's, for every metric), the relative
    effect, its interval (the adjusted one once adjusted), the p-values and
    ``significant``; the decision's reading (``direction``) where the decision reads
    the metric, and the Bayesian ``chance_to_win``."""
    judged = {
        (d["arm"], i["metric"]): i
        for d in document["decisions"]
        for i in (*d["primaries"], *d["guardrails"])
    }
    rows = []
    for m in document["metrics"]:
        rel = m["comparison"]["relative"]
        read = judged.get((m["arm"], m["metric"]))
        interval = m["interval"]
        rows.append(
            {
                "metric": m["metric"],
                "label": m["label"],
                "role": m["role"],
                "arm": m["arm"],
                "control.value": m["control"]["value"],
                "treatment.value": m["treatment"]["value"],
                "relative_effect": m["lift"],
                "interval_low": None if interval is None else interval[0],
                "interval_high": None if interval is None else interval[1],
                "basis": m["basis"],
                "direction": None if read is None else read["direction"],
                "p_value": rel["p_value"],
                "p_adjusted": rel["p_adjusted"],
                "significant": m["significant"],
                "chance_to_win": m["bayesian"]["relative"]["chance_to_win"],
                "status": m["status"],
            }
        )
    return rows


def evaluation_rows(document: Mapping[str, Any]) -> list[Row]:
    """One row per model × metric of an evaluation's JSON: the value and its
    standard error, and against the baseline (none for the baseline itself) the
    paired ``difference``, its ``ci_low``/``ci_high`` and the Holm-adjusted p-values."""
    paired = {(c["model"], c["metric"]): c for c in document["comparisons"]}
    rows = []
    for m in document["metrics"]:
        c = paired.get((m["group"], m["metric"]), {})
        rows.append(
            {
                "model": m["group"],
                "metric": m["metric"],
                "value": m["value"],
                "std_error": m["std_error"],
                "users": m["users"],
                "lists": m["lists"],
                "status": m["status"],
                "baseline": c.get("baseline"),
                "difference": c.get("difference"),
                "ci_low": c.get("ci_low"),
                "ci_high": c.get("ci_high"),
                "p_t_holm": c.get("p_t_holm"),
                "p_randomization_holm": c.get("p_randomization_holm"),
            }
        )
    return rows


def per_user_frame(path: str | None) -> Any:
    """The per-user values an evaluation wrote (one row per model × user, a column
    per metric), read back from its ``per_user`` file."""
    if path is None:
        raise AbevalError(
            "this evaluation kept no per-user values: evaluate with per_user='FILE.parquet'"
        )
    frame(())  # pandas or the one-line error
    import pandas as pd

    if Path(path).suffix in (".parquet", ".pq"):
        return pd.read_parquet(path)
    return pd.read_csv(path, dtype={"user_id": str, "model": str})


def board_rows(document: Mapping[str, Any]) -> list[Row]:
    """One row per offline signal × online metric of an agreement board's JSON
    (its ``summary``, ranked best first)."""
    return [flat(s) for s in document["summary"]]


def forecast_rows(document: Mapping[str, Any]) -> list[Row]:
    """One row per online metric of a forecast's JSON (its ``forecasts``), with the
    assurance's ``status`` as ``assurance.status``."""
    rows = []
    for f in document["forecasts"]:
        row = flat(f)
        assurance = f.get("assurance") or {}
        row["assurance.status"] = assurance.get("status")
        rows.append(row)
    return rows


def experiment_rows(documents: Sequence[Mapping[str, Any]]) -> list[Row]:
    """One row per experiment × arm of a store's list of experiments (each
    experiment's JSON), the arm's events counted by type (``events.click``)."""
    rows = []
    for e in documents:
        head = {k: v for k, v in e.items() if not isinstance(v, list | dict)}
        for arm in e["arms"]:
            events = {f"events.{t}": n for t, n in arm.get("events", {}).items()}
            rows.append(
                {"experiment": e["experiment"], "arm": arm["arm"]}
                | {
                    "users": arm["users"],
                    **events,
                    **{k: v for k, v in head.items() if k != "experiment"},
                }
            )
    return rows
