"""``abeval evaluate``: offline evaluation of recommendation files against held-out truth.

Every input file (CSV, CSV.gz, Parquet, JSONL) is read by DuckDB itself
(``read_csv``, ``read_parquet``, ``read_json``) into an in-memory database; the
metrics are computed there by the same SQL kernels as log replay
(:mod:`abeval.metrics.kernel`, :mod:`abeval.metrics.beyond`). No user's list
passes through Python; only per-user differences come back for the paired
model comparison.

Conventions (METRICS.md):

- a recommendation file has ``user_id``, ``item_id`` and ``rank`` or ``score``;
  ranks are recomputed 1..n per user by ``rank`` ascending, else ``score``
  descending, ties broken by item id descending (trec_eval);
- the truth file has ``user_id``, ``item_id`` and optionally ``relevance`` or
  ``rating`` (the grade; 1 when absent); an item is relevant when its grade is
  > 0, or ≥ ``min_relevance`` when given;
- an item twice in one user's list is an error, or (``duplicates=dedupe``)
  counted once at its best position with a warning;
- users in a recommendation file without any truth row are counted
  (``users_without_truth``) and not evaluated; truth users without a list are
  counted (``truth_users_without_recommendations``) and, with
  ``missing=zero``, score 0 in every ranking metric (trec_eval ``-c``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abeval.errors import AbevalError, InputError
from abeval.metrics import (
    BeyondInputs,
    Conventions,
    MetricResult,
    MetricSpec,
    beyond_query,
    default_ranking_metrics,
    parse_metrics,
    ranking_query,
)
from abeval.metrics.results import finite

if TYPE_CHECKING:
    import duckdb
    import numpy as np

TIE_RULE = "rank ascending, else score descending; ties by item id descending (trec_eval)"
MISSING = ("skip", "zero")

_NUMERIC = re.compile(
    r"^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|"
    r"FLOAT|REAL|DOUBLE|DECIMAL.*|INT.*)$",
    re.I,
)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class FileSummary:
    """What was read from one input file."""

    role: str  # recommendations | predictions | truth | items | history
    path: str
    name: str  # the model name (recommendations, predictions), else the role
    rows: int
    users: int = 0
    duplicates_removed: int = 0
    columns: Mapping[str, str] = field(default_factory=dict)  # abeval name -> file column

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "path": self.path,
            "name": self.name,
            "rows": self.rows,
            "users": self.users,
            "duplicates_removed": self.duplicates_removed,
            "columns": dict(self.columns),
        }


@dataclass(frozen=True)
class Coverage:
    """How the users of one model's file and of the truth file overlap."""

    model: str
    users_in_recommendations: int
    users_evaluated: int
    users_without_truth: int
    truth_users: int
    truth_users_without_recommendations: int
    truth_users_without_relevant: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Comparison:
    """One model against the first (the baseline) on one metric, paired over users."""

    metric: str
    model: str
    baseline: str
    users: int  # users with a value under both models
    baseline_mean: float | None
    model_mean: float | None
    difference: float | None  # mean over users of model − baseline
    ci_low: float | None
    ci_high: float | None
    t_statistic: float | None
    p_t: float | None
    p_t_holm: float | None
    p_randomization: float | None
    p_randomization_holm: float | None
    wins: int
    ties: int
    losses: int
    status: str = "ok"
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in self.__dict__.items():
            out[key] = finite(value) if isinstance(value, float) else value
        return out


@dataclass(frozen=True)
class RatingResult:
    """RMSE or MAE of one predictions file against the truth ratings."""

    metric: str
    model: str
    value: float | None
    pairs_predicted: int
    truth_pairs: int
    predictions_without_truth: int
    status: str = "ok"
    message: str = ""

    @property
    def coverage(self) -> float | None:
        return self.pairs_predicted / self.truth_pairs if self.truth_pairs else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "model": self.model,
            "value": finite(self.value),
            "pairs_predicted": self.pairs_predicted,
            "truth_pairs": self.truth_pairs,
            "coverage": finite(self.coverage),
            "predictions_without_truth": self.predictions_without_truth,
            "status": self.status,
            **({"message": self.message} if self.message else {}),
        }


@dataclass(frozen=True)
class EvaluationResult:
    """Everything ``abeval evaluate`` computed: the one object its presenters read."""

    models: tuple[str, ...]
    files: tuple[FileSummary, ...]
    coverage: tuple[Coverage, ...]
    metrics: tuple[MetricResult, ...]
    comparisons: tuple[Comparison, ...]
    ratings: tuple[RatingResult, ...]
    conventions: Mapping[str, str]
    warnings: tuple[str, ...] = ()
    per_user_path: str | None = None

    def metric(self, name: str, model: str | None = None) -> MetricResult:
        """The result of metric ``name`` (a label such as ``ndcg@10``) for ``model``."""
        model = model or self.models[0]
        for m in self.metrics:
            if m.metric == name and m.group == model:
                return m
        raise KeyError((name, model))

    def to_dict(self) -> dict[str, Any]:
        return {
            "models": list(self.models),
            "files": [f.to_dict() for f in self.files],
            "coverage": [c.to_dict() for c in self.coverage],
            "conventions": dict(self.conventions),
            "metrics": [m.to_dict() for m in self.metrics],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "ratings": [r.to_dict() for r in self.ratings],
            "warnings": list(self.warnings),
            "per_user_path": self.per_user_path,
        }

    def render_text(self) -> str:
        return render_text(self)


# --------------------------------------------------------------------------- file reading


