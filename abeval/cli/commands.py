"""Registers every command module with the application."""

from abeval.cli import store_commands  # noqa: F401
