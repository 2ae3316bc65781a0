"""The plain-text report of ``abeval evaluate`` (abeval.report.evaluate_text), line by line."""

from __future__ import annotations

from abeval.analysis.evaluate import (
    EvaluationResult,
    FileSummary,
    PairedComparison,
    RatingResult,
    UserCoverage,
)
from abeval.metrics import OfflineMetricResult
from abeval.report.evaluate_text import render_text
from abeval.stats.sufficient import MeanStats


def _result() -> EvaluationResult:
    stats = MeanStats.from_values([0.0, 0.5, 1.0, 0.5])
    return EvaluationResult(
        models=("bm25", "two_tower"),
        files=(
            FileSummary("truth", "t.csv", "truth", 9, users=4),
            FileSummary("recommendations", "bm25.csv", "bm25", 40, users=5, duplicates_removed=2),
            FileSummary("items", "items.csv", "items", 12),
        ),
        coverage=(UserCoverage("bm25", 5, 4, 1, 4, 0, 1),),
        metrics=(
            OfflineMetricResult.of_stats(
                metric="ndcg@10",
                group="bm25",
                stats=stats,
                lists=4,
                left_out={"lists_without_relevant": 1, "users_without_value": 0},
                convention={},
            ),
            OfflineMetricResult(metric="ndcg@10", group="two_tower", value=float("nan")),
            OfflineMetricResult(metric="coverage@10", group="bm25", value=0.75, users=4, lists=4),
        ),
        comparisons=(
            PairedComparison(
                metric="ndcg@10",
                model="two_tower",
                baseline="bm25",
                users=4,
                baseline_mean=0.5,
                model_mean=0.625,
                difference=0.125,
                ci_low=-0.01,
                ci_high=0.26,
                t_statistic=2.5,
                p_t=0.03,
                p_t_holm=0.00004,
                p_randomization=0.2,
                p_randomization_holm=None,
                wins=3,
                ties=1,
                losses=0,
            ),
        ),
        ratings=(RatingResult("rmse", "p", 0.91234, 3, 9, 1),),
        conventions={"gain": "linear", "ties": "rank"},
        per_user_path="per_user.csv",
    )


def test_every_section_line_by_line() -> None:
    # The numbers follow from _result() by hand: ndcg@10 over [0, .5, 1, .5] has mean
    # 0.5 and standard error sqrt(1/6)/2 = 0.2041; a NaN value prints as "–"; bm25
    # has 5 recommendation users, 4 evaluated, so 1 without truth; a Holm p of
    # 0.00004 prints as <0.0001; 3 of 9 predictions paired is coverage 0.333.
    assert render_text(_result()).splitlines() == [
        "truth: t.csv (9 rows, 4 users)",
        "recommendations: bm25.csv (40 rows, 5 users, 2 duplicates removed)",
        "items: items.csv (12 rows)",
        "bm25: 4 users evaluated; 1 users without truth left out; 0 of 4 truth users without "
        "recommendations; 1 truth users without a relevant item",
        "",
        "metric                 bm25  two_tower",
        "-----------  --------------  ---------",
        "ndcg@10      0.5000 ±0.2041          –",
        "coverage@10          0.7500           ",
        "(± standard error over users)",
        "coverage of each metric:",
        "  ndcg@10 (bm25): 4 users, 4 lists, 1 lists without relevant",
        "  coverage@10 (bm25): 4 users, 4 lists",
        "",
        "paired comparison with bm25 (difference = model − baseline; Holm-adjusted p)",
        "metric       model  baseline   model    diff             95% CI    p (t)  p (rand)  W/T/L",
        "-------  ---------  --------  ------  ------  -----------------  -------  --------  -----",
        "ndcg@10  two_tower    0.5000  0.6250  0.1250  [-0.0100, 0.2600]  <0.0001         –  3/1/0",
        "",
        "metric  model   value  pairs predicted  coverage",
        "------  -----  ------  ---------------  --------",
        "rmse        p  0.9123              3/9     0.333",
        "",
        "conventions: gain=linear; ties=rank",
        "per-user values written to per_user.csv",
    ]


def test_a_result_without_metrics_has_inputs_and_conventions_only() -> None:
    result = EvaluationResult(
        models=("p",),
        files=(FileSummary("truth", "t.csv", "truth", 1, users=1),),
        coverage=(),
        metrics=(),
        comparisons=(),
        ratings=(),
        conventions={"gain": "linear"},
    )
    assert render_text(result) == "truth: t.csv (1 rows, 1 users)\n\nconventions: gain=linear"