def quote_ident(name: str) -> str:
    """A SQL identifier in double quotes (embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """A SQL string literal (embedded single quotes doubled)."""
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True)
class _Column:
    name: str  # the abeval name
    candidates: tuple[str, ...]  # accepted file column names, first found wins
    kind: str  # text | number | features
    required: bool = True


def _format(path: Path) -> str:
    name = path.name.lower()
    for suffix in (".gz", ".zst"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "json"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    raise InputError(
        f"{path}: unknown file type; name it .csv, .csv.gz, .parquet or .jsonl to say its format"
    )


def _reader(fmt: str, typed: bool = False) -> str:
    if fmt == "parquet":
        return "read_parquet(?)"
    if fmt == "json":
        return "read_json(?, format = 'auto')"
    return "read_csv(?, header = true, types = ?)" if typed else "read_csv(?, header = true)"


def _where(path: Path, fmt: str, row: int) -> str:
    """``FILE:LINE`` for CSV (header = line 1) and JSONL, ``FILE:row N`` for Parquet."""
    if fmt == "csv":
        return f"{path}:{row + 1}"
    if fmt == "json":
        return f"{path}:{row}"
    return f"{path}:row {row}"


class _Reader:
    """Loads input files into tables of an in-memory DuckDB, with one-line errors."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.rows: dict[str, int] = {}

    def _params(self, path: Path, fmt: str, types: Mapping[str, str] | None = None) -> list[Any]:
        return [str(path), dict(types or {})] if fmt == "csv" and types is not None else [str(path)]

    def describe(self, path: Path, fmt: str) -> list[tuple[str, str]]:
        try:
            rows = self.con.execute(
                f"DESCRIBE SELECT * FROM {_reader(fmt)}", self._params(path, fmt)
            ).fetchall()
        except Exception as exc:
            raise InputError(f"{path}: cannot read the file as {fmt}: {_first(exc)}") from None
        return [(str(r[0]), str(r[1])) for r in rows]

    def locate(self, path: Path, fmt: str, column: str, condition: str) -> tuple[int, Any] | None:
        """The first row (1-based) where ``condition`` over ``v`` (the column) holds."""
        self.con.execute("SET preserve_insertion_order = true")
        try:
            reader = _reader(fmt)
            params = self._params(path, fmt)
            if fmt == "csv":
                reader = "read_csv(?, header = true, all_varchar = true)"
            row = self.con.execute(
                f"SELECT rn, v FROM (SELECT ROW_NUMBER() OVER () AS rn, "
                f"{_text(quote_ident(column))} AS v FROM {reader}) x "
                f"WHERE {condition} ORDER BY rn LIMIT 1",
                params,
            ).fetchone()
        finally:
            self.con.execute("SET preserve_insertion_order = false")
        return None if row is None else (int(row[0]), row[1])

    def csv_reject(self, path: Path, types: Mapping[str, str]) -> tuple[int, str, str] | None:
        """Line, column and raw line of the first CSV value that does not convert."""
        self.con.execute("DROP TABLE IF EXISTS abeval_reject_probe")
        self.con.execute(
            "CREATE TEMP TABLE abeval_reject_probe AS SELECT * FROM "
            "read_csv(?, header = true, types = ?, store_rejects = true)",
            [str(path), dict(types)],
        )
        row = self.con.execute(
            "SELECT line, column_name, csv_line FROM reject_errors ORDER BY line LIMIT 1"
        ).fetchone()
        self.con.execute("DROP TABLE IF EXISTS abeval_reject_probe")
        return None if row is None else (int(row[0]), str(row[1]), str(row[2]))

    def load(
        self,
        path_text: str | Path,
        table: str,
        role: str,
        columns: Sequence[_Column],
        expected: str,
    ) -> dict[str, str]:
        """Create ``table`` from the file; returns abeval name → file column for the
        columns found. Raises InputError for a missing file, an empty file, missing
        columns, a non-numeric number, or a missing value."""
        path = Path(path_text)
        if not path.exists():
            raise InputError(f"{path}: no such {role} file; check the path")
        if path.is_dir():
            raise InputError(f"{path}: is a directory; give the {role} file")
        fmt = _format(path)
        if path.stat().st_size == 0:
            raise InputError(f"{path}: the file is empty; expected {expected}")
        found = self.describe(path, fmt)
        by_lower = {name.lower(): (name, typ) for name, typ in found}
        chosen: dict[str, tuple[str, str]] = {}
        for col in columns:
            for cand in col.candidates:
                if cand in by_lower:
                    chosen[col.name] = by_lower[cand]
                    break
        missing = [c for c in columns if c.required and c.name not in chosen]
        if missing:
            names = " or ".join(missing[0].candidates)
            have = ", ".join(name for name, _ in found) or "none"
            raise InputError(
                f"{path}: missing column {names}; expected {expected} (found: {have}); "
                "rename the columns in the header"
            )
        numeric = {
            c.name: chosen[c.name][0] for c in columns if c.kind == "number" and c.name in chosen
        }
        # Non-numeric typed columns in Parquet/JSON: find the first bad row up front.
        if fmt != "csv":
            for name, file_col in numeric.items():
                typ = chosen[name][1]
                if not _NUMERIC.match(typ):
                    bad = self.locate(
                        path, fmt, file_col, "v IS NOT NULL AND TRY_CAST(v AS DOUBLE) IS NULL"
                    )
                    if bad is not None:
                        raise _not_a_number(path, fmt, bad[0], file_col, bad[1])
        select: list[str] = []
        for col in columns:
            if col.name not in chosen:
                continue
            src = quote_ident(chosen[col.name][0])
            if col.kind == "number":
                typ = chosen[col.name][1]
                value = src if fmt == "csv" or _NUMERIC.match(typ) else _text(src)
                select.append(f"CAST({value} AS DOUBLE) AS {col.name}")
            elif col.kind == "features":
                select.append(f"{_features_sql(src, chosen[col.name][1])} AS {col.name}")
            else:
                select.append(f"CAST({src} AS VARCHAR) AS {col.name}")
        types = {file_col: "DOUBLE" for file_col in numeric.values()}
        typed = fmt == "csv" and bool(types)
        try:
            if fmt == "parquet":
                # Parquet is columnar and cheap to scan again: a view, not a copy.
                self.con.execute(
                    f"CREATE VIEW {table} AS SELECT {', '.join(select)} "
                    f"FROM read_parquet({quote_literal(str(path))})"
                )
            else:
                self.con.execute(
                    f"CREATE TABLE {table} AS SELECT {', '.join(select)} "
                    f"FROM {_reader(fmt, typed)}",
                    self._params(path, fmt, types if typed else None),
                )
        except Exception as exc:
            if fmt == "csv" and types:
                reject = self.csv_reject(path, types)
                if reject is not None:
                    line, column, raw = reject
                    value = _field(raw, column, found)
                    raise _not_a_number(path, "line", line, column, value) from None
            raise InputError(f"{path}: cannot read the file: {_first(exc)}") from None
        checked = [c for c in columns if c.name in chosen and c.kind != "features"]
        counts = self.con.execute(
            f"SELECT COUNT(*){''.join(f', COUNT({c.name})' for c in checked)} FROM {table}"
        ).fetchone()
        assert counts is not None
        rows = int(counts[0])
        if rows == 0:
            raise InputError(f"{path}: the file has no rows; expected {expected}")
        for col, present in zip(checked, counts[1:], strict=True):
            nulls = rows - int(present)
            if nulls:
                file_col = chosen[col.name][0]
                bad = self.locate(path, fmt, file_col, "v IS NULL")
                where = _where(path, fmt, bad[0]) if bad else str(path)
                raise InputError(
                    f"{where}:{file_col}: the value is missing ({nulls} rows without one); "
                    "fill it in or remove the rows"
                )
        self.rows[table] = rows
        return {name: file_col for name, (file_col, _) in chosen.items()}

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.con.execute(sql, list(params)).fetchone()
        return None if row is None else row[0]


