"""Ctrl-C (SIGINT) and SIGTERM, told truthfully (docs/usage.md#stopping-a-command).

:func:`install` puts the handlers in place before any heavy library is imported.
What a signal does depends on where the command is:

- **starting** (the CLI is still importing and parsing): the process exits at once
  (``os._exit``: nothing is open yet) with ``Interrupted: stopped before the
  command started`` and 128 + the signal;
- **running**: :class:`KeyboardInterrupt` (:class:`~abeval.errors.Terminated` for
  SIGTERM) is raised, so the open transaction rolls back and the CLI says so;
- **held** (inside :func:`held`: a commit and the closing of a connection) and
  **committed** (from a commit until the command starts its next write, so that
  it can report what it wrote): the signal is kept, and raised at the next
  :func:`checkpoint` (the start of another write) or reported when the command ends;
- **done** (the command has returned): nothing more can be stopped; it is ignored,
  and :func:`exit_after` ends a process that received a signal without the
  interpreter's shutdown (which puts back the default handlers, and re-raises
  an interrupt it thinks unhandled as the signal itself).

A signal that comes while a library with native code (DuckDB, pyarrow, numpy ...)
initialises is sent again a moment later: an exception raised inside such an
import aborts the interpreter.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager

TYPE_CHECKING = False  # not typing's: `import abeval` runs this module, and stays fast
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

#: Packages whose import runs native initialisation that must not be interrupted.
_NATIVE = ("duckdb", "pyarrow", "numpy", "scipy", "pandas", "sqlalchemy", "psycopg", "pyspark")
#: How long a signal that came during such an import waits before it is sent again.
_RETRY_SECONDS = 0.05

_state: dict[str, Any] = {"phase": "starting", "depth": 0, "committed": False}
_held: list[int] = []
_seen: list[int] = []


def install() -> None:
    """Handle SIGTERM, and SIGINT unless it is ignored (a job started in the
    background of a shell ignores it, and so does abeval then). Once only."""
    if _state.get("installed"):
        return
    _state["installed"] = True
    signal.signal(signal.SIGTERM, _handle)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _handle)
    # A launcher may hold the signals back until the handlers are in place.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _native_import_running() -> bool:
    for name, module in list(sys.modules.items()):
        if name.split(".", 1)[0] in _NATIVE:
            spec = getattr(module, "__spec__", None)
            if spec is not None and getattr(spec, "_initializing", False):
                return True
    return False


def _handle(signum: int, _frame: object) -> None:
    # No import here: the signal may come while the module it would import is
    # half initialised (an ImportError from the handler, and a traceback).
    phase = _state["phase"]
    if phase == "done":
        return
    if _native_import_running():
        import threading

        timer = threading.Timer(_RETRY_SECONDS, _send_again, (signum,))
        timer.daemon = True
        timer.start()
        return
    if phase == "starting":
        # Nothing is open yet, so nothing needs unwinding; an exception would not
        # do: raised inside a finaliser or an import lock's callback, Python prints
        # it as "ignored" and the command runs on.
        sys.stderr.write("Interrupted: stopped before the command started\n")
        sys.stderr.flush()
        os._exit(128 + signum)
    _seen.append(signum)
    if _state["depth"] or _state["committed"]:
        _held.append(signum)
        return
    raise _exception(signum)


def _send_again(signum: int) -> None:
    """The retry of a signal that came during a native import; none once the
    command has ended (the interpreter may have put back the default handlers,
    and the signal would kill the process after it said what it did)."""
    if _state["phase"] != "done":
        os.kill(os.getpid(), signum)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that open transactions roll back the same way
    (also :class:`abeval.errors.Terminated`)."""

    signum = 15


def _exception(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


@contextmanager
def held() -> Iterator[None]:
    """Keep signals for the block (a commit, closing a connection): they take
    effect after it, as :func:`checkpoint` or the end of the command decide."""
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1


def committed() -> None:
    """A write was committed: keep signals until the command starts another write
    (:func:`checkpoint`) or ends, so that it reports what it wrote."""
    if _state["phase"] == "running":
        _state["committed"] = True


def checkpoint() -> None:
    """Before a write: raise a signal kept since the last commit."""
    _state["committed"] = False
    if _held and not _state["depth"]:
        raise _exception(_held.pop(0))


def running() -> None:
    """The command's own code starts: signals now stop it. After a group's own
    callback (``abeval metrics`` before ``metrics add``) finished, the handlers
    it set aside are put back: the sub-command is the command."""
    if _state["phase"] == "done":
        for signum in _state.pop("set_aside", ()):
            signal.signal(signum, _handle)
    _state["phase"] = "running"


def finished() -> int | None:
    """The command's code returned: the signal kept since its last commit, if
    any (it came too late to stop anything); later signals are ignored, also
    while the interpreter shuts down (which would put back the default handlers,
    and a signal would then kill the process after it said it finished)."""
    _state["phase"] = "done"
    if _state.get("installed"):
        aside = [s for s in (signal.SIGTERM, signal.SIGINT) if signal.getsignal(s) is _handle]
        for signum in aside:
            signal.signal(signum, signal.SIG_IGN)
        _state["set_aside"] = aside
    _state["committed"] = False
    return _held.pop(0) if _held else None


def received(signum: int) -> bool:
    """Whether this command received ``signum`` while it ran."""
    return signum in _seen


def seen() -> int | None:
    """The first signal this command received while it ran, if any."""
    return _seen[0] if _seen else None


def exit_after(code: int) -> None:
    """If a signal came, end the process with ``code`` (the command has said what
    it did) without the interpreter's shutdown: the store is closed by then, and
    that shutdown would put back the default handlers (a late signal would kill
    the process after it printed its line) or, having seen a KeyboardInterrupt,
    end the process by SIGINT instead of ``code``."""
    if not _seen:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
