"""``abeval evaluate --format html``: sections, numbers, escaping, self-containment.

Small recommendation, prediction and truth files are written with a seeded
generator and evaluated twice through the CLI, once as HTML and once as JSON.
The page is parsed with :mod:`html.parser` into a small tree (no byte snapshots)
and every number checked against the JSON document, formatted with the same
filters the template uses (and, for the main numbers, parsed back and compared
with the raw JSON value).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from abeval import formatting as fmt
from abeval.cli import app
from abeval.report.evaluate_html import (
    EvaluationContext,
    environment,
    signed,
    signed_interval,
)
from abeval.resources import data_dir

runner = CliRunner()

ALPHA = 0.05
#: A model file name with markup, quotes and an ampersand (no "/": it is a file name).
MARKUP_MODEL = "mo<script>alert(\"x\")&'q'"
#: User and item ids with markup.
MARKUP_USER = "u<script>\"{}\"&'x'"
MARKUP_ITEM = "<b>i{}</b>&\"'"


# --------------------------------------------------------------------------- parsing

from html_tree import VOID, Node, assert_self_contained, css_urls, parse  # noqa: E402, F401


def number_of(text: str) -> float:
    """A number printed by the filters back as a float (``+0.0123``, ``1,000``)."""
    return float(text.replace(",", "").replace("+", ""))


# --------------------------------------------------------------------------- inputs


def write_inputs(
    folder: Path, models: dict[str, float], *, markup: bool = False, duplicate: bool = False
) -> dict[str, Any]:
    """Truth for 200 users (5 graded items each), one recommendation file per model
    (users 10..214: 15 without truth, 10 truth users without a list; 20 items a list,
    the score raised by ``skill`` on relevant items) and one predictions file.
    ``duplicate`` repeats an item in two users' lists of the first model."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20240611)
    user = MARKUP_USER if markup else "u{}"
    item = MARKUP_ITEM if markup else "i{}"
    items = [item.format(j) for j in range(60)]
    grades: dict[tuple[str, str], int] = {}
    truth = folder / "truth.csv"
    with truth.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["user_id", "item_id", "rating"])
        for u in range(200):
            for j in rng.choice(len(items), 5, replace=False):
                grade = int(rng.integers(0, 6)) if u % 50 else 0  # 4 users: nothing relevant
                grades[(user.format(u), items[j])] = grade
                w.writerow([user.format(u), items[j], grade])
    rec_paths = []
    for n, (name, skill) in enumerate(models.items()):
        path = folder / f"{name}.csv"
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["user_id", "item_id", "score"])
            for u in range(10, 215):
                uid = user.format(u)
                for pos, j in enumerate(rng.choice(len(items), 20, replace=False)):
                    relevant = grades.get((uid, items[j]), 0) > 0
                    w.writerow([uid, items[j], float(rng.random()) + skill * relevant])
                    if duplicate and n == 0 and u in (20, 21) and pos == 0:
                        w.writerow([uid, items[j], 0.0])
        rec_paths.append(path)
    predictions = folder / "ratings_model.csv"
    with predictions.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["user_id", "item_id", "prediction"])
        for i, (uid, it) in enumerate(sorted(grades)):
            if i % 4:
                w.writerow([uid, it, round(float(rng.uniform(0, 5)), 3)])
        w.writerow([user.format(999), items[0], 3.0])  # a prediction without truth
    return {"truth": truth, "recommendations": rec_paths, "predictions": predictions}


def cli_args(inputs: dict[str, Any], *extra: str, predictions: bool = True) -> list[str]:
    args = ["evaluate", "--truth", str(inputs["truth"])]
    for p in inputs["recommendations"]:
        args += ["--recommendations", str(p)]
    if predictions:
        args += ["--predictions", str(inputs["predictions"])]
    return [*args, "--k", "5,10", "--resamples", "400", "--seed", "3", *extra]


@dataclasses.dataclass
class Run:
    path: Path
    result: Any  # the HTML run's click Result
    page: str
    doc: Node
    data: dict[str, Any]