def _text(src: str) -> str:
    """A value as text; a JSON string loses its quotes (``"4.5"`` → ``4.5``)."""
    return f"TRIM(CAST({src} AS VARCHAR), '\"')"


def _features_sql(src: str, typ: str) -> str:
    if typ.endswith("[]"):
        return f"CAST({src} AS DOUBLE[])"
    # A JSON array in text, such as "[0.1, 0.2]".
    return f"CAST(CAST({src} AS VARCHAR) AS DOUBLE[])"


def _field(raw: str, column: str, found: Sequence[tuple[str, str]]) -> str:
    names = [n for n, _ in found]
    parts = raw.split(",")
    if column in names and len(parts) == len(names):
        return parts[names.index(column)]
    return raw


def _not_a_number(path: Path, fmt: str, row: int, column: str, value: Any) -> InputError:
    where = f"{path}:{row}" if fmt == "line" else _where(path, fmt, row)
    return InputError(
        f"{where}:{column}: {str(value)!r} is not a number; "
        f"write a number in column {column} or remove the row"
    )


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --------------------------------------------------------------------------- evaluation

_RECS_EXPECTED = "columns user_id, item_id and rank or score, one row per recommended item"
_TRUTH_EXPECTED = "columns user_id, item_id and optionally relevance or rating"
_PRED_EXPECTED = "columns user_id, item_id and prediction"
_ITEMS_EXPECTED = "columns item_id and optionally category or features"
_HISTORY_EXPECTED = "columns user_id and item_id"


def _model_names(paths: Sequence[str | Path]) -> list[str]:
    names: list[str] = []
    for p in paths:
        stem = Path(p).name
        for suffix in (
            ".gz",
            ".zst",
            ".parquet",
            ".pq",
            ".csv",
            ".tsv",
            ".txt",
            ".jsonl",
            ".json",
            ".ndjson",
        ):
            if stem.lower().endswith(suffix):
                stem = stem[: -len(suffix)]
        names.append(stem or str(p))
    if len(set(names)) < len(names):
        names = [str(p) for p in paths]
    return names


