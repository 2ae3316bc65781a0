"""Registers every command module with the application."""

import abeval.cli.evaluate  # noqa: F401
from abeval.cli import misc_commands, report_commands, store_commands  # noqa: F401
