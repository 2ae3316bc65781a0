"""The agreement board (abeval.analysis.agreement, docs/metrics.md#agreement-across-experiments)
on a small history (tests/agreement_store.py): which pairs it collects and from
where, the experiments without signals, the ranking, and the three formats."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from agreement_store import BARE, LIFTS, RECORDED, build_store
from html_tree import parse
from scipy import stats as st

from abeval.analysis.agreement import AgreementBoard, AgreementOptions
from abeval.analysis.agreement_board import agreement_board
from abeval.analysis.online import ReportOptions, build_report
from abeval.report.agreement_html import render_html
from abeval.report.agreement_text import render_text, source_label
from abeval.store import open_store
from abeval.store.ingest import ingest_file

ISSUE_PAIR_KEYS = {"experiment", "arm", "online_metric", "online_lift", "online_ci", "signal",
                   "source", "offline_lift", "offline_ci"}  # fmt: skip
ISSUE_SUMMARY_KEYS = {"signal", "source", "online_metric", "experiments", "sign_agreement",
                      "spearman", "spearman_ci", "kendall", "pearson", "slope", "precision",
                      "false_negative_rate"}  # fmt: skip
BOARD_KEYS = {"reliability", "ceiling", "ceiling_status", "rho_over_ceiling", "expected_precision",
              "familywise_p", "log_score", "baseline_log_score", "predictive_gain"}  # fmt: skip


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_store(tmp_path_factory.mktemp("agreement"))


@pytest.fixture(scope="module")
def board(history: str) -> AgreementBoard:
    with open_store(history, read_only=True) as store:
        return agreement_board(store, AgreementOptions(resamples=400))


def _ctr_lift(db: str, experiment: str) -> float:
    """Σ clicks / Σ impressions per arm, straight from the events (every simulated
    event falls after its user's exposure), as treatment / control − 1."""
    con = duckdb.connect(db, read_only=True)
    try:
        rows = dict(
            con.execute(
                "SELECT arm, count(*) FILTER (event_type = 'click') / "
                "count(*) FILTER (event_type = 'impression') FROM events "
                "WHERE experiment = ? GROUP BY arm",
                [experiment],
            ).fetchall()
        )
    finally:
        con.close()
    return rows["treatment"] / rows["control"] - 1


def test_experiments_without_signals_are_counted_and_named(board: AgreementBoard) -> None:
    assert [c.experiment for c in board.experiments] == sorted([*LIFTS, BARE])
    assert board.experiments_with_signals == 4
    assert board.experiments_without_signals == (BARE,)
    assert board.experiments_skipped == ()
    bare = next(c for c in board.experiments if c.experiment == BARE)
    assert (bare.status, bare.signals) == ("no_signals", {})
    assert not [p for p in board.pairs if p.experiment == BARE]
    full = next(c for c in board.experiments if c.experiment == "exp-a")
    assert set(full.signals) == {"evaluation", "ope", "replay"}
    assert full.signals["ope"] == 4  # ips, snips, capped_ips, ncis


def test_recorded_evaluation_pairs(board: AgreementBoard, history: str) -> None:
    found = {
        p.experiment: p
        for p in board.pairs
        if p.source == "evaluation" and p.online_metric == "ctr"
    }
    assert set(found) == set(RECORDED)
    for name, (base, diff, se) in RECORDED.items():
        p = found[name]
        assert (p.signal, p.arm) == ("ndcg@10", "treatment")
        # Relative lift = paired difference / control model's value.
        assert p.offline_lift == pytest.approx(diff / base, rel=1e-12)
        assert p.offline_ci == pytest.approx(((diff - 1.96 * se) / base, (diff + 1.96 * se) / base))
        assert p.online_lift == pytest.approx(_ctr_lift(history, name), rel=1e-9)
        assert p.online_ci is not None and p.online_se is not None and p.online_se > 0


def test_ope_and_replay_pairs_come_from_the_report(board: AgreementBoard, history: str) -> None:
    with open_store(history, read_only=True) as store:
        report = build_report(store, "exp-c", ReportOptions(daily=False))
    assert report.ope is not None
    direction = next(d for d in report.ope.directions if d.source == "control")
    snips = next(e for e in direction.estimates if e.estimator == "snips")
    pair = next(
        p for p in board.pairs
        if (p.experiment, p.signal, p.source, p.online_metric) == ("exp-c", "snips", "ope", "ctr")
    )  # fmt: skip
    # The same sums (added in another order by the engine): equal to 1e-9.
    assert pair.offline_lift == pytest.approx(snips.predicted_lift.value, rel=1e-9)
    assert pair.offline_ci == pytest.approx(snips.predicted_lift.ci, rel=1e-9)
    replayed = next(r for r in report.offline if r.metric == "ndcg@10")
    pair = next(
        p for p in board.pairs
        if (p.experiment, p.signal, p.source, p.online_metric) == ("exp-c", "ndcg@10", "replay",
                                                                     "conversion")
    )  # fmt: skip
    assert pair.offline_lift == pytest.approx(replayed.comparison.relative.effect, rel=1e-9)
    # Its own interval, not adjusted over the replayed metrics.
    assert pair.offline_ci == pytest.approx(replayed.comparison.relative.ci, rel=1e-9)
    assert replayed.comparison.relative.ci != replayed.comparison.relative.interval
    conversion = next(m for m in report.metrics if m.metric == "conversion")
    # The report's fixed-horizon comparison (its reference while, with no plan, the
    # report shows the always-valid one), adjusted over primary metrics × arms.
    fixed = conversion.reference_fixed_horizon or conversion.comparison
    assert fixed.method == "welch"
    assert pair.online_lift == pytest.approx(fixed.relative.effect, rel=1e-9)
    assert pair.online_ci == pytest.approx(fixed.relative.interval, rel=1e-9)


def test_summary_statistics_over_the_pairs(board: AgreementBoard) -> None:
    s = next(
        r for r in board.summary
        if (r.signal, r.source, r.online_metric) == ("ndcg@10", "evaluation", "ctr")
    )  # fmt: skip
    pairs = [
        p for p in board.pairs
        if (p.signal, p.source, p.online_metric) == ("ndcg@10", "evaluation", "ctr")
    ]  # fmt: skip
    x = [p.offline_lift for p in pairs]
    y = [p.online_lift for p in pairs]
    assert (s.experiments, s.pairs) == (3, 3)
    assert s.spearman == pytest.approx(st.spearmanr(x, y).statistic)
    assert s.kendall == pytest.approx(st.kendalltau(x, y).statistic)
    assert s.pearson == pytest.approx(st.pearsonr(x, y).statistic)
    agree = sum(1 for a, b in zip(x, y, strict=True) if a * b > 0)
    assert (s.agreeing_pairs, s.sign_agreement) == (agree, pytest.approx(agree / 3))
    assert s.independent and not s.offline_lower_is_better


def test_ranking_puts_independent_signals_first(board: AgreementBoard) -> None:
    for metric in ("ctr", "conversion"):
        rows = [s for s in board.summary if s.online_metric == metric]
        assert [s.rank for s in rows] == list(range(1, len(rows) + 1))
        kinds = [s.independent for s in rows]
        assert kinds == sorted(kinds, reverse=True)  # every True before every False
        assert {s.source for s in rows if not s.independent} == {"replay"}
        independent = [s for s in rows if s.independent]
        # Compared to 9 decimals, as the ranking does: two signals equal but for the
        # last bits of a sum DuckDB's threads add in any order tie (and go by name).
        gains = [round(s.predictive_gain or 0.0, 9) for s in independent]
        assert gains == sorted(gains, reverse=True)  # a signal without a score: no gain
        # Four experiments: leaving one out leaves three, the fewest a forecast takes.
        assert any(s.predictive_gain is not None for s in independent)
    assert board.summary[0].online_metric == "ctr"


def test_json_document(board: AgreementBoard) -> None:
    doc = json.loads(json.dumps(board.to_dict(), allow_nan=False))
    assert set(doc["pairs"][0]) >= ISSUE_PAIR_KEYS
    assert set(doc["summary"][0]) >= ISSUE_SUMMARY_KEYS
    for row in doc["summary"]:
        assert set(row) >= BOARD_KEYS
        if row["ceiling_status"] == "ok" and row["spearman"] is not None:
            assert row["rho_over_ceiling"] == pytest.approx(row["spearman"] / row["ceiling"])
        else:
            assert row["rho_over_ceiling"] is None
    assert {p["source"] for p in doc["pairs"]} == {"evaluation", "replay", "ope"}
    assert doc["experiments_without_signals"] == [BARE]
    assert doc["experiments_with_signals"] == 4
    assert doc["resamples"] == 400 and doc["seed"] == 0


def test_text_board(board: AgreementBoard) -> None:
    text = render_text(board)
    assert "5 experiments: 4 with offline signals, 1 without, 0 skipped" in text
    assert f"  without offline signals: {BARE}" in text
    heading = "Online metric: ctr (ranked by LOO gain, best first; independent signals first)"
    assert heading in text
    assert "* replayed from the same clicks as the online metrics" in text
    first = next(s for s in board.summary if s.online_metric == "ctr")
    lines = text.splitlines()
    row = lines[lines.index(heading) + 2].split()  # the first row under the column names
    assert row[:2] == [first.signal, source_label(first)] and f"{first.spearman:.2f}" in row


def test_html_board(board: AgreementBoard) -> None:
    page = parse(render_html(board))
    assert page.field("without-signals") == "1"
    assert "same clicks" in page.field("replay-warning")
    table = page.find("table", data_metric="ctr")
    rows = table.find_all("tr", data_source="ope")
    assert len(rows) == 4
    cards = page.find_all("figure", class_="chart-card")
    assert len(cards) == len(board.summary)  # one per signal and online metric
    scatter = page.find("figure", data_source="evaluation").find("svg", class_="scatter")
    assert len(scatter.find_all("circle", class_="pt")) == 3
    assert len(scatter.find_all("line", class_="cross")) == 6  # both intervals of each point
    assert scatter.find_all("line", class_="diagonal")
    replayed = page.find("details", class_="replayed")
    assert replayed.find_all("figure", data_source="replay")


def test_an_experiment_whose_report_fails_is_skipped_and_named(tmp_path: Path) -> None:
    events = tmp_path / "solo.csv"
    events.write_text(
        "experiment,arm,user_id,ts,event_type\n"
        "solo,control,u1,2025-01-06T09:00:00Z,exposure\n"
        "solo,control,u2,2025-01-06T09:01:00Z,exposure\n"
    )
    db = str(tmp_path / "solo.duckdb")
    with open_store(db) as store:
        ingest_file(store, events)
    with open_store(db, read_only=True) as store:
        board = agreement_board(store, AgreementOptions(resamples=100))
    assert board.experiments_skipped == ("solo",)
    assert board.experiments[0].message == (
        "experiment 'solo' has one arm (control): nothing to compare; "
        "check the arm column of the events"
    )
    assert (board.pairs, board.summary, board.experiments_with_signals) == ((), (), 0)
    text = render_text(board)
    assert "1 experiment: 0 with offline signals, 0 without, 1 skipped" in text
    assert "  skipped solo: experiment 'solo' has one arm (control)" in text
    assert "No pairs of an offline and an online lift: nothing to compare." in text
    page = parse(render_html(board))
    assert page.field("skipped") == "1"
    assert page.find("tr", data_experiment="solo").attrs["data-status"] == "skipped"


def test_json_follows_its_schema(board: AgreementBoard) -> None:
    import jsonschema

    schema = json.loads(
        (Path(__file__).parents[2] / "reports" / "agreement.schema.json").read_text()
    )
    jsonschema.validate(json.loads(json.dumps(board.to_dict())), schema)
    broken = json.loads(json.dumps(board.to_dict()))
    broken["pairs"][0]["source"] = "guess"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_z_columns_follow_from_the_pairs(board: AgreementBoard) -> None:
    """Per off-policy estimator against CTR: z of each pair re-derived from its lifts
    and standard errors, their mean and the share with |z| < 1.96; other signals
    (a recorded NDCG lift is not a CTR lift) have none."""
    import numpy as np

    for s in board.summary:
        pairs = [
            p for p in board.pairs
            if (p.signal, p.source, p.online_metric) == (s.signal, s.source, s.online_metric)
        ]  # fmt: skip
        if s.source != "ope" or s.online_metric != "ctr":
            assert (s.z_pairs, s.z_mean, s.z_within) == (0, None, None)
            continue
        assert s.independent  # the history records the target's probabilities
        z = np.array(
            [
                (p.offline_lift - p.online_lift) / np.hypot(p.offline_se, p.online_se)
                for p in pairs
                if p.offline_lift is not None and p.offline_se and p.online_se
            ]
        )
        assert s.z_pairs == len(z) == 4
        assert s.z_mean == pytest.approx(z.mean(), rel=1e-9)
        assert s.z_within == pytest.approx(np.mean(np.abs(z) < 1.96), rel=1e-12)
    text = render_text(board)
    assert "predicted against observed, z = (predicted − observed) / √(se_pred² + se_obs²):" in text
    page = parse(render_html(board))
    table = page.find("table", class_="z-scores")
    assert table is not None and table.find_all("tr", data_source="ope")


def test_every_table_is_sorted_by_its_first_numeric_column(board: AgreementBoard) -> None:
    from test_agreement_headline import assert_ranked_by_first_column

    assert_ranked_by_first_column(board)