def _rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    cols = [d[0] for d in cur.description or []]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def evaluate(
    truth: str | Path,
    recommendations: Sequence[str | Path] = (),
    *,
    predictions: Sequence[str | Path] = (),
    items: str | Path | None = None,
    history: str | Path | None = None,
    k: Sequence[int] = (5, 10),
    metrics: str | Sequence[str] | None = None,
    conventions: Conventions | None = None,
    missing: str = "skip",
    min_relevance: float | None = None,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
    per_user: str | Path | None = None,
    threads: int | None = None,
) -> EvaluationResult:
    """Evaluate recommendation (and rating prediction) files against a truth file.

    ``metrics`` is a comma-separated string or a list of names (``ndcg@10``,
    ``ap@5``, ``mrr``, ``coverage@10``, ``rmse``); by default precision, recall,
    AP, NDCG and hit rate at every ``k``, MRR, and RMSE/MAE when predictions are
    given. With two or more recommendation files every model after the first
    is compared with the first, paired over users.
    """
    import duckdb

    conventions = conventions or Conventions()
    if missing not in MISSING:
        raise AbevalError(f"unknown missing-recommendations rule {missing!r}; use skip or zero")
    if not recommendations and not predictions:
        raise AbevalError(
            "nothing to evaluate; give --recommendations FILE (or --predictions FILE)"
        )
    ks = sorted({int(x) for x in k})
    if any(x < 1 for x in ks):
        raise AbevalError("every cutoff in --k must be at least 1, as in --k 5,10")
    specs = _choose_metrics(metrics, ks, conventions, bool(recommendations), bool(predictions))
    ranking = [s for s in specs if s.kind == "ranking"]
    beyond = [s for s in specs if s.kind == "beyond"]
    rating = [s for s in specs if s.kind == "rating"]
    if (ranking or beyond) and not recommendations:
        raise AbevalError(
            f"{(ranking or beyond)[0].label} needs recommendations; give --recommendations FILE"
        )
    if rating and not predictions:
        raise AbevalError(f"{rating[0].label} needs rating predictions; give --predictions FILE")
    if any(s.name == "serendipity" for s in beyond) and history is None:
        raise AbevalError("serendipity needs the users' history; give --history FILE")

    con = duckdb.connect(":memory:")
    try:
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        con.execute("SET preserve_insertion_order = false")
        reader = _Reader(con)
        warnings: list[str] = []
        files: list[FileSummary] = []

        truth_cols = reader.load(
            truth,
            "t_raw",
            "truth",
            [
                _Column("user_id", ("user_id",), "text"),
                _Column("item_id", ("item_id",), "text"),
                _Column("grade", ("relevance", "rating"), "number", required=False),
            ],
            _TRUTH_EXPECTED,
        )
        truth_summary = _prepare_truth(
            con, Path(truth), truth_cols, conventions, min_relevance, warnings
        )
        files.append(truth_summary)

        models = _model_names(recommendations)
        model_rows: list[FileSummary] = []
        for i, path in enumerate(recommendations):
            cols = reader.load(
                path,
                f"rec_{i}",
                "recommendations",
                [
                    _Column("user_id", ("user_id",), "text"),
                    _Column("item_id", ("item_id",), "text"),
                    _Column("rank", ("rank",), "number", required=False),
                    _Column("score", ("score",), "number", required=False),
                ],
                _RECS_EXPECTED,
            )
            if "rank" not in cols and "score" not in cols:
                raise InputError(
                    f"{path}: missing column rank or score; expected {_RECS_EXPECTED}; "
                    "add a rank (1 = top) or a score (higher = better) column"
                )
            summary = _prepare_recommendations(
                con, i, Path(path), models[i], cols, conventions, warnings
            )
            model_rows.append(summary)
        files += model_rows

        pred_names = _model_names(predictions)
        for i, path in enumerate(predictions):
            cols = reader.load(
                path,
                f"pred_{i}",
                "predictions",
                [
                    _Column("user_id", ("user_id",), "text"),
                    _Column("item_id", ("item_id",), "text"),
                    _Column("prediction", ("prediction", "score"), "number"),
                ],
                _PRED_EXPECTED,
            )
            files.append(
                _prepare_predictions(con, i, Path(path), pred_names[i], cols, conventions, warnings)
            )

        if items is not None:
            cols = reader.load(
                items,
                "items_raw",
                "items",
                [
                    _Column("item_id", ("item_id",), "text"),
                    _Column("category", ("category",), "text", required=False),
                    _Column("features", ("features",), "features", required=False),
                ],
                _ITEMS_EXPECTED,
            )
            con.execute("CREATE TABLE items AS SELECT * FROM items_raw")
            files.append(
                FileSummary("items", str(items), "items", _count(con, "items"), columns=cols)
            )
        if history is not None:
            cols = reader.load(
                history,
                "history_raw",
                "history",
                [
                    _Column("user_id", ("user_id",), "text"),
                    _Column("item_id", ("item_id",), "text"),
                ],
                _HISTORY_EXPECTED,
            )
            con.execute("CREATE TABLE history AS SELECT DISTINCT user_id, item_id FROM history_raw")
            files.append(
                FileSummary(
                    "history", str(history), "history", _count(con, "history_raw"), columns=cols
                )
            )

        coverage: list[Coverage] = []
        results: list[MetricResult] = []
        comparisons: list[Comparison] = []
        extra = {"ties": TIE_RULE, "missing_recommendations": missing}
        if recommendations:
            _build_ranked(con, len(recommendations), ranking, beyond)
            coverage = _coverage(con, models)
            if ranking:
                query = ranking_query(ranking)
                con.execute(
                    f"CREATE TABLE per_user AS WITH ranked AS (SELECT * FROM ranked_all), "
                    f"judged AS (SELECT * FROM judged_all), {query.ctes} "
                    f"SELECT * FROM {query.user_relation}"
                )
                if missing == "zero":
                    _add_missing_users(con, query, len(recommendations))
                rows = _rows(con.execute(query.group_query("per_user")))
                names = {str(i): m for i, m in enumerate(models)}
                found = query.results(rows, extra_convention=extra)
                results += [replace(r, group=names[r.group]) for r in found]
                results = _fill_missing_groups(results, ranking, models, extra)
                if len(models) > 1:
                    comparisons = _compare(con, query, ranking, models, alpha, resamples, seed)
                if per_user is not None:
                    _write_per_user(con, query, models, Path(per_user))
            if beyond:
                results += _beyond(
                    con, beyond, models, items is not None, history is not None, extra
                )
        ratings = _ratings(con, rating, pred_names) if rating else []
    finally:
        con.close()

    conv = conventions.to_dict()
    conv.update(
        {
            "ties": TIE_RULE,
            "missing_recommendations": missing,
            "relevant": "grade > 0" if min_relevance is None else f"grade >= {min_relevance:g}",
            "average": "per list, then per user, then over users",
        }
    )
    return EvaluationResult(
        models=tuple(models or pred_names),
        files=tuple(files),
        coverage=tuple(coverage),
        metrics=tuple(results),
        comparisons=tuple(comparisons),
        ratings=tuple(ratings),
        conventions=conv,
        warnings=tuple(warnings),
        per_user_path=str(per_user) if per_user is not None and ranking else None,
    )


def _choose_metrics(
    metrics: str | Sequence[str] | None,
    ks: Sequence[int],
    conventions: Conventions,
    have_recs: bool,
    have_preds: bool,
) -> list[MetricSpec]:
    if metrics:
        return parse_metrics(metrics, ks, conventions)
    specs: list[MetricSpec] = []
    if have_recs:
        specs += default_ranking_metrics(ks, conventions)
        specs += parse_metrics([f"coverage@{max(ks)}"], conventions=conventions)
    if have_preds:
        specs += parse_metrics(["rmse", "mae"], conventions=conventions)
    return specs


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    row = con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
    return int(row[0]) if row else 0


def _duplicates(con: duckdb.DuckDBPyConnection, table: str) -> tuple[int, int, str, str] | None:
    """(extra rows, users with a repeated item, an example user, its item) or None.

    A repeated (user, item) pair has one hash, so when the number of distinct
    hashes equals the number of rows there is no repeat (the fast, usual case);
    otherwise the exact check below finds them (or a mere hash collision)."""
    screen = con.execute(
        f"SELECT COUNT(*) - COUNT(DISTINCT hash(user_id, item_id)) FROM {table}"
    ).fetchone()
    if screen is None or int(screen[0]) == 0:
        return None
    pairs = (
        f"SELECT user_id, item_id, COUNT(*) AS c FROM {table} "
        "GROUP BY user_id, item_id HAVING COUNT(*) > 1"
    )
    row = con.execute(
        f"SELECT COUNT(*), SUM(c - 1), COUNT(DISTINCT user_id) FROM ({pairs}) x"
    ).fetchone()
    if row is None or int(row[0]) == 0:
        return None
    example = con.execute(
        f"SELECT user_id, item_id FROM ({pairs}) x ORDER BY user_id, item_id LIMIT 1"
    ).fetchone()
    assert example is not None
    return int(row[1]), int(row[2]), str(example[0]), str(example[1])


