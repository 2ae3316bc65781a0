"""Opening the store: which file (``--db``, ``ABEVAL_DB``, ``./abeval.duckdb``), a
store locked by another process, URLs with passwords, and ``--db`` values that are
not stores."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from file_holders import holders
from typer.testing import CliRunner

from abeval.cli import app
from abeval.errors import StoreError
from abeval.store import open_store, resolve_url
from abeval.store.backends.url_secrets import without_secrets
from abeval.store.engine import display_url

runner = CliRunner()
EVENTS = "experiment,arm,user_id,ts,event_type\ne1,A,u1,2024-05-01,exposure\n"


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ABEVAL_DB", raising=False)
    (tmp_path / "e.csv").write_text(EVENTS)
    return tmp_path


# --- which store -----------------------------------------------------------------------


def test_resolution_order(cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_url(None) == f"duckdb:///{cwd / 'abeval.duckdb'}"
    monkeypatch.setenv("ABEVAL_DB", "env.duckdb")
    assert resolve_url(None) == f"duckdb:///{cwd / 'env.duckdb'}"
    assert resolve_url("flag.duckdb") == f"duckdb:///{cwd / 'flag.duckdb'}"
    assert resolve_url("sub/../x.duckdb") == f"duckdb:///{cwd / 'x.duckdb'}"
    url = "postgresql+psycopg://u@h/db"
    assert resolve_url(url) == url
    monkeypatch.setenv("ABEVAL_DB", url)
    assert resolve_url(None) == url
    monkeypatch.setenv("HOME", str(cwd))
    assert resolve_url("~/home.duckdb") == f"duckdb:///{cwd / 'home.duckdb'}"


def test_cli_uses_the_default_file_then_the_variable_then_the_flag(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert runner.invoke(app, ["ingest", "e.csv", "-q"]).exit_code == 0
    assert (cwd / "abeval.duckdb").is_file()

    monkeypatch.setenv("ABEVAL_DB", "env.duckdb")
    result = runner.invoke(app, ["ingest", "e.csv"])
    assert result.stderr.startswith("e.csv: 1 rows read: 1 inserted")  # a new store
    assert (cwd / "env.duckdb").is_file()

    result = runner.invoke(app, ["ingest", "e.csv", "--db", "flag.duckdb"])
    assert result.stderr.startswith("e.csv: 1 rows read: 1 inserted")
    assert (cwd / "flag.duckdb").is_file()
    # Read-only commands resolve the same way.
    assert runner.invoke(app, ["experiments"]).stdout.startswith("e1 ")
    monkeypatch.delenv("ABEVAL_DB")
    assert runner.invoke(app, ["experiments"]).stdout.startswith("e1 ")


def test_read_only_command_without_a_store(cwd: Path) -> None:
    result = runner.invoke(app, ["experiments", "--db", "none.duckdb"])
    shown = cwd / "none.duckdb"
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: no store at {shown}; load events first with `abeval ingest FILE --db {shown}`\n"
    )
    assert not shown.exists()


@pytest.mark.parametrize("name", ["e.csv", "new.parquet", "x.jsonl"])
def test_an_event_file_as_db_is_refused(cwd: Path, name: str) -> None:
    """DuckDB would open an existing CSV as an empty in-memory database and the
    ingest would vanish; abeval refuses instead."""
    for args in (["ingest", "e.csv", "--db", name], ["experiments", "--db", name]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1
        assert result.stderr == (
            f"Error: --db {cwd / name} names an event file, not a store; the store is a "
            f"DuckDB file such as abeval.duckdb (load events with "
            f"`abeval ingest {cwd / name} --db abeval.duckdb`)\n"
        )
    assert (cwd / "e.csv").read_text() == EVENTS


def test_a_file_that_is_not_duckdb_is_refused(cwd: Path) -> None:
    (cwd / "notes.db").write_text("some notes, not a database\n")
    result = runner.invoke(app, ["ingest", "e.csv", "--db", "notes.db"])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {cwd / 'notes.db'} is not a DuckDB file, so not an abeval store; "
        "pass another --db\n"
    )
    result = runner.invoke(app, ["experiments", "--db", str(cwd)])
    assert result.stderr == (
        f"Error: --db {cwd} is a directory; name a file such as abeval.duckdb in it\n"
    )


# --- locks -----------------------------------------------------------------------------


@pytest.fixture
def holder(cwd: Path) -> Iterator[object]:
    """Start a process that holds ``held.duckdb`` open for writing for ``seconds``."""
    with holders(cwd / "held.duckdb") as start:
        yield start


def test_a_store_locked_by_another_process(cwd: Path, holder: object) -> None:
    proc = holder(30)  # type: ignore[operator]
    for command in (["experiments"], ["ingest", "e.csv"], ["migrate"]):
        started = time.monotonic()
        result = runner.invoke(
            app, [*command, "--db", "held.duckdb"], env={"ABEVAL_LOCK_TIMEOUT": "0.5"}
        )
        waited = time.monotonic() - started
        assert result.exit_code == 1, command
        assert result.stdout == ""
        assert result.stderr == (
            f"Error: the store {cwd / 'held.duckdb'} is locked by process {proc.pid}; wait for "
            "it to finish (waited 0.5 s, set ABEVAL_LOCK_TIMEOUT to wait longer) or use "
            "another --db\n"
        )
        assert 0.5 <= waited < 10


def test_a_lock_released_in_time_is_waited_for(cwd: Path, holder: object) -> None:
    holder(1.0)  # type: ignore[operator]
    started = time.monotonic()
    result = runner.invoke(
        app, ["ingest", "e.csv", "--db", "held.duckdb"], env={"ABEVAL_LOCK_TIMEOUT": "30"}
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("e.csv: 1 rows read: 1 inserted")
    assert time.monotonic() - started >= 0.3


def test_lock_timeout_argument(cwd: Path, holder: object) -> None:
    proc = holder(30)  # type: ignore[operator]
    with pytest.raises(StoreError, match=rf"locked by process {proc.pid}; .*waited 0\.2 s"):
        open_store(str(cwd / "held.duckdb"), read_only=True, lock_timeout=0.2)


# --- URLs and passwords ----------------------------------------------------------------


def test_display_url_masks_passwords() -> None:
    assert (
        display_url("postgresql+psycopg://bob:s3cret@db.example:5432/ab")
        == "postgresql+psycopg://bob:***@db.example:5432/ab"
    )
    assert display_url("postgresql+psycopg://bob@db.example/ab") == (
        "postgresql+psycopg://bob@db.example/ab"
    )
    assert display_url("duckdb:////data/ab.duckdb") == "/data/ab.duckdb"
    assert display_url("duckdb:///:memory:") == ":memory:"
    # SQLAlchemy cannot parse it (bad port, '@' in the password): masked all the same.
    assert (
        display_url("postgresql+psycopg://bob:s3c@ret@db:port/ab")
        == "postgresql+psycopg://bob:***@db:port/ab"
    )


def test_driver_messages_lose_the_password() -> None:
    url = "postgresql+psycopg://bob:s3cret@db/ab"
    assert without_secrets('password "s3cret" rejected', url) == 'password "***" rejected'
    assert without_secrets("refused", url) == "refused"


@pytest.mark.parametrize(
    ("url", "shown", "reason"),
    [
        (
            "postgresql+psycopg://bob:s3cret@127.0.0.1:1/ab",
            "postgresql+psycopg://bob:***@127.0.0.1:1/ab",
            "(psycopg.OperationalError) connection failed: ",
        ),
        (
            "nosuchdb://bob:s3cret@host/ab",
            "nosuchdb://bob:***@host/ab",
            "SQLAlchemy has no dialect 'nosuchdb'; use a DuckDB file path or a URL such as "
            "postgresql+psycopg://USER@HOST/DB",
        ),
        (
            "postgresql+psycopg://bob:s3cret@host:port/ab",
            "postgresql+psycopg://bob:***@host:port/ab",
            "not a valid SQLAlchemy URL (",
        ),
    ],
)
def test_store_urls_in_errors_never_show_the_password(url: str, shown: str, reason: str) -> None:
    for command in (["experiments"], ["ingest", "missing.csv"]):
        result = runner.invoke(app, [*command, "--db", url])
        assert result.exit_code == 1
        assert "s3cret" not in result.output
        assert result.stderr.startswith(f"Error: cannot open the store {shown}: {reason}")
        assert len(result.stderr.splitlines()) == 1


def test_a_missing_driver_is_named() -> None:
    try:
        import psycopg2  # noqa: F401

        pytest.skip("psycopg2 is installed")
    except ImportError:
        pass
    result = runner.invoke(app, ["experiments", "--db", "postgresql://bob:s3cret@h/ab"])
    assert result.stderr == (
        "Error: cannot open the store postgresql://bob:***@h/ab: its driver 'psycopg2' is not "
        "installed; install it, or name an installed driver in the URL "
        "(postgresql+psycopg://...)\n"
    )


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_bad_lock_timeout_is_named(cwd: Path, value: str) -> None:
    result = runner.invoke(app, ["ingest", "e.csv"], env={"ABEVAL_LOCK_TIMEOUT": value})
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: ABEVAL_LOCK_TIMEOUT must be a number of seconds >= 0, got {value!r}\n"
    )


def _other_process_can_write(path: Path) -> bool:
    code = f"import duckdb; duckdb.connect({str(path)!r}).close()"
    return subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_the_store_as_a_context_manager_unlocks_the_file_however_the_block_ends(
    cwd: Path,
) -> None:
    path = cwd / "store.duckdb"
    with pytest.raises(RuntimeError, match="boom"), open_store(str(path)) as store:
        with store.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
        assert not _other_process_can_write(path)
        raise RuntimeError("boom")
    assert _other_process_can_write(path)


def _demo_store(folder: Path) -> Path:
    """A small store with one experiment, written through the CLI."""
    from abeval.simulate import SimulationConfig, write_events

    events = folder / "events.csv"
    write_events(SimulationConfig(users=300, seed=3), events)
    store = folder / "store.duckdb"
    result = runner.invoke(app, ["ingest", str(events), "--db", str(store), "--quiet"])
    assert result.exit_code == 0, result.output
    return store


@pytest.mark.parametrize("keep", [0.5, 0.75])
def test_a_truncated_store_gives_one_line_and_stays_as_it_was(cwd: Path, keep: float) -> None:
    store = _demo_store(cwd)
    data = store.read_bytes()
    store.write_bytes(data[: int(len(data) * keep)])
    damaged = store.read_bytes()
    failed = []
    listed = runner.invoke(app, ["experiments", "--db", str(store)])
    for command in (
        ["experiments"],
        ["report", "-e", "home-reco-v2", "--format", "json"],
        ["ingest", str(cwd / "events.csv")],
    ):
        result = runner.invoke(app, [*command, "--db", str(store)])
        assert "Traceback" not in result.output
        if result.exit_code == 0:  # the damage may lie where this command does not read
            # A report that could read keeps its summaries (docs/architecture.md, "Kept
            # summaries"): the file may grow by them, but reads as it did.
            again = runner.invoke(app, ["experiments", "--db", str(store)])
            assert (again.exit_code, again.output) == (listed.exit_code, listed.output)
            damaged = store.read_bytes()
            continue
        assert store.read_bytes() == damaged  # a command that failed wrote nothing
        failed.append(command[0])
        assert result.exit_code == 1, result.output
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("Error: ")
        assert str(store) in lines[0]
        assert "damaged" in lines[0] and "backup" in lines[0]
    assert failed  # some command reads the lost part


def test_a_directory_in_place_of_the_wal_gives_one_line(cwd: Path) -> None:
    store = _demo_store(cwd)
    before = store.read_bytes()
    (cwd / "store.duckdb.wal").mkdir()
    result = runner.invoke(app, ["ingest", str(cwd / "events.csv"), "--db", str(store)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: cannot open the store {store}: (_duckdb.IOException) IO Error: Failure while "
        f'replaying WAL file "{store}.wal": Could not read from file "{store}.wal": Is a '
        "directory; a directory stands where the store's .wal file goes; move it away\n"
    )
    assert store.read_bytes() == before


def test_store_faults_inside_a_command_name_the_store_and_the_fix() -> None:
    import duckdb

    from abeval.store.backends import backend_named
    from abeval.store.database import Database

    class FakeEngine:
        pass

    store = Database(
        engine=FakeEngine(),  # type: ignore[arg-type]
        url="duckdb:////data/store.duckdb",
        read_only=False,
        backend=backend_named("duckdb"),
    )
    with pytest.raises(StoreError) as caught, store.faults():
        raise duckdb.IOException(
            'IO Error: Cannot open file "/data/store.duckdb.wal": Permission denied'
        )
    assert caught.value.message == (
        'the store /data/store.duckdb failed: IO Error: Cannot open file "/data/store.duckdb.wal": '
        "Permission denied; abeval needs to write the store and its .wal file in that folder"
    )
    with pytest.raises(KeyboardInterrupt), store.faults():
        raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")
    with pytest.raises(duckdb.InvalidInputException), store.faults():
        raise duckdb.InvalidInputException("a bad row: the caller handles it")
    with pytest.raises(ZeroDivisionError), store.faults():
        raise ZeroDivisionError  # not a database error: a bug keeps its traceback


def test_passwords_are_masked_by_their_place_in_the_url_not_by_replacing_text() -> None:
    url = "postgresql+psycopg://bob:se@db/ab"
    message = "could not translate host name: Name or service not known"
    assert without_secrets(message, url) == message
    assert without_secrets("auth failed for se", url) == "auth failed for ***"
    assert without_secrets(f"cannot reach {url}", url) == (
        "cannot reach postgresql+psycopg://bob:***@db/ab"
    )
    assert display_url("postgresql://bob:a/b@host/db") == "postgresql://bob:***@host/db"


@pytest.mark.parametrize(
    ("password", "fix"), [("p@ss", "@ as %40"), ("a/b@c", "/ as %2F, @ as %40")]
)
def test_a_password_a_url_cannot_hold_is_refused_without_showing_it(
    password: str, fix: str
) -> None:
    result = runner.invoke(
        app, ["experiments", "--db", f"postgresql+psycopg://bob:{password}@db/ab"]
    )
    assert result.exit_code == 1
    assert password not in result.output
    assert result.stderr.startswith("Error: --db postgresql+psycopg://bob:***@db/ab: the password")
    assert result.stderr.endswith(f"percent-encode it ({fix})\n")
