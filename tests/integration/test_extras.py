"""Without an extra, the library and the commands that do not need it work, and the
ones that do say in one line what to install."""

from __future__ import annotations

from pathlib import Path

import pytest

from .lmc_cli import EXTRA_ONLY_PACKAGES, blocking_env, lmc, python_without


@pytest.mark.parametrize(
    ("command", "blocked", "extra"),
    [
        ("serve", "fastapi", "serve"),
        ("serve", "uvicorn", "serve"),
        ("repl", "rich", "repl"),
        ("bench", "matplotlib", "plot"),
    ],
)
def test_a_command_without_its_extra_names_the_pip_command(
    tmp_path: Path, command: str, blocked: str, extra: str
) -> None:
    done = lmc(command, "--help", env=blocking_env(tmp_path, blocked))
    assert done.returncode == 0, done.stderr  # its help needs no extra
    done = lmc(command, env=blocking_env(tmp_path, blocked))
    assert done.returncode == 2
    assert done.stderr == (
        f"lmc {command} needs the [{extra}] extra: pip install 'lmc-runtime[{extra}]'\n"
    )
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("statement", "blocked", "extra"),
    [
        ("import lmc_runtime.agent", "httpx", "lmc_runtime.agent needs the [agent] extra"),
        (
            "from lmc_runtime.service import create_app",
            "fastapi",
            "lmc_runtime.service needs the [serve] extra",
        ),
    ],
)
def test_importing_without_the_extra_raises_missing_extra(
    tmp_path: Path, statement: str, blocked: str, extra: str
) -> None:
    code = (
        "from lmc_runtime.errors import MissingExtra\n"
        f"try:\n    {statement}\n"
        "except MissingExtra as exc:\n    print(isinstance(exc, ImportError), exc)\n"
    )
    done = python_without(tmp_path, code, blocked)
    assert done.returncode == 0, done.stderr
    name = extra.split("[")[1].split("]")[0]
    assert done.stdout == f"True {extra}: pip install 'lmc-runtime[{name}]'\n"


#: What the library itself must not import: every extra's packages, the REPL's too.
EXTRAS = (*EXTRA_ONLY_PACKAGES, "prompt_toolkit")


def test_the_library_and_light_commands_import_no_extra(tmp_path: Path) -> None:
    """Guards the light install: importing the package, Computer, the CLI, the bench
    and the repl and serve option parsers loads nothing an extra brings."""
    code = (
        "import sys\n"
        "import lmc_runtime, lmc_runtime.cli, lmc_runtime.cli.bench, benchmarks.bench\n"
        "from lmc_runtime import Computer\n"
        "from lmc_runtime.cli.parser import build_parser\n"
        "build_parser()\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({EXTRAS!r})))\n"
    )
    done = python_without(tmp_path, code)  # nothing blocked: see what gets imported
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


@pytest.mark.parametrize("args", [("languages",), ("--version",), ("run", "--help")])
def test_light_commands_run_with_every_extra_missing(tmp_path: Path, args: tuple[str]) -> None:
    done = lmc(*args, env=blocking_env(tmp_path, *EXTRA_ONLY_PACKAGES))
    assert done.returncode == 0, done.stderr


def test_lmc_run_runs_python_with_every_extra_missing(tmp_path: Path) -> None:
    message = '{"role": "assistant", "type": "code", "format": "python", "content": "print(1+1)"}'
    done = lmc("run", stdin=message + "\n", env=blocking_env(tmp_path, *EXTRA_ONLY_PACKAGES))
    assert done.returncode == 0, done.stderr
    assert '"content": "2\\n"' in done.stdout