def _repeats(
    con: duckdb.DuckDBPyConnection, table: str, path: Path, conventions: Conventions, what: str
) -> tuple[int, int] | None:
    """(extra rows, users with a repeated item) of ``table``, or None; under
    ``duplicates=error`` a repeat is an :class:`InputError` ("user 'u' {what}
    item 'i' twice")."""
    dup = _duplicates(con, table)
    if dup is None:
        return None
    extra, users, user, item = dup
    if conventions.duplicates == "error":
        more = f" ({extra} duplicated rows in {users} users)" if extra > 1 else ""
        raise InputError(
            f"{path}: user {user!r} {what} item {item!r} twice{more}; "
            "remove the duplicates or pass --duplicates dedupe to count each item once"
        )
    return extra, users


def _prepare_truth(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    cols: Mapping[str, str],
    conventions: Conventions,
    min_relevance: float | None,
    warnings: list[str],
) -> FileSummary:
    rows = _count(con, "t_raw")
    grade = "grade" if "grade" in cols else "1.0"
    dup = _repeats(con, "t_raw", path, conventions, "has")
    removed = 0
    if dup is not None:
        removed = dup[0]
        warnings.append(
            f"{path}: {removed} duplicated (user, item) rows in {dup[1]} users; "
            "the strongest grade of each is kept"
        )
        source = (
            f"(SELECT user_id, item_id, MAX({grade}) AS grade FROM t_raw GROUP BY user_id, item_id)"
        )
        grade = "grade"
    else:
        source = "t_raw"
    relevant = f"{grade} > 0" if min_relevance is None else f"{grade} >= {float(min_relevance)!r}"
    con.execute(
        f"CREATE TABLE truth AS SELECT user_id, item_id, CAST({grade} AS DOUBLE) AS grade, "
        f"CASE WHEN {relevant} AND {grade} > 0 THEN CAST({grade} AS DOUBLE) ELSE 0.0 END AS gain "
        f"FROM {source} t"
    )
    con.execute(
        "CREATE TABLE truth_users AS SELECT user_id, MAX(gain) AS best FROM truth GROUP BY user_id"
    )
    con.execute(
        "CREATE TABLE judged_all AS SELECT user_id AS list_id, gain FROM truth WHERE gain > 0"
    )
    users = _count(con, "truth_users")
    return FileSummary(
        "truth", str(path), "truth", rows, users=users, duplicates_removed=removed, columns=cols
    )


def _prepare_recommendations(
    con: duckdb.DuckDBPyConnection,
    i: int,
    path: Path,
    name: str,
    cols: Mapping[str, str],
    conventions: Conventions,
    warnings: list[str],
) -> FileSummary:
    table = f"rec_{i}"
    rows = _count(con, table)
    order = "rank ASC, item_id DESC" if "rank" in cols else "score DESC, item_id DESC"
    dup = _repeats(con, table, path, conventions, "lists")
    removed = 0
    source = table
    if dup is not None:
        removed = dup[0]
        warnings.append(
            f"{path}: {removed} repeated items in {dup[1]} users' lists counted once, "
            "at their best position"
        )
        source = (
            f"(SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id, item_id "
            f"ORDER BY {order}) AS occurrence FROM {table}) x WHERE occurrence = 1)"
        )
    # The ranking key: higher is better; ties break by item id descending (trec_eval).
    key = "-rank" if "rank" in cols else "score"
    con.execute(f"CREATE VIEW src_{i} AS SELECT user_id, item_id, {key} AS key FROM {source} s")
    con.execute(f"CREATE TABLE rec_users_{i} AS SELECT user_id FROM {table} GROUP BY user_id")
    users = _count(con, f"rec_users_{i}")
    return FileSummary(
        "recommendations",
        str(path),
        name,
        rows,
        users=users,
        duplicates_removed=removed,
        columns=cols,
    )


def _prepare_predictions(
    con: duckdb.DuckDBPyConnection,
    i: int,
    path: Path,
    name: str,
    cols: Mapping[str, str],
    conventions: Conventions,
    warnings: list[str],
) -> FileSummary:
    table = f"pred_{i}"
    rows = _count(con, table)
    dup = _repeats(con, table, path, conventions, "has a prediction for")
    removed = 0
    if dup is not None:
        removed = dup[0]
        warnings.append(f"{path}: {removed} repeated (user, item) predictions; the first is kept")
        con.execute(
            f"CREATE TABLE {table}_d AS SELECT user_id, item_id, "
            "ANY_VALUE(prediction) AS prediction "
            f"FROM {table} GROUP BY user_id, item_id"
        )
        con.execute(f"DROP TABLE {table}")
        con.execute(f"ALTER TABLE {table}_d RENAME TO {table}")
    users = int(con.execute(f"SELECT COUNT(DISTINCT user_id) FROM {table}").fetchone()[0])  # type: ignore[index]
    return FileSummary(
        "predictions", str(path), name, rows, users=users, duplicates_removed=removed, columns=cols
    )


