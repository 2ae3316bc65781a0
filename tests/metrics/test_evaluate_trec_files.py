"""``abeval evaluate`` reads trec_eval's files: ``.qrels`` as the truth and ``.run``
as recommendations, with the same numbers as pytrec_eval; a bad line is one
line naming the file and the line; UTF-16 and UTF-32 inputs are named."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import pytrec_eval
from ingest_store import counts
from test_metrics_trec import random_case
from typer.testing import CliRunner

from abeval.analysis.evaluate import evaluate
from abeval.cli import app
from abeval.metrics import Conventions

runner = CliRunner()


def write_trec(tmp_path: Path, run: dict, qrel: dict, gz: bool = False) -> tuple[Path, Path]:
    """The case as trec_eval's files; ranks deliberately reversed (trec_eval and
    abeval read the score), fields separated by spaces and tabs."""
    run_lines = []
    for q, docs in run.items():
        for rank, (d, s) in enumerate(sorted(docs.items(), key=lambda x: x[1]), start=1):
            run_lines.append(f"{q} Q0\t{d} {rank}  {s} tag")
    qrel_lines = [f"{q}\t0 {d} {r}" for q, docs in qrel.items() for d, r in docs.items()]
    runs, qrels = tmp_path / "bm25.run", tmp_path / "judged.qrels"
    if gz:
        runs, qrels = runs.with_name("bm25.run.gz"), qrels.with_name("judged.qrels.gz")
        runs.write_bytes(gzip.compress(("\n".join(run_lines) + "\n").encode()))
        qrels.write_bytes(gzip.compress(("\n".join(qrel_lines) + "\n\n").encode()))
    else:
        runs.write_text("\n".join(run_lines) + "\n")
        qrels.write_text("\n" + "\n".join(qrel_lines) + "\n")  # a blank line is skipped
    return runs, qrels


@pytest.mark.parametrize("gz", [False, True])
def test_trec_files_give_trec_evals_numbers(tmp_path: Path, gz: bool) -> None:
    run, qrel = random_case(31)
    runs, qrels = write_trec(tmp_path, run, qrel, gz)
    measures = {"map", "ndcg_cut.10", "P.5", "recip_rank", "Rprec", "bpref"}
    expected = pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)
    result = evaluate(
        qrels,
        [runs],
        metrics=["ap", "ndcg@10", "precision@5", "mrr", "rprec", "bpref"],
        conventions=Conventions(empty="zero"),
    )
    assert result.models == ("bm25",)
    n = len(expected)
    for ours, theirs in [
        ("ap", "map"),
        ("ndcg@10", "ndcg_cut_10"),
        ("precision@5", "P_5"),
        ("mrr", "recip_rank"),
        ("rprec", "Rprec"),
        ("bpref", "bpref"),
    ]:
        mean = sum(m[theirs] for m in expected.values()) / n
        assert result.metric(ours).value == pytest.approx(mean, abs=1e-12), ours
    truth_file = result.files[0]
    assert truth_file.columns == {"user_id": "query_id", "item_id": "doc_id", "grade": "relevance"}


def _evaluate(*args: str) -> tuple[int, list[str], str]:
    result = runner.invoke(app, ["evaluate", "--k", "1", "-m", "precision", *args])
    return result.exit_code, result.stderr.splitlines(), result.stdout


@pytest.mark.parametrize(
    ("qrels", "run", "line"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", "q1 Q0 d1 1 2.0 t\n",
         "Error: t.qrels:2: 3 fields, expected lines of 4 fields: query_id iteration doc_id "
         "relevance (TREC qrels, separated by spaces or tabs); fix the line"),
        ("q1 0 d1 yes\n", "q1 Q0 d1 1 2.0 t\n",
         "Error: t.qrels:1: the relevance 'yes' is not a number; write a number as field 4 "
         "of the line"),
        ("q1 0 d1 1\n", "q1 Q0 d1 1 2.0 t\n\nq1 Q0 d2 2 high t\n",
         "Error: r.run:3: the score 'high' is not a number; write a number as field 5 of "
         "the line"),
        ("q1 0 d1 1\n", "q1 Q0 d1 1 2.0\n",
         "Error: r.run:1: 5 fields, expected lines of 6 fields: query_id Q0 doc_id rank score "
         "tag (TREC run, separated by spaces or tabs); fix the line"),
        ("\n\n", "q1 Q0 d1 1 2.0 t\n",
         "Error: t.qrels: the file has no lines; expected lines of 4 fields: query_id "
         "iteration doc_id relevance"),
    ],
)  # fmt: skip
def test_a_bad_trec_line_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, qrels: str, run: str, line: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.qrels").write_text(qrels)
    Path("r.run").write_text(run)
    code, err, out = _evaluate("-t", "t.qrels", "-r", "r.run")
    assert (code, err, out) == (1, [line], "")


def test_a_run_given_as_truth_says_which_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("r.run").write_text("q1 Q0 d1 1 2.0 t\n")
    code, err, _ = _evaluate("-t", "r.run", "-r", "r.run")
    assert code == 1
    assert err == [
        "Error: r.run: a TREC run file holds the recommendations, not the truth; "
        "give it with --recommendations"
    ]


@pytest.mark.parametrize(
    ("encoding", "name"),
    [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"), ("utf-32", "UTF-32"),
     ("utf-32-be", "UTF-32BE")],
)  # fmt: skip
@pytest.mark.parametrize("which", ["truth", "recs"])
def test_utf16_and_utf32_inputs_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding: str, name: str, which: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("truth.csv").write_text("user_id,item_id\nu1,a\n")
    Path("recs.csv").write_text("user_id,item_id,rank\nu1,a,1\n")
    target = Path(f"{which}.csv")
    target.write_bytes(target.read_text().encode(encoding))
    code, err, out = _evaluate("-t", "truth.csv", "-r", "recs.csv")
    assert (code, out) == (1, "")
    assert err == [
        f"Error: {which}.csv is {name} text; abeval reads UTF-8: convert it with "
        f"`iconv -f {name} -t UTF-8 {which}.csv > {which}.utf8.csv`"
    ]


def test_ingest_refuses_a_trec_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("r.run").write_text("q1 Q0 d1 1 2.0 t\n")
    result = runner.invoke(app, ["ingest", "r.run", "--db", "s.duckdb"])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "Error: r.run: a TREC run file is read by `abeval evaluate`, not loaded as events"
    ]
    assert counts(Path("s.duckdb")) == (0, 0, 0)
