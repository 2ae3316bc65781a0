"""Registers every command module with the application."""

from abeval.cli import (  # noqa: F401
    agreement_commands,
    evaluate_commands,
    experiment_commands,
    forecast_commands,
    metrics_commands,
    misc_commands,
    program_commands,
    report_commands,
    source_commands,
    store_commands,
)