def run(folder: Path, args: list[str]) -> Run:
    out = folder / "out" / "page.html"
    out.parent.mkdir(exist_ok=True)  # -o makes no folder (tests/cli/test_output_paths.py)
    html_run = runner.invoke(app, [*args, "--format", "html", "--out", str(out)])
    assert html_run.exit_code == 0, html_run.output
    json_run = runner.invoke(app, [*args, "--format", "json"])
    assert json_run.exit_code == 0, json_run.output
    page = out.read_text(encoding="utf-8")
    return Run(out, html_run, page, parse(page), json.loads(json_run.stdout))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """``main``: two models, the second much better, duplicates removed, with
    rating predictions. ``markup``: a strong baseline against a random model whose
    file name, user ids and item ids contain markup. ``single``: one model, no
    predictions."""
    out = {}
    folder = tmp_path_factory.mktemp("main")
    inputs = write_inputs(folder, {"baseline": 0.0, "better": 0.6}, duplicate=True)
    out["main"] = run(folder, cli_args(inputs, "--duplicates", "dedupe"))
    folder = tmp_path_factory.mktemp("markup")
    inputs = write_inputs(folder, {"strong": 0.6, MARKUP_MODEL: 0.0}, markup=True)
    out["markup"] = run(folder, cli_args(inputs))
    folder = tmp_path_factory.mktemp("single")
    inputs = write_inputs(folder, {"only": 0.3})
    out["single"] = run(folder, cli_args(inputs, "--metrics", "ndcg@10,mrr,auc", predictions=False))
    return out


# --------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("name", ["main", "markup", "single"])
def test_cli_writes_the_page(name: str, runs: dict[str, Run]):
    r = runs[name]
    assert r.result.exit_code == 0
    assert r.result.stdout == ""
    assert f"wrote {r.path}" in r.result.stderr.splitlines()
    assert r.path.is_file()
    assert r.page.lstrip().lower().startswith("<!doctype html>")


def test_warnings_still_go_to_stderr(runs: dict[str, Run]):
    r = runs["main"]
    assert r.data["warnings"]
    for warning in r.data["warnings"]:
        assert f"Warning: {warning}" in r.result.stderr


def test_default_out_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    inputs = write_inputs(tmp_path / "in", {"a": 0.0, "b": 0.2})
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*cli_args(inputs, predictions=False), "--format", "html"])
    assert result.exit_code == 0, result.output
    expected = Path("reports") / "evaluation.html"
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"wrote {expected}"]
    assert (tmp_path / expected).is_file()


def test_unknown_format_names_html(tmp_path: Path):
    inputs = write_inputs(tmp_path, {"a": 0.0})
    result = runner.invoke(app, [*cli_args(inputs, predictions=False), "--format", "pdf"])
    assert result.exit_code == 2  # a usage error, like every unknown choice
    assert "html" in result.stderr


# --------------------------------------------------------------------------- sections


def test_every_section_is_present(runs: dict[str, Run]):
    doc = runs["main"].doc
    assert doc.find("title").clean().startswith("Offline evaluation")
    for anchor in ("summary", "inputs", "metrics", "comparison", "ratings", "methodology"):
        doc.find(id=anchor)
    assert doc.find(id="summary").tag == "header"
    details = doc.find(id="methodology")
    assert details.tag == "details" and "open" not in details.attrs
    assert details.find("summary").find("h2").clean() == "Methodology"
    links = [a.attrs["href"] for a in doc.find("nav").find_all("a")]
    assert links == ["#inputs", "#metrics", "#comparison", "#ratings", "#methodology"]
    doc.find("footer")


def test_sections_follow_the_inputs(runs: dict[str, Run]):
    doc = runs["single"].doc
    assert not doc.find_all(id="comparison")
    assert not doc.find_all(id="ratings")
    doc.find(id="metrics")
    doc.find(id="methodology")
    links = [a.attrs["href"] for a in doc.find("nav").find_all("a")]
    assert links == ["#inputs", "#metrics", "#methodology"]


