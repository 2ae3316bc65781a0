"""Registers every command module with the application."""

from abeval.cli import misc_commands, report_commands, store_commands  # noqa: F401
