"""Registers every command module with the application."""

from abeval.cli import report_commands, store_commands  # noqa: F401