@pytest.mark.parametrize("name", ["main", "markup", "single"])
def test_header(name: str, runs: dict[str, Run]):
    r = runs[name]
    header = r.doc.find(id="summary")
    models = r.data["models"]
    assert header.field("baseline") == models[0]
    assert [n.clean() for n in header.find_all(data_field="challenger")] == models[1:]
    truth = next(f for f in r.data["files"] if f["role"] == "truth")
    assert header.field("truth-users") == fmt.count(truth["users"])
    assert header.field("cutoffs") == ("10" if name == "single" else "5, 10")
    listed = [li for li in header.find("dl").find_all("li") if "data-file" in li.attrs]
    assert [li.attrs["data-file"] for li in listed] == [f["path"] for f in r.data["files"]]
    for li, f in zip(listed, r.data["files"], strict=True):
        assert li.field("file-name") == Path(f["path"]).name
        assert li.find(data_field="file-name").attrs["title"] == f["path"]
        assert li.field("rows") == fmt.count(f["rows"])
    for cov in r.data["coverage"]:
        li = header.find("li", data_model=cov["model"])
        assert li.field("users-evaluated") == fmt.count(cov["users_evaluated"])
    conventions = header.find("dl").clean()
    for key in ("gain", "ap_denominator", "empty", "duplicates", "missing_recommendations"):
        assert r.data["conventions"][key] in conventions


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("name", ["main", "markup", "single"])
def test_inputs_match_the_json(name: str, runs: dict[str, Run]):
    r = runs[name]
    section = r.doc.find(id="inputs")
    rows = section.find("table", class_="files").find("tbody").find_all("tr")
    assert len(rows) == len(r.data["files"])
    for tr, f in zip(rows, r.data["files"], strict=True):
        assert tr.attrs["data-file"] == f["path"] and tr.attrs["data-role"] == f["role"]
        assert tr.find("th").clean() == f["path"]
        assert tr.field("rows") == fmt.count(f["rows"])
        assert tr.field("users") == (fmt.count(f["users"]) if f["users"] else "—")
        assert tr.field("duplicates") == fmt.count(f["duplicates_removed"])
    by_name = {f["name"]: f for f in r.data["files"] if f["role"] == "recommendations"}
    coverage = section.find("table", class_="coverage")
    assert len(coverage.find("tbody").find_all("tr")) == len(r.data["coverage"])
    for cov in r.data["coverage"]:
        tr = coverage.find("tr", data_model=cov["model"])
        assert tr.find("th").clean() == cov["model"]
        for key in (
            "users_in_recommendations",
            "users_evaluated",
            "users_without_truth",
            "truth_users",
            "truth_users_without_recommendations",
            "truth_users_without_relevant",
        ):
            shown = tr.field(key.replace("_", "-"))
            assert shown == fmt.count(cov[key]), key
            assert number_of(shown) == cov[key]
        assert tr.field("duplicates-removed") == fmt.count(
            by_name[cov["model"]]["duplicates_removed"]
        )
    for warning in r.data["warnings"]:
        assert warning in [n.clean() for n in section.find_all(data_field="warning")]


def test_inputs_show_what_was_left_out(runs: dict[str, Run]):
    data = runs["main"].data
    assert data["coverage"][0]["users_without_truth"] == 15
    assert data["coverage"][0]["truth_users_without_recommendations"] == 10
    assert data["coverage"][0]["truth_users_without_relevant"] == 4
    assert next(f for f in data["files"] if f["name"] == "baseline")["duplicates_removed"] == 2
    for name in ("main", "markup", "single"):
        r = runs[name]
        section = r.doc.find(id="inputs")
        expected = [
            (m["metric"], m["group"], reason, n)
            for m in r.data["metrics"]
            for reason, n in m["left_out"].items()
            if n
        ]
        table = section.find("table", class_="left-out")
        labels = list(dict.fromkeys(e[0] for e in expected))
        assert [tr.attrs["data-metric"] for tr in table.find("tbody").find_all("tr")] == labels
        found = []
        for tr in table.find("tbody").find_all("tr"):
            cells = tr.find_all("td")
            assert [td.attrs["data-model"] for td in cells] == r.data["models"]
            for td in cells:
                spans = td.find_all("span", class_="sub-inline")
                if not spans:
                    assert td.clean() == "—"
                for span in spans:
                    reason = span.attrs["data-reason"]
                    assert span.clean() == f"{span.field('count')} {reason.replace('_', ' ')}"
                    found.append(
                        (
                            tr.attrs["data-metric"],
                            td.attrs["data-model"],
                            reason,
                            span.field("count"),
                        )
                    )
        assert sorted(found) == sorted((a, b, c, fmt.count(n)) for a, b, c, n in expected)
        assert expected, name  # lists without a relevant item are always left out here


