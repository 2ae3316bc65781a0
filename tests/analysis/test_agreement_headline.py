"""The board's answer per online metric (abeval.analysis.agreement_headline,
docs/metrics.md#the-boards-answer) on a hand-built history of seven experiments
whose best signal is known: ``ndcg@10`` (a recorded evaluation) orders the online
lifts but for two swaps, ``snips`` (an off-policy estimate) is unrelated to them,
and ``precision@10`` is replayed from the same clicks (a copy of the online lift,
not independent). Expected numbers come from scipy and from a family-wise
permutation test written here."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats as st

from abeval.analysis.agreement import (
    RANKING,
    SCHEMA_VERSION,
    AgreementBoard,
    AgreementOptions,
    AgreementPair,
    SignalSource,
)
from abeval.analysis.agreement_board import notes
from abeval.analysis.agreement_headline import best_signal, headlines
from abeval.analysis.agreement_summary import summarise
from abeval.analysis.online_metrics import BUILTIN_CATALOG

ALPHA = 0.05
SE = 0.004
Z = 1.959963984540054
#: The online CTR lifts of the seven experiments.
ONLINE = [0.010, -0.004, 0.022, 0.003, -0.012, 0.016, 0.007]
#: The recorded evaluation: the online order but for two swapped pairs.
GOOD = [0.013, -0.001, 0.019, 0.006, -0.009, 0.021, 0.004]
#: The off-policy estimate: unrelated to the online lifts.
NOISE = [-0.005, 0.012, 0.001, 0.015, 0.004, -0.008, 0.010]
#: Replayed from the same clicks: the online lift itself, scaled.
REPLAY = [0.8 * y for y in ONLINE]

SIGNALS: tuple[tuple[str, SignalSource, list[float]], ...] = (
    ("ndcg@10", "evaluation", GOOD),
    ("snips", "ope", NOISE),
    ("precision@10", "replay", REPLAY),
)


def _pair(i: int, signal: str, source: SignalSource, x: float) -> AgreementPair:
    y = ONLINE[i]
    return AgreementPair(
        experiment=f"exp-{i}",
        arm="b",
        online_metric="ctr",
        online_lift=y,
        online_ci=(y - Z * SE, y + Z * SE),
        online_se=SE,
        signal=signal,
        source=source,
        offline_lift=x,
        offline_ci=(x - Z * 0.002, x + Z * 0.002),
        independent=source != "replay",
        offline_se=0.002,
    )


def hand_board(experiments: int = len(ONLINE)) -> AgreementBoard:
    """The board of the first ``experiments`` experiments of the history above."""
    pairs = tuple(
        _pair(i, name, source, xs[i]) for name, source, xs in SIGNALS for i in range(experiments)
    )
    o = AgreementOptions(alpha=ALPHA, resamples=400)
    summary = summarise(pairs, o, BUILTIN_CATALOG)
    return AgreementBoard(
        schema_version=SCHEMA_VERSION,
        abeval_version="test",
        generated_at="2026-01-01T00:00:00+00:00",
        store="hand-built",
        alpha=ALPHA,
        seed=o.seed,
        resamples=o.resamples,
        ranking=RANKING,
        headlines=headlines(summary, ALPHA),
        experiments=(),
        experiments_with_signals=experiments,
        experiments_without_signals=(),
        experiments_skipped=(),
        pairs=pairs,
        summary=summary,
        notes=notes(o),
    )


@pytest.fixture(scope="module")
def board() -> AgreementBoard:
    return hand_board()


def _familywise(signals: list[list[float]], y: list[float], observed: float) -> float:
    """Share of the 7! orderings of the experiments under which the largest
    Spearman of ``signals`` against the reordered online lifts reaches ``observed``."""
    hits = total = 0
    for order in itertools.permutations(range(len(y))):
        permuted = [y[j] for j in order]
        best = max(st.spearmanr(x, permuted).statistic for x in signals)
        hits += best >= observed - 1e-12
        total += 1
    return hits / total


def test_best_signal_is_the_recorded_evaluation_that_orders_the_lifts(
    board: AgreementBoard,
) -> None:
    best = best_signal(board, "ctr")
    assert (best.status, best.signal, best.source) == ("ok", "ndcg@10", "evaluation")
    assert best.criterion == "predictive_gain"
    assert best.more_experiments_needed == 0
    assert best.row is not None and best.row.rank == 1


def test_headline_numbers_follow_from_their_definitions(board: AgreementBoard) -> None:
    (h,) = board.headlines
    assert h.best_signal == "ndcg@10" and h.best_source == "evaluation"
    rho = st.spearmanr(GOOD, ONLINE).statistic
    assert rho == pytest.approx(1 - 6 * 4 / (7 * (7**2 - 1)))  # two swapped neighbours
    assert h.spearman == pytest.approx(rho)
    assert h.spearman_ci is not None and h.spearman_ci[0] <= rho <= h.spearman_ci[1]
    assert h.ceiling is not None and h.rho_over_ceiling == pytest.approx(rho / h.ceiling)
    # the calibration slope: with τ² = 0, weighted least squares with equal weights is OLS
    ols = st.linregress(GOOD, ONLINE)
    assert h.slope == pytest.approx(ols.slope, rel=1e-6)
    assert h.slope_ci is not None and h.slope_ci[0] < ols.slope < h.slope_ci[1]
    # the family of independent signals: ndcg@10 and snips, experiments permuted
    expected = _familywise([GOOD, NOISE], ONLINE, rho)
    assert h.familywise_p == pytest.approx(expected)
    assert h.familywise_p < ALPHA


def test_the_unrelated_signal_is_named_as_noise(board: AgreementBoard) -> None:
    (h,) = board.headlines
    rho = st.spearmanr(NOISE, ONLINE).statistic
    p = _familywise([GOOD, NOISE], ONLINE, rho)
    assert p >= ALPHA
    assert [(n.signal, n.source) for n in h.noise_signals] == [("snips", "ope")]
    assert h.noise_signals[0].familywise_p == pytest.approx(p)


def test_a_replayed_copy_of_the_online_lift_is_not_the_answer(board: AgreementBoard) -> None:
    replayed = next(s for s in board.summary if s.source == "replay")
    assert replayed.spearman == pytest.approx(1.0)  # perfect, and circular
    assert replayed.rank == 3
    only_replay = replace(
        board, summary=tuple(replace(s, rank=1) for s in board.summary if s.source == "replay")
    )
    best = best_signal(only_replay, "ctr")
    assert (best.status, best.signal) == ("not_independent", "precision@10")


def test_too_few_experiments_says_how_many_more() -> None:
    two = hand_board(2)
    (h,) = two.headlines
    assert h.status == "too_few_experiments" and h.spearman is None
    assert h.more_experiments_needed == 1  # a correlation needs 3
    three = hand_board(3)
    (h,) = three.headlines
    assert h.status == "ok" and h.spearman is not None
    assert h.criterion == "familywise_p" and h.predictive_gain is None
    assert h.more_experiments_needed == 1  # leaving one out needs 4


def test_an_unknown_metric_has_no_signals(board: AgreementBoard) -> None:
    best = best_signal(board, "conversion")
    assert (best.status, best.signal, best.row) == ("no_signals", None, None)


def test_headline_json_carries_the_numbers(board: AgreementBoard) -> None:
    doc = board.to_dict()
    (h,) = doc["headlines"]
    assert h["best_signal"] == "ndcg@10" and h["criterion"] == "predictive_gain"
    assert h["noise_signals"] == [
        {"signal": "snips", "source": "ope", "independent": True,
         "familywise_p": board.headlines[0].noise_signals[0].familywise_p}
    ]  # fmt: skip
    assert np.isfinite(h["familywise_p"])


# --------------------------------------------------------------------------- presenters


def _number(text: str) -> float:
    """A table cell as the ranking reads it: ``n/a`` (too short to score) is no gain."""
    return 0.0 if text == "n/a" else float(text.replace("−", "-"))


def _descending_in_groups(rows: list[tuple[bool, float]], where: str) -> None:
    """(independent, value) in table order: independent rows first, each group
    sorted by value, largest first. Values equal to 9 decimals tie (the ranking
    compares them so: DuckDB's threads add a sum's last bits in any order)."""
    flags = [independent for independent, _ in rows]
    assert flags == sorted(flags, reverse=True), f"{where}: independent rows first"
    for group in (True, False):
        values = [round(v, 9) for independent, v in rows if independent == group]
        assert values == sorted(values, reverse=True), f"{where}: {values}"


def assert_ranked_by_first_column(board: AgreementBoard) -> None:
    """For every online metric: the text's two tables, the page's two tables and the
    JSON summary are sorted by their first numeric column, the ranking's LOO gain."""
    from html_tree import parse

    from abeval.report.agreement_html import render_html
    from abeval.report.agreement_text import render_text

    metrics = list(dict.fromkeys(s.online_metric for s in board.summary))
    assert metrics
    lines = render_text(board).splitlines()
    page = parse(render_html(board))
    doc = board.to_dict()
    for metric in metrics:
        for title in (f"Online metric: {metric} (", f"  Noise and prediction ({metric}):"):
            start = next(i for i, x in enumerate(lines) if x.startswith(title))
            header = lines[start + 1].split()
            assert header[:4] == ["signal", "source", "LOO", "gain"]  # ranking column first
            rows = []
            for line in lines[start + 2 :]:
                if not line.startswith("  ") or line.startswith("     ") or "predicted" in line:
                    break
                if line.startswith("  --"):
                    continue
                cells = line.split()
                rows.append((not cells[1].endswith("*"), _number(cells[2])))
            assert len(rows) == sum(1 for s in board.summary if s.online_metric == metric)
            _descending_in_groups(rows, f"text {title}")
        for table in page.find_all("table", data_metric=metric):
            if "z-scores" in table.classes():
                continue
            first = table.find("thead").find_all("th")[1]
            assert first.attrs.get("data-field") == "rank-column" and "LOO gain" in first.clean()
            rows = []
            for tr in table.find_all("tr"):
                if "data-rank" not in tr.attrs:
                    continue
                cells = tr.find_all("td")
                assert cells[0].attrs.get("data-field") == "predictive-gain"
                independent = "independent" in tr.find("span", data_field="source").classes()
                rows.append((independent, _number(cells[0].clean())))
            _descending_in_groups(rows, f"html {table.attrs.get('class')}")
        summary = [s for s in doc["summary"] if s["online_metric"] == metric]
        gains = [
            (s["independent"], s["predictive_gain"] if s["predictive_gain"] is not None else 0.0)
            for s in summary
        ]
        _descending_in_groups(gains, "json")


