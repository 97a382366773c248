"""The ``lmc`` command's options as parsed: defaults, units, and what --help says."""

from __future__ import annotations

import pytest

from lmc_runtime.cli.parser import build_parser
from lmc_runtime.cli.running import batch_timeouts
from lmc_runtime.config import Timeouts


@pytest.mark.parametrize("command", ["run", "demo"])
def test_lmc_run_has_the_default_execution_timeout(command: str) -> None:
    """Without --timeout, lmc run's executions stop after Timeouts()'s default."""
    args = build_parser().parse_args([command])
    assert batch_timeouts(args).execution == Timeouts().execution == 300


@pytest.mark.parametrize("given", ["0", "none", "None"])
def test_lmc_run_timeout_0_or_none_means_no_timeout(given: str) -> None:
    """--timeout 0 and --timeout none turn the execution timeout off."""
    args = build_parser().parse_args(["run", "--timeout", given])
    assert batch_timeouts(args).execution is None


def test_lmc_run_timeout_takes_seconds() -> None:
    args = build_parser().parse_args(["run", "--timeout", "2.5"])
    assert batch_timeouts(args).execution == 2.5


@pytest.mark.parametrize("given", ["-1", "soon", "nan", "inf"])
def test_lmc_run_refuses_a_timeout_that_is_not_seconds(
    given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["run", "--timeout", given])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--timeout" in err and err.count("\n") == 1


def test_lmc_run_help_states_the_default_timeout_and_how_to_turn_it_off(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default 300" in text and "0 or none: no timeout" in text
