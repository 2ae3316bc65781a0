"""The API behind the CLI's other commands (docs/python.md): rejects, migrate,
sources, saved settings, power by hand, forecasts and the presenters give what
the commands print, and their checks name the library's parameters."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import duckdb
import pytest
from scipy.stats import norm
from typer.testing import CliRunner

import abeval
from abeval import api, render
from abeval.cli import app
from abeval.errors import AbevalError, OptionError

runner = CliRunner()
HEADER = "experiment,arm,user_id,ts,event_type,request_id,item_id,position,value,event_id"
ROWS = [
    "e1,control,u1,2024-05-01T10:00:00Z,exposure,,,,,",
    "e1,control,u1,2024-05-01T10:01:00Z,impression,r1,i1,1,,",
    "e1,treatment,u2,2024-05-01T10:00:00Z,exposure,,,,,",
    "e1,treatment,u2,yesterday,click,,,,,",
    "e1,treatment,u3,2024-05-01T10:00:00Z,exposure,,,,,",
]


@pytest.fixture
def db(tmp_path: Path) -> str:
    events = tmp_path / "events.csv"
    events.write_text("\n".join([HEADER, *ROWS]) + "\n")
    path = str(tmp_path / "store.duckdb")
    with abeval.open(path) as store:
        summary = store.ingest(events, on_error="skip")
    assert (summary.rows_read, summary.rejected) == (5, 1)
    return path


def test_rejects_lists_the_bad_row_as_the_cli_does(db: str) -> None:
    with abeval.open(db, read_only=True) as store:
        rows = store.rejects()
        assert store.rejects(ingest=99) == []
        with pytest.raises(OptionError) as caught:
            store.rejects(limit=0)
    assert caught.value.parameter == "limit"
    (row,) = rows
    # The fourth data row of the file is line 5 (the header is line 1).
    assert (row.ingest_id, row.line, row.column, row.format) == (1, 5, "ts", "csv")
    assert "yesterday" in row.reason or "timestamp" in row.reason
    cli = runner.invoke(app, ["rejects", "--db", db, "-f", "json"])
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.stdout) == [row.to_dict()]
    assert list(row.to_dict()) == ["ingest_id", "file", "line", "column", "reason", "raw"]


def test_migrate_applies_nothing_to_a_store_up_to_date(db: str) -> None:
    with abeval.open(db, migrate=False) as store:
        assert store.migrate() == []


def test_a_missing_store_is_not_created_when_create_is_false(tmp_path: Path) -> None:
    with pytest.raises(AbevalError):
        abeval.open(tmp_path / "none.duckdb", create=False)
    assert not (tmp_path / "none.duckdb").exists()


def test_settings_set_and_unset(db: str) -> None:
    with abeval.open(db) as store:
        settings, config, targets = store.set(
            "e1", control="control", guardrails="impressions_per_user:3%", cuped_days=0
        )
        assert targets is None
        assert settings.control_arm == "control"
        assert config.cuped_days == 0
        assert [(g.metric, g.margin) for g in config.guardrails or ()] == [
            ("impressions_per_user", pytest.approx(0.03))
        ]
        shown, saved = store.settings("e1")
        assert shown.control_arm == "control" and saved == config
        lines = render.config_lines(saved)
        assert any(line.startswith("guardrails: ") for line in lines)
        assert any(line.startswith("cuped-days: ") for line in lines)
        _, left = store.unset("e1", ["guardrails"])
        assert left.guardrails is None and left.cuped_days == 0
        with pytest.raises(AbevalError, match="nope"):
            store.settings("nope")
        with pytest.raises(OptionError) as caught:
            store.set("e1", window_from="2024-05-02", window_to="2024-05-01")
    assert caught.value.parameter == "window_to"
    assert render.recordable_options()["cuped_days"] == "--cuped-days"


def test_sources_add_list_remove(db: str, tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    with table.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arm", "uid", "event_time", "event_type", "request_id", "item_id"])
        w.writerow(["control", "v1", "2024-05-01 10:00:00", "exposure", "", ""])
        w.writerow(["treatment", "v2", "2024-05-01 10:00:00", "exposure", "", ""])
    with abeval.open(db) as store:
        check = store.add_source(
            "t", table=str(table), columns="user_id=uid,ts=event_time", experiment="e2"
        )
        assert check.events == {"e2": 2}
        (source,) = store.sources()
        assert source.name == "t" and source.table == str(table)
        assert render.mapping_dict(source.mapping)["columns"] == {
            "user_id": "uid",
            "ts": "event_time",
        }
        assert "uid" in render.mapping_text(source.mapping)
        assert store.remove_source("t").name == "t"
        assert store.sources() == []


@pytest.mark.parametrize(
    ("parts", "parameter"),
    [
        ({"table": " "}, "table"),
        ({"table": "t", "columns": "user_id"}, "columns"),
        ({"table": "t", "columns": "experiment=e", "experiment_column": "x"}, "experiment_column"),
        ({"table": "t", "experiment_column": "x", "experiment": "e"}, "experiment"),
        ({"table": "t", "experiment": " "}, "experiment"),
    ],
)
def test_a_bad_mapping_names_its_part(parts: dict[str, str], parameter: str) -> None:
    with pytest.raises(OptionError) as caught:
        api.source_mapping(**parts)
    assert caught.value.parameter == parameter


def test_plan_power_by_hand_is_the_textbook_sample_size() -> None:
    # Two arms, a proportion p = 0.05, a relative lift of 10%: δ = 0.005 and
    # n per arm = (z₁₋α/₂ + z_power)² · 2 p(1 − p) / δ² (the pooled-variance z-test).
    p, lift = 0.05, 0.10
    z = norm.ppf(1 - 0.05 / 2) + norm.ppf(0.8)
    expected = z**2 * 2 * p * (1 - p) / (p * lift) ** 2
    result = api.plan_power(p, mde=lift)
    assert result.status == "ok"
    assert result.users_by_arm[0] == math.ceil(expected)
    back = api.plan_power(p, users=math.ceil(expected))
    assert back.mde_relative == pytest.approx(lift, rel=1e-3)
    with pytest.raises(OptionError):
        api.plan_power(p, mde=lift, users=1000)


def test_power_by_hand_is_the_cli_json() -> None:
    cli = runner.invoke(app, ["power", "--baseline", "2.5", "--sd", "4", "--mde", "0.05", "--json"])
    assert cli.exit_code == 0, cli.output
    mine = api.plan_power(2.5, sd=4, mde=0.05).to_dict()
    assert json.loads(cli.stdout) == json.loads(json.dumps(mine)) | {
        "metric_kind": "mean",
        "days": None,
    }


def _history(path: Path) -> Path:
    # Ten past experiments on one signal: online lift = 0.8 × offline lift.
    rows = [
        {
            "experiment": f"exp-{i}",
            "signal": "ndcg@10",
            "offline_lift": 0.004 * (i - 3),
            "offline_se": 0.003,
            "online_lift": 0.0032 * (i - 3) + (0.002 if i % 2 else -0.002),
            "online_se": 0.004,
        }
        for i in range(10)
    ]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def test_forecast_history_is_the_cli_forecast(tmp_path: Path) -> None:
    history = _history(tmp_path / "h.csv")
    evidence = api.forecast_evidence(offline_lift=0.01, offline_se=0.002)
    report = api.forecast_history(history, evidence, mde=0.01)
    args = ["forecast", "--history", str(history), "--offline-lift", "0.01"]
    args += ["--offline-se", "0.002", "--mde", "0.01"]
    for fmt, mine in (("json", None), ("text", render.text(report))):
        cli = runner.invoke(app, [*args, "-f", fmt])
        assert cli.exit_code == 0, cli.output
        if mine is None:
            document = json.loads(json.dumps(render.json_document(report)))
            from_cli = json.loads(cli.stdout)
            # generated_at is each run's moment; everything else is the same.
            assert from_cli.pop("generated_at") and document.pop("generated_at")
            assert from_cli == document
        else:
            assert cli.stdout == mine + ("" if mine.endswith("\n") else "\n")
    assert render.page_path(report) == Path("reports") / "forecast.html"
    assert render.html(report).lstrip().lower().startswith("<!doctype html>")


def test_forecast_options_are_checked_by_name() -> None:
    with pytest.raises(OptionError) as caught:
        api.forecast_options(primary="Not A Metric")
    assert caught.value.parameter == "primary"
    for bad in ({"mde": 0.0}, {"assurance": 1.0}, {"alpha": 0.0}, {"users_per_day": -1.0}):
        with pytest.raises(OptionError) as caught:
            api.forecast_options(**bad)  # type: ignore[arg-type]
        assert caught.value.parameter == next(iter(bad))
    with pytest.raises(OptionError) as caught:
        api.forecast_evidence(offline_lift=0.01)
    assert caught.value.parameter == "offline_se"


def test_forecast_s_misspelt_primary_names_the_option_once(tmp_path: Path) -> None:
    history = _history(tmp_path / "h.csv")
    args = ["forecast", "--history", str(history), "--offline-lift", "0.01", "--offline-se", "0"]
    cli = runner.invoke(app, [*args, "--primary", "Foo"])
    assert cli.exit_code == 2
    assert cli.stderr.startswith("Error: --primary 'Foo': unknown metric 'Foo'")


def test_helpers_parse_as_the_cli_does() -> None:
    assert api.cutoffs("10,5") == (5, 10)
    assert api.metric_names(None, "primary") == ("ctr", "conversion")
    assert api.metric_names(None, "metric", default=False) == ()
    with pytest.raises(OptionError) as caught:
        api.metric_names("CTR", "metric")
    assert caught.value.parameter == "metric"
    assert api.parse_bound("2024-05-01", end=True).isoformat() == "2024-05-02T00:00:00"
    with pytest.raises(ValueError):
        api.parse_bound("yesterday", end=False)


def test_named_models_split_as_the_cli_does(tmp_path: Path) -> None:
    run = tmp_path / "bm25.csv"
    run.write_text("user_id,item_id,rank\n")
    assert api.named_models([str(run), f"new={run}"]) == {"bm25": str(run), "new": str(run)}
    assert api.model_argument(f"x={run}") == ("x", str(run))
    with pytest.raises(ValueError):
        api.named_models([f"a={run}", f"a={run}"])


def test_render_refuses_what_it_cannot_present() -> None:
    with pytest.raises(TypeError, match="no presenter for dict"):
        render.text({})


def test_render_dispatches_on_the_type_not_its_name() -> None:
    class ForecastReport:  # a result type's name, not the type
        experiment = "x"

    for present in (render.text, render.html, render.json_document, render.page_path):
        with pytest.raises(TypeError, match="no presenter for ForecastReport"):
            present(ForecastReport())


def test_write_is_whole_or_nothing(tmp_path: Path) -> None:
    render.write(tmp_path / "a" / "page.html", "<p>", make_folders=True)
    assert (tmp_path / "a" / "page.html").read_text() == "<p>"
    (tmp_path / "file").write_text("x")
    with pytest.raises(AbevalError):
        render.write(tmp_path / "file" / "page.html", "<p>")
    assert not (tmp_path / "file" / "page.html").exists()


def test_evaluate_records_in_a_store_only_with_an_experiment(tmp_path: Path) -> None:
    with pytest.raises(OptionError) as caught:
        abeval.evaluate("truth.csv", {"a": "run.csv"}, db=str(tmp_path / "s.duckdb"))
    assert caught.value.parameter == "db"
    assert not (tmp_path / "s.duckdb").exists()


def test_ingest_of_a_frame_accounts_rows_as_the_file_does(tmp_path: Path) -> None:
    """The same rows as a CSV file and as a DataFrame: the same counts, the same
    rejected row and reason (the frame's row where the file's line), the same events."""
    import pandas as pd

    frame = pd.DataFrame(
        [[v or None for v in row.split(",")] for row in ROWS], columns=HEADER.split(",")
    )
    events = tmp_path / "events.csv"
    events.write_text("\n".join([HEADER, *ROWS]) + "\n")
    summaries, rejects, stored = [], [], []
    for given, name in ((events, "file"), (frame, "frame")):
        path = tmp_path / f"{name}.duckdb"
        with abeval.open(path) as store:
            summaries.append(store.ingest(given, on_error="skip"))
            rejects.append(store.rejects())
            again = store.ingest(given, on_error="skip")
        con = duckdb.connect(str(path), read_only=True)
        stored.append(
            con.execute(
                "SELECT experiment, arm, user_id, event_type, ts FROM events ORDER BY ALL"
            ).fetchall()
        )
        con.close()
        assert again.inserted == 0  # loading it again adds nothing
    from_file, from_frame = summaries
    # 5 rows, the one with ts 'yesterday' rejected, 4 loaded
    assert (from_frame.rows_read, from_frame.inserted, from_frame.rejected) == (5, 4, 1)
    assert (from_frame.status, from_frame.duplicates) == (from_file.status, from_file.duplicates)
    assert (from_file.rows_read, from_file.inserted, from_file.rejected) == (5, 4, 1)
    assert from_frame.file == "DataFrame"
    (file_row,), (frame_row,) = rejects
    assert (file_row.line, frame_row.line) == (5, 4)  # line 5 of the file, its 4th data row
    assert (frame_row.column, frame_row.reason) == (file_row.column, file_row.reason)
    assert stored[0] == stored[1] and len(stored[0]) == 4


def test_ingest_of_what_is_neither_file_nor_frame_is_one_line(tmp_path: Path) -> None:
    with abeval.open(tmp_path / "s.duckdb") as store, pytest.raises(AbevalError) as caught:
        store.ingest([1, 2])  # type: ignore[arg-type]
    assert str(caught.value) == (
        "path: expected a file path, a pandas DataFrame or a pyarrow Table, got list"
    )