@pytest.mark.parametrize("name", ["main", "markup", "single"])
def test_metric_table_matches_the_json(name: str, runs: dict[str, Run]):
    r = runs[name]
    table = r.doc.find(id="metrics").find("table")
    header = [th.find(class_="arm-name").clean() for th in table.find("thead").find_all("th")[1:]]
    assert header == r.data["models"]
    labels = list(dict.fromkeys(m["metric"] for m in r.data["metrics"]))
    rows = table.find("tbody").find_all("tr")
    assert [tr.attrs["data-metric"] for tr in rows] == labels
    for m in r.data["metrics"]:
        tr = table.find("tr", data_metric=m["metric"])
        assert tr.field("label") == m["metric"]
        cell = tr.find("td", data_model=m["group"])
        cells = tr.find_all("td")
        assert cells.index(cell) == r.data["models"].index(m["group"])
        assert cell.field("value") == fmt.number(m["value"])
        if m["value"] is not None:
            assert math.isclose(number_of(cell.field("value")), m["value"], abs_tol=5e-4)
        if m["std_error"] is None:
            assert not cell.find_all(data_field="std-error")
        else:
            assert cell.field("std-error") == f"± {fmt.number(m['std_error'])}"
        assert cell.field("users") == fmt.count(m["users"])
        assert cell.field("lists") == fmt.count(m["lists"])
    if name == "main":
        kinds = {m["metric"] for m in r.data["metrics"] if m["std_error"] is None}
        assert "coverage@10" in kinds  # a beyond-accuracy metric: no standard error


@pytest.mark.parametrize("name", ["main", "markup"])
def test_comparisons_match_the_json(name: str, runs: dict[str, Run]):
    r = runs[name]
    section = r.doc.find(id="comparison")
    assert r.data["models"][0] in section.find("h2").clean()
    rows = [tr for tr in section.find("tbody").find_all("tr") if "data-metric" in tr.attrs]
    comparisons = r.data["comparisons"]
    assert len(comparisons) == 11  # precision, recall, ap, ndcg, hit rate at 5 and 10, mrr
    assert len(rows) == len(comparisons)
    for c in comparisons:
        tr = section.find("tr", data_metric=c["metric"], data_model=c["model"])
        assert tr.field("users") == fmt.count(c["users"])
        assert tr.field("baseline-mean") == fmt.number(c["baseline_mean"])
        assert tr.field("model-mean") == fmt.number(c["model_mean"])
        difference = tr.find(data_field="difference")
        shown = "".join(
            ch.strip() for ch in difference.children if isinstance(ch, str)
        )  # the number without the arrow and the screen-reader note
        assert shown == signed(c["difference"])
        assert math.isclose(number_of(shown), c["difference"], abs_tol=5e-5)
        assert tr.field("interval") == signed_interval([c["ci_low"], c["ci_high"]])
        lo, hi = (number_of(x) for x in tr.field("interval").strip("[]").split(", "))
        assert math.isclose(lo, c["ci_low"], abs_tol=5e-5)
        assert math.isclose(hi, c["ci_high"], abs_tol=5e-5)
        for field, key in (
            ("p-t", "p_t"),
            ("p-t-holm", "p_t_holm"),
            ("p-randomization", "p_randomization"),
            ("p-randomization-holm", "p_randomization_holm"),
        ):
            assert tr.field(field) == fmt.pvalue(c[key]), field
        for key in ("wins", "ties", "losses"):
            assert tr.field(key) == fmt.count(c[key])
        assert c["wins"] + c["ties"] + c["losses"] == c["users"]
        assert tr.find("svg", class_="ibar").attrs["role"] == "img"
    # The Holm family size is printed where the p-values are explained.
    assert f"over the {len(comparisons)} comparisons" in section.clean()


def _significant(c: dict[str, Any]) -> bool:
    return (
        c["status"] == "ok"
        and c["p_t_holm"] is not None
        and c["p_randomization_holm"] is not None
        and c["p_t_holm"] < ALPHA
        and c["p_randomization_holm"] < ALPHA
    )