def test_rows_are_sorted_by_the_first_numeric_column(board: AgreementBoard) -> None:
    assert_ranked_by_first_column(board)


def test_text_answers_first_and_tags_every_row_with_its_source(board: AgreementBoard) -> None:
    from abeval.report.agreement_text import render_text

    text = render_text(board)
    lines = text.splitlines()
    answer = lines.index("Answer (ranked by the board's criterion; see Glossary):")
    assert answer < next(i for i, x in enumerate(lines) if x.startswith("Online metric:"))
    lead = lines[answer + 1]
    assert lead == (
        "  CTR: best predicted by ndcg@10 (evaluation), first by leave-one-experiment-out "
        f"predictive gain +{board.headlines[0].predictive_gain:.3f}."
    )
    rho = st.spearmanr(GOOD, ONLINE).statistic
    assert f"Spearman ρ {rho:.2f} [" in lines[answer + 2]
    assert "Indistinguishable from noise" in lines[answer + 3]
    assert "snips (off-policy)" in lines[answer + 3]
    # every table row names its source: the signal never appears alone
    for line in lines:
        cells = line.split()
        if cells and cells[0] in {"ndcg@10", "snips", "precision@10"}:
            assert cells[1] in {"evaluation", "off-policy", "replay*"}, line
    glossary = lines.index("Glossary:")
    terms = [x[2:].split(":")[0] for x in lines[glossary + 1 : lines.index("", glossary)]]
    assert {"ρ (Spearman)", "τ (Kendall)", "reliability", "ceiling", "calibration slope",
            "family-wise p", "LOO gain"} <= set(terms)  # fmt: skip