def _build_ranked(
    con: duckdb.DuckDBPyConnection,
    n_models: int,
    ranking: Sequence[MetricSpec],
    beyond: Sequence[MetricSpec],
) -> None:
    """``ranked_all(grp, user_id, list_id, item_id, rank, gain)``: the lists of the users
    that have truth, ranked 1..n by key descending then item id descending, with the
    truth grade of each item as its gain.

    The kernel reads only what the metrics need, so only that is built:

    - AUC needs every item of every list: a window over all rows;
    - AP or NDCG over the whole list need the rank of every relevant item: the same
      window, keeping relevant items and the top K;
    - otherwise (cutoff metrics and MRR) the top K of each list, from a top-K
      aggregate instead of a sort, plus, for MRR over the whole list, the first
      relevant item of lists that have none in the top K, ranked by counting the
      items that beat it. The kernel sees the same ranks either way.
    """
    cutoffs = [s.k for s in [*ranking, *beyond] if s.k is not None]
    top_k = max(cutoffs, default=1)
    everything = any(s.name == "auc" for s in ranking)
    whole_list = any(s.k is None and s.name in ("ap", "map", "ndcg") for s in ranking)
    first_beyond = any(s.k is None and s.name == "mrr" for s in ranking)
    truth_join = "LEFT JOIN truth t ON t.user_id = x.user_id AND t.item_id = x.item_id"
    if everything or whole_list:
        where = "" if everything else f" WHERE gain > 0 OR rank <= {top_k}"
        parts = " UNION ALL ".join(
            f"SELECT {i} AS grp, x.user_id, x.item_id, ROW_NUMBER() OVER (PARTITION BY x.user_id "
            "ORDER BY x.key DESC, x.item_id DESC) AS rank, COALESCE(t.gain, 0.0) AS gain "
            f"FROM src_{i} x JOIN truth_users u ON u.user_id = x.user_id {truth_join}"
            for i in range(n_models)
        )
        con.execute(
            "CREATE TABLE ranked_all AS SELECT grp, user_id, user_id AS list_id, item_id, rank, "
            f"gain FROM ({parts}) r{where}"
        )
        return
    parts = " UNION ALL ".join(
        f"SELECT {i} AS grp, x.user_id, x.item_id, x.rank, COALESCE(t.gain, 0.0) AS gain FROM "
        f"(SELECT user_id, e.i AS item_id, rank FROM (SELECT user_id, unnest(top) AS e, "
        "generate_subscripts(top, 1) AS rank FROM (SELECT s.user_id, "
        f"max({{'k': s.key, 'i': s.item_id}}, {top_k}) AS top FROM src_{i} s "
        "GROUP BY s.user_id) a SEMI JOIN truth_users u ON u.user_id = a.user_id) b) x "
        f"{truth_join}"
        for i in range(n_models)
    )
    con.execute(
        "CREATE TABLE ranked_all AS SELECT grp, user_id, user_id AS list_id, item_id, rank, gain "
        f"FROM ({parts}) r"
    )
    if not first_beyond:
        return
    for i in range(n_models):
        con.execute(
            "INSERT INTO ranked_all "
            f"WITH rel AS (SELECT s.user_id, {{'k': s.key, 'i': s.item_id}} AS key, t.gain "
            f"FROM src_{i} s JOIN truth t ON t.user_id = s.user_id AND t.item_id = s.item_id "
            "WHERE t.gain > 0), "
            "best AS (SELECT user_id, max(key) AS key, arg_max(gain, key) AS gain FROM rel "
            "GROUP BY user_id), "
            "missing AS (SELECT b.* FROM best b WHERE NOT EXISTS (SELECT 1 FROM ranked_all a "
            f"WHERE a.grp = {i} AND a.user_id = b.user_id AND a.gain > 0)) "
            f"SELECT {i}, m.user_id, m.user_id, m.key.i, 1 + COUNT(*) FILTER "
            "(WHERE {'k': s.key, 'i': s.item_id} > m.key), m.gain "
            f"FROM src_{i} s JOIN missing m ON m.user_id = s.user_id "
            "GROUP BY m.user_id, m.key, m.gain"
        )


def _coverage(con: duckdb.DuckDBPyConnection, models: Sequence[str]) -> list[Coverage]:
    out: list[Coverage] = []
    truth_users = _count(con, "truth_users")
    no_relevant = int(con.execute("SELECT COUNT(*) FROM truth_users WHERE best <= 0").fetchone()[0])  # type: ignore[index]
    for i, model in enumerate(models):
        row = con.execute(
            f"WITH ru AS (SELECT user_id FROM rec_users_{i}) "
            "SELECT (SELECT COUNT(*) FROM ru), "
            "(SELECT COUNT(*) FROM ru SEMI JOIN truth_users t ON t.user_id = ru.user_id), "
            "(SELECT COUNT(*) FROM truth_users t ANTI JOIN ru ON ru.user_id = t.user_id)"
        ).fetchone()
        assert row is not None
        in_recs, evaluated, without_recs = int(row[0]), int(row[1]), int(row[2])
        out.append(
            Coverage(
                model=model,
                users_in_recommendations=in_recs,
                users_evaluated=evaluated,
                users_without_truth=in_recs - evaluated,
                truth_users=truth_users,
                truth_users_without_recommendations=without_recs,
                truth_users_without_relevant=no_relevant,
            )
        )
    return out


def _add_missing_users(con: duckdb.DuckDBPyConnection, query: Any, n_models: int) -> None:
    """``missing=zero``: truth users with a relevant item but no list score 0."""
    cols = ["m.grp", "u.user_id", "1", "0", "0"]
    for _ in query.columns:
        cols += ["0.0", "1"]
    models = " UNION ALL ".join(f"SELECT {i} AS grp" for i in range(n_models))
    con.execute(
        f"INSERT INTO per_user SELECT {', '.join(cols)} FROM ({models}) m "
        "CROSS JOIN (SELECT user_id FROM truth_users WHERE best > 0) u "
        "WHERE NOT EXISTS (SELECT 1 FROM per_user p WHERE p.grp = m.grp AND p.user_id = u.user_id)"
    )


def _fill_missing_groups(
    results: list[MetricResult],
    specs: Sequence[MetricSpec],
    models: Sequence[str],
    extra: Mapping[str, str],
) -> list[MetricResult]:
    """A model whose users all lack truth gets undefined results, not silence."""
    have = {(r.metric, r.group) for r in results}
    out = list(results)
    for model in models:
        for spec in specs:
            if (spec.label, model) not in have:
                convention = dict(spec.convention)
                convention.update(extra)
                out.append(
                    MetricResult(
                        metric=spec.label,
                        group=model,
                        value=None,
                        convention=convention,
                        status="undefined",
                        message="no user of this file has truth",
                    )
                )
    order = {m: i for i, m in enumerate(models)}
    labels = {s.label: i for i, s in enumerate(specs)}
    return sorted(out, key=lambda r: (order.get(r.group, 0), labels.get(r.metric, 0)))


def _write_per_user(
    con: duckdb.DuckDBPyConnection, query: Any, models: Sequence[str], path: Path
) -> None:
    fmt = "PARQUET" if path.name.lower().endswith((".parquet", ".pq")) else "CSV"
    names = " UNION ALL ".join(
        f"SELECT {i} AS grp, {quote_literal(m)} AS model" for i, m in enumerate(models)
    )
    cols = ", ".join(f"p.{mc.column} AS {quote_ident(mc.spec.label)}" for mc in query.columns)
    sql = (
        f"COPY (SELECT n.model, p.user_id, p.n_lists AS lists, {cols} FROM per_user p "
        f"JOIN ({names}) n ON n.grp = p.grp ORDER BY n.model, p.user_id) "
        f"TO {quote_literal(str(path))} (FORMAT {fmt})"
    )
    try:
        con.execute(sql)
    except Exception as exc:
        raise AbevalError(f"{path}: cannot write the per-user file: {_first(exc)}") from None


