"""Each default of a run's deadlines is set in one place: what a Computer's Timeouts
start with is what a backend's ExecutionOptions start with."""

from __future__ import annotations

from lmc_runtime.backends import ExecutionOptions
from lmc_runtime.config import DEFAULT_INPUT_SECONDS, DEFAULT_INTERRUPT_GRACE, Timeouts


def test_execution_options_start_with_the_timeouts_defaults() -> None:
    """Guards the one place of the interrupt grace and the input deadline defaults."""
    timeouts, options = Timeouts(), ExecutionOptions("tag")
    assert timeouts.interrupt_grace == options.interrupt_grace == DEFAULT_INTERRUPT_GRACE
    assert timeouts.input == options.input_timeout == DEFAULT_INPUT_SECONDS
