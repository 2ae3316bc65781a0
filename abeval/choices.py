"""The options that take one of a few words, and the few fixed limits that more
than one layer reads, each defined once.

The library checks its arguments against these; the CLI uses the same types,
so ``--help`` lists the choices (``--gain <linear|exp2|binary>``) and a wrong
word is a usage error before anything runs. Kept free of imports so that the
CLI starts fast, and so that any layer, the shared helpers included, can read
it."""

from __future__ import annotations

from typing import Literal

#: Event files abeval reads (``ingest --format``).
FileFormat = Literal["csv", "parquet", "jsonl"]
#: The units ``ingest --epoch`` declares for numeric timestamps.
EpochUnit = Literal["s", "ms", "us"]
#: What a bad row does to its file (``ingest --on-error``).
OnError = Literal["abort", "skip"]

#: What a command that prints text or JSON writes (``--format``).
OutputFormat = Literal["text", "json"]
#: What ``report --format`` writes.
ReportFormat = Literal["html", "json", "text"]
#: What ``evaluate --format`` writes.
EvaluateFormat = Literal["text", "json", "html"]
#: A treatment arm's decision (``report --fail-on``; docs/metrics.md#decision).
DecisionName = Literal["ship", "roll_back", "keep_running", "no_effect", "invalid"]
#: What became of an experiment (``experiment set --status``; docs/usage.md#what-was-decided).
ExperimentStatus = Literal["running", "shipped", "rolled_back", "abandoned"]
EXPERIMENT_STATUSES: tuple[ExperimentStatus, ...] = (
    "running",
    "shipped",
    "rolled_back",
    "abandoned",
)
#: Multiple-testing correction (``report --correction``).
Correction = Literal["holm", "bh"]
#: How a relative lift's interval is made (``report --relative-interval``):
#: Fieller's theorem, consistent with the test, or gbstats' delta method.
RelativeIntervalChoice = Literal["fieller", "delta"]

#: AP's denominator: R (trec_eval), min(R, K), or the hits in the top K.
ApDenominator = Literal["R", "min_rk", "hits"]
#: NDCG's gain of a relevance grade r: r, 2^r - 1, or 1 for r > 0.
Gain = Literal["linear", "exp2", "binary"]
#: A list without a relevant item: left out of the average, or scored 0.
Empty = Literal["skip", "zero"]
#: An item twice in one list: an error, or counted once at its best position.
Duplicates = Literal["error", "dedupe"]
#: A truth user without recommendations: left out (counted), or scored 0.
Missing = Literal["skip", "zero"]

#: A test that needs more days than this is reported as not feasible: the power
#: rows' ``feasible`` (:mod:`abeval.analysis.power_rows`) and the words of
#: :func:`abeval.formatting.days_text` read the same limit.
FEASIBLE_DAYS = 365.0