def _beyond(
    con: duckdb.DuckDBPyConnection,
    specs: Sequence[MetricSpec],
    models: Sequence[str],
    have_items: bool,
    have_history: bool,
    extra: Mapping[str, str],
) -> list[MetricResult]:
    if have_items:
        con.execute("CREATE TABLE catalogue AS SELECT DISTINCT item_id FROM items")
    else:
        parts = [f"SELECT item_id FROM rec_{i}" for i in range(len(models))]
        parts.append("SELECT item_id FROM truth")
        if have_history:
            parts.append("SELECT item_id FROM history")
        con.execute(
            "CREATE TABLE catalogue AS SELECT DISTINCT item_id FROM "
            f"({' UNION ALL '.join(parts)}) x"
        )
    if have_history:
        con.execute("CREATE TABLE interactions AS SELECT DISTINCT user_id, item_id FROM history")
        users = "SELECT COUNT(DISTINCT user_id) FROM history"
    else:
        con.execute(
            "CREATE TABLE interactions AS SELECT DISTINCT user_id, item_id FROM truth "
            "WHERE gain > 0"
        )
        users = "SELECT COUNT(*) FROM truth_users"
    con.execute(
        "CREATE TABLE popularity AS SELECT item_id, CAST(COUNT(*) AS DOUBLE) / "
        f"({users}) AS share FROM interactions GROUP BY item_id"
    )
    similarity = "cooccurrence"
    if have_items:
        cols = {r[0] for r in con.execute("DESCRIBE items").fetchall()}
        if "features" in cols:
            similarity = "features"
        elif "category" in cols:
            similarity = "category"
    inputs = BeyondInputs(
        ranked="ranked_all",
        catalogue="catalogue",
        popularity="popularity",
        interactions="interactions",
        items="items" if have_items else None,
        similarity=similarity,
        history="history" if have_history else None,
        number_keys=True,  # evaluate runs on DuckDB
    )
    query = beyond_query(specs, inputs)
    rows = _rows(con.execute(query.sql()))
    groups = {
        str(r["grp"]): (int(r["users"]), int(r["lists"]))
        for r in _rows(
            con.execute(
                "SELECT grp, COUNT(DISTINCT user_id) AS users, COUNT(DISTINCT list_id) AS lists "
                "FROM ranked_all GROUP BY grp"
            )
        )
    }
    for i in range(len(models)):
        groups.setdefault(str(i), (0, 0))
    convention = dict(extra)
    convention["catalogue"] = "items file" if have_items else "all items in the input files"
    convention["reference"] = (
        "history file (popularity, co-occurrence)"
        if have_history
        else "relevant truth pairs; popularity = share of truth users"
    )
    convention["similarity"] = similarity
    found = query.results(rows, groups, extra_convention=convention)
    names = {str(i): m for i, m in enumerate(models)}
    return [replace(r, group=names[r.group]) for r in found]


def _ratings(
    con: duckdb.DuckDBPyConnection, specs: Sequence[MetricSpec], names: Sequence[str]
) -> list[RatingResult]:
    cols = {r[0] for r in con.execute("DESCRIBE t_raw").fetchall()}
    if "grade" not in cols:
        raise InputError(
            "the truth file has no rating column; "
            "RMSE and MAE need columns user_id, item_id, rating"
        )
    out: list[RatingResult] = []
    truth_pairs = _count(con, "truth")
    for i, name in enumerate(names):
        aggs = ", ".join(f"{s.definition.rating_sql} AS m{j}" for j, s in enumerate(specs))
        row = con.execute(
            f"SELECT COUNT(*) AS n, {aggs} FROM (SELECT p.prediction, t.grade AS rating "
            f"FROM pred_{i} p JOIN truth t ON t.user_id = p.user_id AND t.item_id = p.item_id) x"
        ).fetchone()
        assert row is not None
        n = int(row[0])
        without = int(
            con.execute(
                f"SELECT COUNT(*) FROM pred_{i} p ANTI JOIN truth t "
                "ON t.user_id = p.user_id AND t.item_id = p.item_id"
            ).fetchone()[0]  # type: ignore[index]
        )
        for j, spec in enumerate(specs):
            value = None if row[1 + j] is None else float(row[1 + j])
            out.append(
                RatingResult(
                    metric=spec.label,
                    model=name,
                    value=value,
                    pairs_predicted=n,
                    truth_pairs=truth_pairs,
                    predictions_without_truth=without,
                    status="ok" if value is not None else "undefined",
                    message="" if value is not None else "no prediction matches a truth pair",
                )
            )
    return out


# --------------------------------------------------------------------------- comparison


def _compare(
    con: duckdb.DuckDBPyConnection,
    query: Any,
    specs: Sequence[MetricSpec],
    models: Sequence[str],
    alpha: float,
    resamples: int,
    seed: int,
) -> list[Comparison]:
    import numpy as np
    from statsmodels.stats.multitest import multipletests

    raw: list[Comparison] = []
    for mc in query.columns:
        c = mc.column
        for j in range(1, len(models)):
            arrays = con.execute(
                f"SELECT a.{c} AS base, b.{c} AS other FROM per_user a JOIN per_user b "
                f"ON b.user_id = a.user_id WHERE a.grp = 0 AND b.grp = {j} "
                f"AND a.{c} IS NOT NULL AND b.{c} IS NOT NULL "
                # A fixed order: the seeded sign flips must meet the same users
                # every run, or the randomisation p-value changes between runs.
                "ORDER BY a.user_id"
            ).fetchnumpy()
            base = np.asarray(arrays["base"], dtype=float)
            other = np.asarray(arrays["other"], dtype=float)
            raw.append(
                paired_comparison(
                    mc.spec.label, models[j], models[0], base, other, alpha, resamples, seed
                )
            )
    # Holm over every (metric, model) comparison, separately for each test.
    for attr in ("p_t", "p_randomization"):
        idx = [i for i, c in enumerate(raw) if getattr(c, attr) is not None]
        if idx:
            pvals = [float(getattr(raw[i], attr)) for i in idx]
            adjusted = multipletests(pvals, method="holm")[1]
            for i, p in zip(idx, adjusted, strict=True):
                if attr == "p_t":
                    raw[i] = replace(raw[i], p_t_holm=float(p))
                else:
                    raw[i] = replace(raw[i], p_randomization_holm=float(p))
    return raw


