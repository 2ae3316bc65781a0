"""No secret shown when a PostgreSQL store fails in the middle of a command
(issue 38, item 1). The store's URL carries a password and a secret query
parameter; each writing command runs once to count the statements and commits it
sends, then once for each of them with the database taken away just before it
(connections refused, open ones terminated, as a server stopped mid-run). Whatever
the command prints, and any file it writes, must hold neither secret; a fault of
the store is one line, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from abeval.analysis.evaluate.record import NotRecorded
from abeval.cli import app
from abeval.errors import StoreError

runner = CliRunner()
PASSWORD = "Pg5ecretPassw0rd"
TOKEN = "Pg5ecretT0ken"
EVENTS = "experiment,arm,user_id,ts,event_type\n" + "".join(
    f"e1,{arm},{arm}{i},2024-05-0{1 + i % 3},exposure\n" for arm in ("a", "b") for i in range(6)
)
RUNS = "user_id,item_id,rank\n" + "".join(f"{a}{i},i{i},1\n" for a in "ab" for i in range(6))
TRUTH = "user_id,item_id,relevance\n" + "".join(f"{a}{i},i{i},1\n" for a in "ab" for i in range(6))
RAW_EVENTS = (
    "CREATE TABLE raw_events AS SELECT 'e1'::text AS experiment, 'a'::text AS arm, "
    "'u1'::text AS user_id, TIMESTAMP '2024-05-01' AS ts, 'click'::text AS event_type"
)
METRICS = '[team_clicks]\nkind = "mean"\nevent = "exposure"\n'


class Breaker:
    """Counts the statements and commits of every engine; takes the database away
    just before the ``at``-th one."""

    def __init__(self, server: Any, database: str) -> None:
        self.server = server
        self.database = database
        self.count = 0
        self.at = 0

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1
        if self.count == self.at:
            self.server._admin(f"ALTER DATABASE {self.database} ALLOW_CONNECTIONS false")
            self.server._admin(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE datname = '{self.database}'"
            )

    def restore(self) -> None:
        self.server._admin(f"ALTER DATABASE {self.database} ALLOW_CONNECTIONS true")


@pytest.fixture
def breaker(postgres_server: Any, postgres_database: str) -> Iterator[Breaker]:
    found = Breaker(postgres_server, postgres_database.rsplit("/", 1)[1])
    event.listen(Engine, "before_cursor_execute", found)
    event.listen(Engine, "commit", found)
    try:
        yield found
    finally:
        event.remove(Engine, "before_cursor_execute", found)
        event.remove(Engine, "commit", found)
        found.restore()


def _writing_commands(tmp: Path) -> list[tuple[list[str], list[str]]]:
    """``(setup, command)``: the setup runs, unbroken, before each trial."""
    for name, data in (("e.csv", EVENTS), ("r.csv", RUNS), ("t.csv", TRUTH), ("m.toml", METRICS)):
        (tmp / name).write_text(data)
    evaluate = ["evaluate", "-t", str(tmp / "t.csv"), "-r", f"a={tmp / 'r.csv'}"]
    add_source = ["source", "add", "s", "--table", "raw_events", "--replace"]
    set_control = ["experiment", "set", "e1", "--control", "a"]
    return [
        ([], ["ingest", str(tmp / "e.csv")]),
        ([], set_control),
        ([], ["metrics", "add", str(tmp / "m.toml")]),
        ([], add_source),
        (add_source, ["source", "remove", "s"]),
        ([], [*evaluate, "--experiment", "e1", "--format", "json", "-o", str(tmp / "out.json")]),
        (set_control, ["experiment", "unset", "e1", "--control"]),
    ]


def _secret_free(shown: str) -> bool:
    return PASSWORD not in shown and TOKEN not in shown


def _sweep(breaker: Breaker, url: str, setup: list[str], args: list[str], tally: list[int]) -> None:
    """Run ``args`` clean, then once with the store taken away before each statement
    or commit it sends."""
    breaker.count, breaker.at = 0, 0
    if setup:
        assert runner.invoke(app, [*setup, "--db", url]).exit_code == 0, setup
        breaker.count = 0
    clean = runner.invoke(app, [*args, "--db", url])
    assert clean.exit_code == 0, (args, clean.output)
    total = breaker.count
    assert total > 0, args
    for at in range(1, total + 1):
        breaker.at = 0
        if setup:
            assert runner.invoke(app, [*setup, "--db", url]).exit_code == 0, setup
        breaker.count, breaker.at = 0, at
        result = runner.invoke(app, [*args, "--db", url])
        breaker.restore()
        tally[0] += 1
        shown = result.stdout + result.stderr
        assert _secret_free(shown), (args, at, shown)
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, at)
        if result.exit_code != 0:
            tally[1] += 1
            assert "Traceback" not in shown, (args, at, shown)
            if "the store" in shown:  # named, masked
                assert "***" in shown, (args, at, shown)


@pytest.mark.slow
@pytest.mark.postgres
def test_a_store_failing_at_each_stage_of_each_writing_command_shows_no_secret(
    tmp_path: Path, postgres_database: str, breaker: Breaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, _, rest = postgres_database.partition("@")
    url = f"{host}:{PASSWORD}@{rest}?sslpassword={TOKEN}"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # where a kept evaluation goes
    commands = _writing_commands(tmp_path)
    first = runner.invoke(app, ["migrate", "--db", url])
    assert first.exit_code == 0, first.output
    with create_engine(postgres_database).begin() as conn:
        conn.execute(text(RAW_EVENTS))
    tally = [0, 0]  # trials, failures
    for setup, args in commands:
        _sweep(breaker, url, setup, args, tally)
    kept = sorted(work.glob("evaluation-*.json"))  # kept by the evaluations not recorded
    assert kept
    _sweep(breaker, url, [], ["experiment", "record", str(kept[0])], tally)
    for written in list(tmp_path.rglob("*")):
        if written.is_file():
            assert _secret_free(written.read_text(errors="replace")), written
    assert tally[1] > 0 and tally[0] > len(commands)


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://alice:{PASSWORD}@db.example:5432/abeval?sslpassword={TOKEN}",
        f"sc://spark.example:15002/;user_id=alice;token={TOKEN}",
        f"sc://alice:{PASSWORD}@spark.example:15002/;token={TOKEN}",
    ],
)
def test_the_way_to_record_a_kept_evaluation_names_the_store_masked(
    url: str, tmp_path: Path
) -> None:
    kept = tmp_path / "kept.json"
    cause = StoreError("the store failed: server closed the connection unexpectedly")
    message = NotRecorded(cause, kept, url).message
    assert _secret_free(message), message
    assert "record it with abeval experiment record" in message
    assert "***" in message and ".example:" in message


def test_a_store_given_without_an_experiment_is_named_masked(tmp_path: Path) -> None:
    from abeval import api
    from abeval.errors import OptionError

    (tmp_path / "r.csv").write_text(RUNS)
    url = f"postgresql+psycopg://alice:{PASSWORD}@db.example/abeval?sslpassword={TOKEN}"
    with pytest.raises(OptionError) as caught:
        api.evaluate(tmp_path / "r.csv", [tmp_path / "r.csv"], db=url)
    assert _secret_free(caught.value.message) and _secret_free(caught.value.line("--db"))
    assert "db.example" in caught.value.message


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_an_evaluation_not_recorded_is_still_written_where_o_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Issue 38, item 6: ``-o FILE`` is written even when the record fails."""
    import abeval.analysis.evaluate.record as record

    def refuse(*_args: Any, **_kwargs: Any) -> int:
        raise StoreError("the store failed: server closed the connection unexpectedly")

    monkeypatch.chdir(tmp_path)
    _writing_commands(tmp_path)  # the files
    db = str(tmp_path / "s.duckdb")
    ingest = runner.invoke(app, ["ingest", str(tmp_path / "e.csv"), "--db", db])
    assert ingest.exit_code == 0, ingest.output
    control = runner.invoke(app, ["experiment", "set", "e1", "--control", "a", "--db", db])
    assert control.exit_code == 0, control.output
    monkeypatch.setattr(record, "record_evaluation", refuse)
    out = tmp_path / f"out.{fmt}"
    args = ["evaluate", "-t", str(tmp_path / "t.csv"), "-r", f"a={tmp_path / 'r.csv'}"]
    result = runner.invoke(app, [*args, "-e", "e1", "-f", fmt, "-o", str(out), "--db", db])
    assert result.exit_code == 1
    assert "the evaluation finished but was not recorded" in result.stderr
    assert out.is_file() and f"wrote {out}" in result.stderr
    if fmt == "json":
        written = json.loads(out.read_text())
        assert written["recorded"] is None and written["models"]
    assert list(tmp_path.glob("evaluation-*.json"))  # and kept, to record later