def test_page_answers_first_with_sources_and_a_glossary(board: AgreementBoard) -> None:
    from html_tree import parse

    from abeval.report.agreement_html import render_html

    html = render_html(board)
    page = parse(html)
    answer = page.find(data_field="headline", data_metric="ctr").clean()
    assert answer.startswith("CTR: best predicted by ndcg@10 (evaluation)")
    assert "snips (off-policy)" in answer
    assert html.index('id="answer"') < html.index('id="metric-ctr"')
    for table in page.find_all("table", data_metric="ctr"):
        for tr in table.find_all("tr"):
            if "data-signal" in tr.attrs:
                tag = tr.find("span", data_field="source").clean()
                expected = {"evaluation": "evaluation", "ope": "off-policy", "replay": "replay*"}
                assert tag == expected[tr.attrs["data-source"]]
    for table in page.find_all("table", class_="agreement"):  # a group row spans the table
        width = len(table.find("thead").find_all("th"))
        for td in table.find_all("td"):
            if "colspan" in td.attrs:
                assert int(td.attrs["colspan"]) == width
    terms = [dt.clean() for dt in page.find("dl", class_="glossary").find_all("dt")]
    assert {"ceiling", "reliability", "τ (Kendall)", "family-wise p"} <= set(terms)
    titles = [a.attrs["title"] for a in page.find_all("abbr") if "title" in a.attrs]
    assert any(t.startswith("the ρ a perfect predictor") for t in titles)  # the ceiling's


