"""Schema migrations: every step recorded, older stores upgraded with their data,
a failing step rolled back entirely, read-only opens of outdated stores refused with
the command that upgrades them."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from typer.testing import CliRunner

from abeval.cli import app
from abeval.errors import StoreError
from abeval.resources import data_dir
from abeval.store import Database, open_store
from abeval.store.migrate import apply, available, ensure_current, pending

runner = CliRunner()
SHIPPED = data_dir("migrations")
#: The shipped steps, ``0001_initial`` first.
STEPS = sorted(p.stem for p in SHIPPED.glob("*.sql"))


def recorded(store: Database) -> list[tuple[int, str]]:
    with store.connect() as conn:
        return [
            (int(v), str(n))
            for v, n in conn.execute(
                text("SELECT version, name FROM schema_migrations ORDER BY version")
            )
        ]


def tables(store: Database) -> set[str]:
    with store.connect() as conn:
        return set(inspect(conn).get_table_names())


def folder(tmp_path: Path, name: str, steps: dict[str, str]) -> Path:
    """A migrations folder: the shipped step 1 plus ``steps`` {file name: SQL}."""
    out = tmp_path / name
    out.mkdir()
    shutil.copy(SHIPPED / "0001_initial.sql", out)
    for file, sql in steps.items():
        (out / file).write_text(sql)
    return out


@pytest.fixture
def old_store(tmp_path: Path) -> Iterator[tuple[Path, Database]]:
    """A store at schema step 1 only, holding two events (written as step 1's
    ingest wrote them: today's ingest needs the later steps' columns)."""
    db = tmp_path / "old.duckdb"
    store = open_store(str(db), migrate=False)
    assert [m.version for m in apply(store, folder(tmp_path, "v1", {}))] == [1]
    with store.begin() as conn:
        for arm, user in (("A", "u1"), ("B", "u2")):
            conn.execute(
                text(
                    "INSERT INTO events (experiment, arm, user_id, ts, event_type, ingest_id) "
                    "VALUES ('e1', :a, :u, TIMESTAMP '2024-05-01 00:00:00', 'exposure', 1)"
                ),
                {"a": arm, "u": user},
            )
        conn.execute(
            text(
                "INSERT INTO experiments (experiment, arms, updated_at) "
                "VALUES ('e1', 'A,B', TIMESTAMP '2024-05-01 00:00:00')"
            )
        )
    yield db, store
    store.close()


def test_a_fresh_store_records_every_step(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "new.duckdb"))
    try:
        assert recorded(store) == [(m.version, m.name) for m in available()]
        assert recorded(store)[0] == (1, "initial")
        assert {"events", "ingests", "rejected_rows", "experiments", "schema_migrations"} <= tables(
            store
        )
        assert pending(store) == []
        with store.connect() as conn:
            applied_at = conn.execute(text("SELECT applied_at FROM schema_migrations")).scalar()
        assert applied_at is not None
    finally:
        store.close()


def test_an_older_store_is_upgraded_and_keeps_its_data(
    tmp_path: Path, old_store: tuple[Path, Database]
) -> None:
    _, store = old_store
    v2 = folder(
        tmp_path,
        "v2",
        {
            "0002_notes.sql": "-- step 2: notes on experiments\n"
            "ALTER TABLE experiments ADD COLUMN notes TEXT;\n"
            "CREATE TABLE notes_log (experiment TEXT NOT NULL, note TEXT);\n"
            "INSERT INTO notes_log SELECT experiment, 'upgraded' FROM experiments;\n",
        },
    )
    assert [m.name for m in pending(store, v2)] == ["notes"]
    assert [m.version for m in apply(store, v2)] == [2]
    assert recorded(store) == [(1, "initial"), (2, "notes")]
    with store.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM events")).scalar() == 2
        assert conn.execute(text("SELECT experiment, note FROM notes_log")).fetchall() == [
            ("e1", "upgraded")
        ]
        assert conn.execute(text("SELECT notes FROM experiments")).fetchall() == [(None,)]
    # Applying again does nothing.
    assert apply(store, v2) == []


def test_a_failing_step_is_rolled_back_entirely(
    tmp_path: Path, old_store: tuple[Path, Database]
) -> None:
    _, store = old_store
    broken = folder(
        tmp_path,
        "broken",
        {
            "0002_fine.sql": "CREATE TABLE fine (x INTEGER);\n",
            "0003_broken.sql": "CREATE TABLE half_done (x INTEGER);\n"
            "INSERT INTO half_done VALUES (1);\n"
            "ALTER TABLE events ADD COLUMN extra TEXT;\n"
            "INSERT INTO no_such_table VALUES (1);\n",
        },
    )
    with pytest.raises(StoreError) as caught:
        apply(store, broken)
    message = caught.value.message
    assert message.startswith("migration 0003_broken failed and was rolled back: ")
    assert "no_such_table" in message
    # Step 2 stays applied; nothing of step 3 is left, and it is not recorded.
    assert recorded(store) == [(1, "initial"), (2, "fine")]
    assert "fine" in tables(store)
    assert "half_done" not in tables(store)
    with store.connect() as conn:
        columns = [c["name"] for c in inspect(conn).get_columns("events")]
        assert "extra" not in columns
        assert conn.execute(text("SELECT count(*) FROM events")).scalar() == 2
    assert [m.name for m in pending(store, broken)] == ["broken"]


def test_two_steps_with_one_number_are_refused(tmp_path: Path) -> None:
    clash = folder(tmp_path, "clash", {"0001_again.sql": "SELECT 1;\n"})
    with pytest.raises(StoreError, match="two migrations share a number"):
        available(clash)


def test_read_only_open_of_an_outdated_store_names_the_command(
    tmp_path: Path, old_store: tuple[Path, Database]
) -> None:
    db, store = old_store
    v2 = folder(tmp_path, "v2", {"0002_notes.sql": "CREATE TABLE notes (x TEXT);\n"})
    store.close()
    reader = open_store(str(db), read_only=True, migrate=False)  # at step 1 of v2
    try:
        with pytest.raises(StoreError) as caught:
            ensure_current(reader, v2)
        assert caught.value.message == (
            f"the store {db} needs schema upgrades (0002_notes); run `abeval migrate --db {db}`"
        )
        assert "notes" not in tables(reader)
    finally:
        reader.close()


def test_read_only_commands_refuse_a_store_without_the_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store created by an older abeval (here: before any step) is not upgraded
    behind the user's back by a read-only command; `abeval migrate` upgrades it."""
    monkeypatch.chdir(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    store = open_store("old.duckdb", migrate=False)
    assert apply(store, empty) == []
    store.close()
    db = tmp_path / "old.duckdb"

    result = runner.invoke(app, ["experiments", "--db", "old.duckdb"])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: the store {db} needs schema upgrades ({', '.join(STEPS)}); "
        f"run `abeval migrate --db {db}`\n"
    )
    result = runner.invoke(app, ["migrate", "--db", "old.duckdb"])
    assert (result.exit_code, result.stderr) == (0, "".join(f"applied {s}\n" for s in STEPS))
    result = runner.invoke(app, ["experiments", "--db", "old.duckdb"])
    assert (result.exit_code, result.stdout) == (
        0,
        "no experiments; load events with `abeval ingest FILE`\n",
    )


