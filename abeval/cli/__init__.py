"""Command-line interface. Heavy libraries are imported inside the commands so
that ``abeval --help`` stays fast."""

from __future__ import annotations

from abeval.cli import commands as _commands  # noqa: F401  (registers the commands)
from abeval.cli.app import app, run


def main() -> None:
    run()


__all__ = ["app", "main"]
