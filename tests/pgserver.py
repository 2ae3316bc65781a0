"""A throwaway PostgreSQL server for the test suite, and its pytest fixtures.

The server is built from the PostgreSQL binaries on the machine (``initdb``,
``pg_ctl``): a fresh cluster in a temporary directory, ``trust`` authentication,
listening on 127.0.0.1 on a free port and on a unix socket in that directory,
with fsync off. PostgreSQL refuses to run as root, so when the tests run as root
the server runs as a system user (``abeval-pg``, created if missing, else
``nobody``) through ``runuser``.

Fixtures (register them with ``pytest_plugins = ["pgserver"]`` in ``conftest.py``):

* ``postgres_server`` (session): the running :class:`PostgresServer`;
* ``postgres_url`` (session): its SQLAlchemy URL,
  ``postgresql+psycopg://abeval@127.0.0.1:PORT/abeval``;
* ``postgres_database`` (per test): the URL of a new, empty database, dropped after.

Where the binaries are missing the fixtures skip the test, except under CI
(environment variable ``CI`` set, e.g. ``CI=true``), where they fail it. The
binaries are looked up in ``$ABEVAL_PG_BINDIR``, then ``pg_config --bindir``,
then ``initdb`` on ``PATH``, then ``/usr/lib/postgresql/<version>/bin``
(newest first).
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import NoReturn

import pytest

SYSTEM_USER = "abeval-pg"
DB_USER = "abeval"
DB_NAME = "abeval"
_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None."""

    def usable(d: str | Path | None) -> Path | None:
        if d and (Path(d) / "initdb").is_file() and (Path(d) / "pg_ctl").is_file():
            return Path(d)
        return None

    found = usable(os.environ.get("ABEVAL_PG_BINDIR"))
    if found:
        return found
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=30
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        found = usable(out)
        if found:
            return found
    initdb = shutil.which("initdb")
    found = usable(Path(initdb).parent if initdb else None)
    if found:
        return found

    def version(path: str) -> tuple[int, ...]:
        name = Path(path).parent.name
        return tuple(int(p) for p in name.split(".") if p.isdigit())

    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True):
        found = usable(d)
        if found:
            return found
    return None