@pytest.mark.parametrize("name", ["main", "markup"])
def test_colour_only_where_significant_after_correction(name: str, runs: dict[str, Run]):
    r = runs[name]
    section = r.doc.find(id="comparison")
    tones = set()
    for c in r.data["comparisons"]:
        tr = section.find("tr", data_metric=c["metric"], data_model=c["model"])
        bar = tr.find("svg", class_="ibar")
        if _significant(c):
            tone = "good" if c["difference"] > 0 else "bad"
            tones.add(tone)
            assert f"tone-{tone}" in tr.classes()
            assert tone in bar.classes()
            assert tone in tr.find(data_field="difference").classes()
        else:
            assert not {"tone-good", "tone-bad"} & tr.classes()
            assert not {"good", "bad"} & bar.classes()
    # The better model wins on every metric; the random one loses against the strong one.
    assert tones == ({"good"} if name == "main" else {"bad"})


def test_colour_needs_both_tests_after_correction(runs: dict[str, Run]):
    from abeval.analysis.evaluate import PairedComparison
    from abeval.report.evaluate_html import build_context

    data = runs["main"].data
    c = dict(data["comparisons"][0])
    base = PairedComparison(**c)
    ok = dataclasses.replace(base, p_t_holm=0.01, p_randomization_holm=0.02, difference=0.1)
    one = dataclasses.replace(ok, p_randomization_holm=0.2)
    raw_only = dataclasses.replace(ok, p_t=0.001, p_t_holm=0.06)
    result = _result_with(runs["main"], (ok, one, raw_only))
    rows = build_context(result, alpha=ALPHA).comparison.rows  # type: ignore[union-attr]
    assert [(row.significant, row.tone) for row in rows] == [
        (True, "good"),
        (False, ""),
        (False, ""),
    ]


def _result_with(r: Run, comparisons: tuple[Any, ...]) -> Any:
    """An EvaluationResult from the run's JSON with other comparisons."""
    from abeval.analysis.evaluate import EvaluationResult

    return EvaluationResult(
        models=tuple(r.data["models"]),
        files=(),
        coverage=(),
        metrics=(),
        comparisons=comparisons,
        ratings=(),
        conventions=r.data["conventions"],
    )


def test_ratings_match_the_json(runs: dict[str, Run]):
    r = runs["main"]
    section = r.doc.find(id="ratings")
    ratings = r.data["ratings"]
    assert [x["metric"] for x in ratings] == ["rmse", "mae"]
    rows = [tr for tr in section.find("tbody").find_all("tr") if "data-metric" in tr.attrs]
    assert len(rows) == len(ratings)
    for x in ratings:
        tr = section.find("tr", data_metric=x["metric"], data_model=x["model"])
        assert tr.field("value") == fmt.number(x["value"])
        assert math.isclose(number_of(tr.field("value")), x["value"], abs_tol=5e-3)
        assert tr.field("pairs-predicted") == fmt.count(x["pairs_predicted"])
        assert tr.field("truth-pairs") == fmt.count(x["truth_pairs"])
        assert tr.field("share-predicted") == fmt.share(x["coverage"])
        assert tr.field("predictions-without-truth") == fmt.count(x["predictions_without_truth"])
    assert ratings[0]["predictions_without_truth"] == 1


@pytest.mark.parametrize("name", ["main", "single"])
def test_methodology_holds_the_conventions_and_notes(name: str, runs: dict[str, Run]):
    r = runs[name]
    details = r.doc.find(id="methodology")
    rows = details.find("table", class_="conventions").find_all("tr")
    assert {tr.attrs["data-convention"]: tr.find("td").clean() for tr in rows} == {
        k: " ".join(str(v).split()) for k, v in r.data["conventions"].items()
    }
    notes = [li.clean() for li in details.find("ul", class_="notes").find_all("li")]
    assert any("standard error" in n for n in notes)
    holm = [n for n in notes if "Holm" in n]
    if name == "main":
        assert holm and f"all {len(r.data['comparisons'])} (metric, model)" in holm[0]
        assert any("400 sign-flip resamples (seed 3)" in n for n in notes)
        assert any("RMSE and MAE" in n for n in notes)
    else:
        assert not holm
    labels = [tr.attrs["data-metric"] for tr in details.find("table", class_="definitions")
              .find("tbody").find_all("tr")]  # fmt: skip
    metrics = list(dict.fromkeys(m["metric"] for m in r.data["metrics"]))
    assert labels == metrics + list(dict.fromkeys(x["metric"] for x in r.data["ratings"]))


