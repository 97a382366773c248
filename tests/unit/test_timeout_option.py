"""``--timeout`` is one option, with one meaning, in every command that runs code."""

from __future__ import annotations

import argparse
from typing import Any, cast

import pytest

from lmc_runtime import Computer
from lmc_runtime.config import DEFAULT_EXECUTION_SECONDS
from lmc_runtime.mcp.command import _opener, configure_parser
from lmc_runtime.mcp.workspace import LocalOpener
from lmc_runtime.repl.app import Repl
from lmc_runtime.repl.options import ReplOptions, add_arguments


def _mcp(*argv: str) -> LocalOpener:
    parser = argparse.ArgumentParser()
    configure_parser(parser)
    opener = _opener(parser.parse_args(list(argv)), None)
    assert isinstance(opener, LocalOpener)
    return opener


def _repl_computer(*argv: str) -> Computer:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    options = ReplOptions.from_args(parser.parse_args(list(argv)), {})
    computer = Repl(options, cast(Any, None), cast(Any, None))._new_computer()
    assert isinstance(computer, Computer)
    return computer


def test_regression_lmc_mcp_and_lmc_repl_have_the_default_timeout() -> None:
    """Regression: the default execution timeout reached Computer() and lmc run but
    not lmc mcp or lmc repl, which passed their unset --timeout on as "no limit":
    the agent-facing MCP server waited forever on a `while True`."""
    assert _mcp().timeouts.execution == DEFAULT_EXECUTION_SECONDS
    assert _repl_computer().timeouts.execution == DEFAULT_EXECUTION_SECONDS


@pytest.mark.parametrize("off", ["0", "none"])
def test_zero_or_none_turns_the_timeout_off_in_mcp_and_repl(off: str) -> None:
    assert _mcp("--timeout", off).timeouts.execution is None
    assert _repl_computer("--timeout", off).timeouts.execution is None
    assert _mcp("--timeout", "7").timeouts.execution == 7