def in_ci() -> bool:
    """True when the environment variable CI is set (and not to 0/false/no)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ensure_system_user() -> str:
    """A non-root user to run the server as (root only): created if missing."""
    try:
        pwd.getpwnam(SYSTEM_USER)
        return SYSTEM_USER
    except KeyError:
        pass
    useradd = shutil.which("useradd")
    if useradd:
        nologin = shutil.which("nologin") or "/bin/false"
        subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", nologin, SYSTEM_USER],
            capture_output=True,
            check=False,
        )
        try:
            pwd.getpwnam(SYSTEM_USER)
            return SYSTEM_USER
        except KeyError:
            pass
    return "nobody"


def _world_traversable(path: Path) -> bool:
    """Whether any user can reach entries below ``path`` (o+x on it and its parents)."""
    return all(p.stat().st_mode & 0o001 for p in (path, *path.parents))


class PostgresError(RuntimeError):
    """The server could not be set up; the message carries the tail of its log."""


class PostgresServer:
    """A PostgreSQL cluster in a temporary directory, for the lifetime of a ``with``.

    >>> with PostgresServer() as pg:  # doctest: +SKIP
    ...     engine = sqlalchemy.create_engine(pg.url)
    """

    def __init__(
        self,
        bindir: str | Path | None = None,
        *,
        database: str = DB_NAME,
        user: str = DB_USER,
        settings: dict[str, str] | None = None,
    ) -> None:
        found = Path(bindir) if bindir else find_bindir()
        if found is None:
            raise PostgresError("PostgreSQL binaries (initdb, pg_ctl) not found")
        for name in (database, user):
            if not _NAME_RE.match(name):
                raise ValueError(f"not a plain SQL name: {name!r}")
        self.bindir = found
        self.database = database
        self.user = user
        self.settings = {
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "40",
            **(settings or {}),
        }
        self.port = 0
        self.directory: Path | None = None
        self.run_as: str | None = None  # system user, when we are root
        self.started_in: float | None = None  # seconds from start() to accepting queries

    # -- lifecycle ---------------------------------------------------------------

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self.port != 0

    def start(self) -> PostgresServer:
        if self.running:
            return self
        t0 = time.perf_counter()
        self.run_as = _ensure_system_user() if os.geteuid() == 0 else None
        base = Path(tempfile.gettempdir())
        if self.run_as and not _world_traversable(base):
            base = Path("/tmp")
        self.directory = Path(tempfile.mkdtemp(prefix="abeval-pg-", dir=base))
        atexit.register(self.stop)
        try:
            if self.run_as:
                entry = pwd.getpwnam(self.run_as)
                os.chown(self.directory, entry.pw_uid, entry.pw_gid)
            self.directory.chmod(0o700)
            self._run(
                [
                    str(self.bindir / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    self.user,
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--no-locale",
                    "--no-sync",
                ]
            )
            self._start_on_a_free_port()
            self._create_database(self.database)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.perf_counter() - t0
        return self

    def stop(self) -> None:
        """Stop the server (immediately: the data is thrown away) and delete its directory."""
        if self.directory is None:
            return
        if (self.data_dir / "postmaster.pid").exists():
            pg_ctl = str(self.bindir / "pg_ctl")
            self._run(
                [pg_ctl, "-D", str(self.data_dir), "-m", "immediate", "-w", "stop"], check=False
            )
        self.port = 0
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory = None
        atexit.unregister(self.stop)

    # -- addresses ---------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        assert self.directory is not None, "server not started"
        return self.directory / "data"

    @property
    def socket_dir(self) -> Path:
        assert self.directory is not None, "server not started"
        return self.directory

    def url_for(self, database: str) -> str:
        """SQLAlchemy URL of one of this server's databases (TCP, no password)."""
        if not self.running:
            raise PostgresError("server not started")
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    @property
    def url(self) -> str:
        """``postgresql+psycopg://USER@127.0.0.1:PORT/DB``."""
        return self.url_for(self.database)

    @property
    def dsn(self) -> str:
        """libpq connection string for ``psycopg.connect``."""
        return f"host=127.0.0.1 port={self.port} user={self.user} dbname={self.database}"

    # -- databases ---------------------------------------------------------------

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database (named, or a fresh name); return its URL."""
        name = name or f"t_{uuid.uuid4().hex[:12]}"
        self._create_database(name)
        return self.url_for(name)

    def drop_database(self, name: str) -> None:
        if not _NAME_RE.match(name):
            raise ValueError(f"not a plain SQL name: {name!r}")
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def _create_database(self, name: str) -> None:
        if not _NAME_RE.match(name):
            raise ValueError(f"not a plain SQL name: {name!r}")
        self._admin(f"CREATE DATABASE {name}")

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=self.user, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(sql.encode())

    # -- processes ---------------------------------------------------------------

    def _command(self, argv: Sequence[str]) -> list[str]:
        if not self.run_as:
            return list(argv)
        runuser = shutil.which("runuser")
        if runuser:
            return [runuser, "-u", self.run_as, "--", *argv]
        su = shutil.which("su") or "su"
        return [su, "-s", "/bin/sh", self.run_as, "-c", subprocess.list2cmdline(argv)]

    def _run(self, argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        env.pop("PGDATA", None)
        done = subprocess.run(
            self._command(argv),
            capture_output=True,
            text=True,
            env=env,
            cwd=self.directory,
            check=False,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise PostgresError(
                f"{Path(argv[0]).name} failed (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-2000:]}{self._log_tail()}"
            )
        return done

    def _log_tail(self) -> str:
        log = self.directory / "server.log" if self.directory else None
        if log is None or not log.exists():
            return ""
        return "\nserver log:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-20:])

    def _start_on_a_free_port(self) -> None:
        options = [f"-c {k}={v}" for k, v in self.settings.items()]
        last: PostgresError | None = None
        for _ in range(5):  # another process may take the port between probe and bind
            port = free_port()
            server_options = " ".join(
                [
                    f"-p {port}",
                    f"-k {shlex.quote(str(self.socket_dir))}",
                    "-c listen_addresses=127.0.0.1",
                    *options,
                ]
            )
            try:
                self._run(
                    [
                        str(self.bindir / "pg_ctl"),
                        "-D",
                        str(self.data_dir),
                        "-l",
                        str(self.directory / "server.log" if self.directory else "server.log"),
                        "-o",
                        server_options,
                        "-w",
                        "-t",
                        "60",
                        "start",
                    ]
                )
            except PostgresError as exc:
                last = exc
                if "could not bind" in str(exc) or "already in use" in str(exc):
                    continue
                raise
            self.port = port
            return
        raise last or PostgresError("could not start PostgreSQL")


# --------------------------------------------------------------------------- fixtures


def unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it when CI is set."""
    message = f"PostgreSQL unavailable: {reason}"
    if in_ci():
        pytest.fail(message + " (CI is set, so this fails instead of skipping)", pytrace=False)
    pytest.skip(message)


def require_bindir() -> Path:
    """The PostgreSQL binaries' directory; skips (fails under CI) when there is none."""
    bindir = find_bindir()
    if bindir is None:
        unavailable("initdb/pg_ctl not found (install PostgreSQL or set ABEVAL_PG_BINDIR)")
    return bindir


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole test session."""
    with PostgresServer(require_bindir()) as server:
        yield server


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """SQLAlchemy URL of the session's database (shared by every test)."""
    return postgres_server.url


@pytest.fixture
def postgres_database(postgres_server: PostgresServer) -> Iterator[str]:
    """SQLAlchemy URL of a new, empty database for one test, dropped after it."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = postgres_server.create_database(name)
    yield url
    postgres_server.drop_database(name)