def paired_comparison(
    metric: str,
    model: str,
    baseline: str,
    base: np.ndarray,
    other: np.ndarray,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Paired t test and sign-flip randomisation test of mean(other − base) = 0.

    The randomisation test flips the sign of each user's difference at random
    (exact under the null of exchangeable models per user): p = (1 + #{|mean*| ≥
    |mean|}) / (1 + resamples).
    """
    import numpy as np
    from scipy import stats

    d = other - base
    n = int(d.size)
    eps = 1e-12
    wins, losses = int((d > eps).sum()), int((d < -eps).sum())
    ties = n - wins - losses
    empty = Comparison(
        metric,
        model,
        baseline,
        n,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        wins,
        ties,
        losses,
        status="undefined",
        message="fewer than two users with a value under both models",
    )
    if n < 2:
        return empty
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    base_mean, other_mean = float(base.mean()), float(other.mean())
    if se == 0:
        p_t = 1.0 if mean == 0 else 0.0
        t_stat = None
        lo = hi = mean
        msg = "every user has the same difference: the t test is degenerate"
    else:
        t_stat = mean / se
        p_t = float(2 * stats.t.sf(abs(t_stat), n - 1))
        half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * se
        lo, hi = mean - half, mean + half
        msg = ""
    nz = d[np.abs(d) > eps]
    if nz.size == 0:
        p_rand = 1.0
    else:
        rng = np.random.default_rng(seed)
        observed = abs(float(nz.sum()))
        hits = 0
        chunk = max(1, min(resamples, 20_000_000 // max(nz.size, 1)))
        done = 0
        while done < resamples:
            b = min(chunk, resamples - done)
            signs = rng.integers(0, 2, size=(b, nz.size), dtype=np.int8) * 2 - 1
            sums = np.abs(signs @ nz)
            hits += int((sums >= observed - 1e-9 * max(1.0, observed)).sum())
            done += b
        p_rand = (1 + hits) / (1 + resamples)
    return Comparison(
        metric=metric,
        model=model,
        baseline=baseline,
        users=n,
        baseline_mean=base_mean,
        model_mean=other_mean,
        difference=mean,
        ci_low=lo,
        ci_high=hi,
        t_statistic=t_stat,
        p_t=p_t,
        p_t_holm=None,
        p_randomization=p_rand,
        p_randomization_holm=None,
        wins=wins,
        ties=ties,
        losses=losses,
        message=msg,
    )


# --------------------------------------------------------------------------- text


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:.{digits}f}"


def _p(x: float | None) -> str:
    if x is None:
        return "–"
    return "<0.0001" if x < 1e-4 else f"{x:.4f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]
    line = "  ".join(
        h.ljust(w) if i == 0 else h.rjust(w)
        for i, (h, w) in enumerate(zip(header, widths, strict=True))
    )
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    return out


def render_text(result: EvaluationResult) -> str:
    """A plain-text report: inputs, per-model metrics, comparisons, ratings, conventions."""
    lines: list[str] = []
    for f in result.files:
        extra = f", {f.users} users" if f.users else ""
        dup = f", {f.duplicates_removed} duplicates removed" if f.duplicates_removed else ""
        lines.append(f"{f.role}: {f.path} ({f.rows} rows{extra}{dup})")
    for cov in result.coverage:
        lines.append(
            f"{cov.model}: {cov.users_evaluated} users evaluated; {cov.users_without_truth} users "
            f"without truth left out; {cov.truth_users_without_recommendations} of "
            f"{cov.truth_users} truth users without recommendations; "
            f"{cov.truth_users_without_relevant} truth users without a relevant item"
        )
    if result.metrics:
        lines.append("")
        header = ["metric", *result.models]
        by = {(m.metric, m.group): m for m in result.metrics}
        labels = list(dict.fromkeys(m.metric for m in result.metrics))
        rows = []
        for label in labels:
            cells = [label]
            for model in result.models:
                m = by.get((label, model))
                if m is None:
                    cells.append("")
                    continue
                se = m.std_error
                cells.append(_fmt(m.value) + (f" ±{_fmt(se)}" if se is not None else ""))
            rows.append(cells)
        lines += _table(header, rows)
        lines.append("(± standard error over users)")
        notes = []
        for label in labels:
            m = by.get((label, result.models[0]))
            if m is None:
                continue
            left = {k: v for k, v in m.left_out.items() if v}
            parts = [f"{m.users} users, {m.lists} lists"]
            parts += [f"{v} {k.replace('_', ' ')}" for k, v in left.items()]
            notes.append(f"  {label} ({result.models[0]}): {', '.join(parts)}")
        lines.append("coverage of each metric:")
        lines += notes
    if result.comparisons:
        lines.append("")
        lines.append(
            f"paired comparison with {result.models[0]} "
            "(difference = model − baseline; Holm-adjusted p)"
        )
        header = [
            "metric",
            "model",
            "baseline",
            "model",
            "diff",
            "95% CI",
            "p (t)",
            "p (rand)",
            "W/T/L",
        ]
        rows = []
        for c in result.comparisons:
            rows.append(
                [
                    c.metric,
                    c.model,
                    _fmt(c.baseline_mean),
                    _fmt(c.model_mean),
                    _fmt(c.difference),
                    f"[{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]",
                    _p(c.p_t_holm),
                    _p(c.p_randomization_holm),
                    f"{c.wins}/{c.ties}/{c.losses}",
                ]
            )
        lines += _table(header, rows)
    if result.ratings:
        lines.append("")
        rows = [
            [
                r.metric,
                r.model,
                _fmt(r.value),
                f"{r.pairs_predicted}/{r.truth_pairs}",
                _fmt(r.coverage, 3),
            ]
            for r in result.ratings
        ]
        lines += _table(["metric", "model", "value", "pairs predicted", "coverage"], rows)
    lines.append("")
    lines.append("conventions: " + "; ".join(f"{k}={v}" for k, v in result.conventions.items()))
    if result.per_user_path:
        lines.append(f"per-user values written to {result.per_user_path}")
    return "\n".join(lines)