def test_migrate_command_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["migrate", "--db", "s.duckdb"])
    applied = "".join(f"applied {s}\n" for s in STEPS)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", applied)
    result = runner.invoke(app, ["migrate", "--db", "s.duckdb"])
    assert (result.exit_code, result.stderr) == (0, f"{tmp_path / 's.duckdb'} is up to date\n")


def test_a_writable_open_upgrades(tmp_path: Path) -> None:
    """Opening an older store for writing (any command that writes) upgrades it."""
    empty = tmp_path / "empty"
    empty.mkdir()
    store = open_store(str(tmp_path / "s.duckdb"), migrate=False)
    apply(store, empty)
    store.close()
    store = open_store(str(tmp_path / "s.duckdb"))
    try:
        assert recorded(store) == [(m.version, m.name) for m in available()]
    finally:
        store.close()


def test_statements_split_on_semicolons_at_line_ends(tmp_path: Path) -> None:
    steps = folder(
        tmp_path,
        "split",
        {
            "0002_two.sql": "-- a comment; with a semicolon;\n"
            "CREATE TABLE a (s TEXT DEFAULT 'x;y');\n"
            "INSERT INTO a VALUES ('p;q')\n;\n"
            "CREATE TABLE b (x INTEGER);\n",
        },
    )
    (step,) = [m for m in available(steps) if m.version == 2]
    assert step.statements() == [
        "CREATE TABLE a (s TEXT DEFAULT 'x;y')",
        "INSERT INTO a VALUES ('p;q')",
        "CREATE TABLE b (x INTEGER)",
    ]
    store = open_store("duckdb:///:memory:", migrate=False)
    try:
        apply(store, steps)
        with store.connect() as conn:
            assert conn.execute(text("SELECT s FROM a")).fetchall() == [("p;q",)]
    finally:
        store.close()


def test_a_store_from_a_newer_abeval_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "newer.duckdb"
    newer = folder(tmp_path, "newer", {"0099_future.sql": "CREATE TABLE future (x INTEGER);\n"})
    with open_store(str(db), migrate=False) as store:
        apply(store, newer)
    before = db.read_bytes()
    known = max(m.version for m in available())
    for command in (["experiments"], ["migrate"], ["ingest", "missing.csv"]):
        result = runner.invoke(app, [*command, "--db", str(db)])
        assert result.exit_code == 1, result.output
        assert result.stderr == (
            f"Error: the store {db} has schema version 0099, newer than this abeval knows "
            f"(up to {known:04d}): upgrade abeval (pip install --upgrade abeval), or use the "
            "abeval that wrote it\n"
        )
    assert db.read_bytes() == before


def test_migrate_says_when_the_bookkeeping_lost_a_row(tmp_path: Path) -> None:
    db = tmp_path / "lost.duckdb"
    with open_store(str(db)) as store, store.begin() as conn:
        conn.execute(text("DELETE FROM schema_migrations WHERE version = 1"))
    result = runner.invoke(app, ["migrate", "--db", str(db)])
    assert result.exit_code == 1
    line = result.stderr.strip()
    assert "\n" not in line
    assert line.startswith(
        f"Error: the store {db} is not recorded as having migration 0001_initial, yet it "
        "holds what that step creates ("
    )
    assert "already exists" in line
    assert line.endswith(
        "its schema_migrations table has lost a row. Nothing was changed: check the store, "
        "then record the step with INSERT INTO schema_migrations (version, name, applied_at) "
        "VALUES (1, 'initial', CURRENT_TIMESTAMP), or restore a backup"
    )
    with open_store(str(db), migrate=False) as store:
        assert 1 not in [version for version, _ in recorded(store)]
        assert "events" in tables(store)
