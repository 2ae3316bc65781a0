"""Opening a SQLAlchemy engine for a backend (:meth:`Backend.open
<abeval.store.backends.base.Backend.open>`): the password check, the wait for a
store locked by another process (up to ``ABEVAL_LOCK_TIMEOUT`` seconds, default
10), and one line for an engine that cannot be made or reached."""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from abeval.errors import StoreError, StoreHeldHere
from abeval.store.backends.faults import first_line, hint
from abeval.store.backends.url_secrets import split_credentials, without_secrets

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from abeval.store.backends.base import Backend


def check_password(url: str, shown: str) -> None:
    """Refuse a password that a URL cannot hold as it is: SQLAlchemy would end it at
    the first ``@`` and try to reach a host named after the rest of it."""
    _, password, _ = split_credentials(url)
    bad = sorted({c for c in password or "" if c in "@/?#"})
    if bad:
        chars = " ".join(bad)
        codes = ", ".join(f"{c} as %{ord(c):02X}" for c in bad)
        raise StoreError(
            f"{{db}} {shown}: the password holds {chars}, which a URL cannot hold as it is; "
            f"percent-encode it ({codes})",
            parameters=("db",),
        )


def env_lock_timeout() -> float:
    """``ABEVAL_LOCK_TIMEOUT``: how long to wait for a store another process holds."""
    value = os.environ.get("ABEVAL_LOCK_TIMEOUT", "10")
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        raise StoreError(f"ABEVAL_LOCK_TIMEOUT must be a number of seconds >= 0, got {value!r}")
    return seconds


def lock_holder(message: str) -> str:
    match = re.search(r"PID (\d+)", message)
    return f"process {match.group(1)}" if match else "another process"


def connect_engine(
    backend: Backend,
    url: str,
    shown: str,
    read_only: bool,
    memory: Any,
    timeout: float,
    on_lock_wait: Callable[[str], None] | None,
) -> Engine:
    """The backend's engine for ``url``, once one connection to it has opened;
    while another process holds the store, tried again every 0.2 s for ``timeout``
    seconds (``on_lock_wait`` told once)."""
    deadline = time.monotonic() + timeout
    told = False
    while True:
        try:
            engine = backend.create_engine(url, read_only, memory)
        except Exception as exc:  # unknown dialect, missing driver, bad URL
            raise StoreError(engine_error(shown, url, exc)) from None
        try:
            with engine.connect():
                pass
            return engine
        except Exception as exc:  # classify driver errors for the user
            engine.dispose()
            text = str(exc)
            if backend.is_locked(text):
                if on_lock_wait is not None and not told and time.monotonic() < deadline:
                    told = True
                    on_lock_wait(
                        f"the store {shown} is locked by {lock_holder(text)}; waiting for it"
                        + ("" if math.isinf(timeout) else f" (up to {timeout:g} s)")
                    )
                if time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                raise StoreError(
                    f"the store {shown} is locked by {lock_holder(text)}; "
                    f"wait for it to finish (waited {timeout:g} s, set ABEVAL_LOCK_TIMEOUT "
                    "to wait longer) or use another {db}",
                    parameters=("db",),
                ) from None
            if backend.is_held_here(text):
                raise held_here(shown, read_only) from None
            reason = first_line(without_secrets(text, url))
            raise StoreError(f"cannot open the store {shown}: {reason}{hint(reason)}") from None


def held_here(shown: str, read_only: bool) -> StoreHeldHere:
    """One line for a DuckDB file that another store of this process holds with
    other settings."""
    if read_only:
        how = "with other settings (writing it, or another ABEVAL_MEMORY_LIMIT or ABEVAL_TEMP_DIR)"
    else:
        how = "for reading (DuckDB lets one process read a file or write it, not both)"
    return StoreHeldHere(
        f"cannot {'read' if read_only else 'write'} the store {shown}: another abeval.open "
        f"of it in this process holds it {how}; close that store (store.close()) first"
    )


def engine_error(shown: str, url: str, exc: Exception) -> str:
    """One line for a store URL that SQLAlchemy cannot turn into an engine."""
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    if isinstance(exc, NoSuchModuleError):
        scheme = url.split("://", 1)[0]
        return (
            f"cannot open the store {shown}: SQLAlchemy has no dialect {scheme!r}; "
            "use a DuckDB file path or a URL such as postgresql+psycopg://USER@HOST/DB"
        )
    if isinstance(exc, ModuleNotFoundError):
        return (
            f"cannot open the store {shown}: its driver {exc.name!r} is not installed; "
            "install it, or name an installed driver in the URL (postgresql+psycopg://...)"
        )
    if isinstance(exc, ArgumentError | ValueError):
        reason = without_secrets(str(exc), url)
        return f"cannot open the store {shown}: not a valid SQLAlchemy URL ({reason})"
    return f"cannot open the store {shown}: {first_line(without_secrets(str(exc), url))}"