# --------------------------------------------------------------------------- escaping


def test_names_with_markup_are_text(runs: dict[str, Run]):
    r = runs["markup"]
    doc, page = r.doc, r.page
    assert r.data["models"][1] == MARKUP_MODEL
    # The ids with markup went through (the truth file has 200 users, all read).
    assert next(f for f in r.data["files"] if f["role"] == "truth")["users"] == 200
    tags = {n.tag for n in doc.iter()}
    assert not tags & {"script", "b", "iframe", "object", "embed", "link", "img"}
    assert "<script" not in page.lower() and "<b>" not in page.lower()
    names = [n.text() for n in doc.find_all(class_="arm-name")]
    assert names.count(MARKUP_MODEL) >= 4  # header, inputs, metrics, comparison
    assert doc.find(id="summary").field("challenger") == MARKUP_MODEL
    assert doc.find(id="comparison").find_all("tr", data_model=MARKUP_MODEL)
    path = next(f["path"] for f in r.data["files"] if f["name"] == MARKUP_MODEL)
    assert doc.find("tr", data_file=path).find("th").text() == path
    assert "&lt;script&gt;" in page and "&amp;" in page


# --------------------------------------------------------------------------- self-contained

EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


@pytest.mark.parametrize("name", ["main", "markup", "single"])
def test_self_contained(name: str, runs: dict[str, Run]):
    page, doc = runs[name].page, runs[name].doc
    css = assert_self_contained(doc)
    # The experiment report's stylesheet, inlined as it is.
    assert css.strip() == (data_dir("reports") / "report.css").read_text("utf-8").strip()
    assert "@import" not in css and "@font-face" not in css
    assert css_urls(css) == []
    assert all(not EXTERNAL.match(u) for u in css_urls(page))
    assert "@media print" in css


# --------------------------------------------------------------------------- plumbing


def test_environment_is_strict_and_escapes():
    from jinja2 import StrictUndefined

    from abeval.report.html import environment as report_environment

    env = environment()
    assert env.autoescape is True
    assert env.undefined is StrictUndefined
    loader_paths = [Path(p) for p in env.loader.searchpath]  # type: ignore[union-attr]
    assert loader_paths == [data_dir("reports")]
    assert (data_dir("reports") / "evaluate.html.j2").is_file()
    for name, f in fmt.FILTERS.items():
        assert env.filters[name] is f
    # The extra filters do not leak into the experiment report's environment.
    assert "signed" in env.filters and "signed" not in report_environment().filters


def test_context_documents_every_key():
    doc = EvaluationContext.__doc__ or ""
    for field in dataclasses.fields(EvaluationContext):
        assert f"``{field.name}``" in doc, field.name


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.012345, "+0.0123"),
        (-0.0181, "-0.0181"),
        (0.0, "0.0000"),
        (1.5, "+1.500"),
        (None, "n/a"),
    ],
)
def test_signed(value: float | None, expected: str):
    assert signed(value) == expected


def test_signed_interval():
    assert signed_interval((-0.0458, 0.0097)) == "[-0.0458, +0.0097]"
    assert signed_interval(None) == "n/a"


def test_predictions_only(tmp_path: Path):
    inputs = write_inputs(tmp_path, {})
    args = [
        "evaluate",
        "--truth",
        str(inputs["truth"]),
        "--predictions",
        str(inputs["predictions"]),
    ]
    r = run(tmp_path, args)
    doc = r.doc
    assert not doc.find_all(id="metrics") and not doc.find_all(id="comparison")
    assert not doc.find_all(data_field="baseline")
    assert [n.clean() for n in doc.find(id="summary").find_all(data_field="model")] == r.data[
        "models"
    ]
    section = doc.find(id="ratings")
    for x in r.data["ratings"]:
        tr = section.find("tr", data_metric=x["metric"], data_model=x["model"])
        assert tr.field("value") == fmt.number(x["value"])
    assert doc.find(id="inputs").field("left-out-none")
