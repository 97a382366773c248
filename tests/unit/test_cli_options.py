"""The ``lmc`` command's options as parsed: defaults, units, and what --help says."""

from __future__ import annotations

import argparse

import pytest

from lmc_runtime.cli.parser import build_parser
from lmc_runtime.config import Limits, Timeouts
from lmc_runtime.options.timeouts import execution_timeouts
from lmc_runtime.service.command import configure_parser as configure_serve
from lmc_runtime.service.options import OPTIONS


@pytest.mark.parametrize("command", ["run", "demo"])
def test_lmc_run_has_the_default_execution_timeout(command: str) -> None:
    """Without --timeout, lmc run's executions stop after Timeouts()'s default."""
    args = build_parser().parse_args([command])
    assert execution_timeouts(args.timeout).execution == Timeouts().execution == 300


@pytest.mark.parametrize("given", ["0", "none", "None"])
def test_lmc_run_timeout_0_or_none_means_no_timeout(given: str) -> None:
    """--timeout 0 and --timeout none turn the execution timeout off."""
    args = build_parser().parse_args(["run", "--timeout", given])
    assert execution_timeouts(args.timeout).execution is None


def test_lmc_run_timeout_takes_seconds() -> None:
    args = build_parser().parse_args(["run", "--timeout", "2.5"])
    assert execution_timeouts(args.timeout).execution == 2.5


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


def _serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lmc serve")
    configure_serve(parser)
    return parser


def test_lmc_serve_help_groups_its_options() -> None:
    """lmc serve --help lists its options in titled groups, each flag in one."""
    parser = _serve_parser()
    groups = {
        group.title: {flag for action in group._group_actions for flag in action.option_strings}
        for group in parser._action_groups
    }
    titled = [title for title in groups if title not in ("options", "positional arguments")]
    assert len(titled) >= 4, groups
    for option in OPTIONS:
        holding = [title for title in titled if option.flag in groups[title]]
        assert len(holding) == 1, (option.flag, holding)
    assert groups["options"] <= {"-h", "--help", "--config", "-v", "--verbose"}
    text = parser.format_help()
    assert all(f"\n{title}:\n" in text for title in titled)


def test_lmc_serve_help_shows_each_default_as_the_flag_takes_it() -> None:
    """A default shown in --help, given back to its flag, is that default (256000, not
    250K, as the docs say it)."""
    for option in OPTIONS:
        if option.switch or option.default in (None, ()):
            continue
        assert option.parse(option.shown) == option.default, (option.flag, option.shown)
    text = " ".join(_serve_parser().format_help().split())
    assert "(default: 256000;" in text and "250K" not in text
    assert "(default: 300;" in text and "300.0" not in text


def test_lmc_run_help_shows_the_output_budget_default_in_bytes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default {Limits().output_bytes})" in text


@pytest.mark.parametrize("given", ["0", "63", "-5", "lots"])
def test_lmc_run_refuses_an_output_budget_below_its_least_in_one_line(
    given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--output-bytes under Limits' least is a usage error, not a traceback."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["run", "--output-bytes", given])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--output-bytes" in err and err.count("\n") == 1