def test_best_signal_reason_names_the_signal_and_the_criterion(board: AgreementBoard) -> None:
    from abeval.report.agreement_words import best_signal_reason

    best = best_signal(board, "ctr")
    assert best.row is not None and best.row.spearman is not None
    assert best_signal_reason(best) == (
        "the board's best predictor of ctr: ndcg@10 (evaluation), first by "
        f"leave-one-experiment-out predictive gain +{best.row.predictive_gain:.3f}, "
        f"ρ {best.row.spearman:.2f} [{best.row.spearman_ci[0]:.2f}, "
        f"{best.row.spearman_ci[1]:.2f}]"
    )


def test_too_few_experiments_is_said_in_words() -> None:
    from abeval.report.agreement_text import render_text

    text = render_text(hand_board(2))
    assert (
        "  CTR: too few experiments to say which signal predicts it: the most any signal has "
        "is 2; a correlation needs 1 more."
    ) in text.splitlines()


def test_a_ratio_past_the_noise_ceiling_is_said_in_words(board: AgreementBoard) -> None:
    """A replayed copy of the online lift has ρ = 1 against a ceiling below 1: its
    ρ / ceiling passes 1, and every presenter says "≥ 1" (at the noise ceiling)
    rather than a ratio above 1; the JSON keeps the ratio."""
    from html_tree import parse

    from abeval.report.agreement_html import render_html
    from abeval.report.agreement_text import render_text
    from abeval.report.agreement_words import headline_words

    replayed = next(s for s in board.summary if s.source == "replay")
    assert replayed.ceiling is not None and replayed.ceiling < 1
    assert replayed.rho_over_ceiling == pytest.approx(1.0 / replayed.ceiling)
    assert replayed.rho_over_ceiling > 1
    text = render_text(board)
    row = next(
        line for line in text.splitlines() if "precision@10" in line and "%" in line and "≥" in line
    )
    assert f"{replayed.rho_over_ceiling:.2f}" not in row
    assert "  ≥ 1: at the noise ceiling; Spearman / ceiling is a ratio of two noisy" in text
    page = parse(render_html(board))
    (cell,) = [
        td
        for tr in page.find_all("tr", data_source="replay")
        for td in tr.find_all("td", data_field="rho-over-ceiling")
    ]
    assert cell.clean() == "≥ 1"
    (h,) = board.headlines
    words = headline_words(replace(h, rho_over_ceiling=1.07), "CTR")
    assert f"ρ / ceiling ≥ 1 (at the noise ceiling {h.ceiling:.2f});" in words.numbers
    assert "1.07" not in words.numbers
    assert "ρ / ceiling 0.93 " in headline_words(replace(h, rho_over_ceiling=0.93)).numbers
