"""Every code example of the README and the docs runs as shown.

Each ```python block runs in a fresh interpreter, in an empty folder, with a
time bound (a few at once); blocks marked ``<!-- with-server -->`` run against a real
``lmc serve``; ```sh blocks marked ``<!-- run -->`` run line by line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from pathlib import Path

import pytest

from ..integration.service.server import TOKEN, Server, running_server
from .pages import SERVER_TOKEN, SERVER_URL, Block, all_blocks

#: Seconds one example may take (a kernel's start included).
EXAMPLE_SECONDS = 60
#: Examples run at once: most of an example's time is an interpreter starting. The
#: other test workers (``pytest -n``) share the cores, so each runs its share of 4.
CONCURRENT = max(1, 4 // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))

Done = subprocess.CompletedProcess[str]

PYTHON = [b for b in all_blocks("python") if b.marker != "not-run"]
SHELL = [b for b in all_blocks("sh") if b.marker == "run"]
NOT_RUN = [b for b in all_blocks("python") if b.marker == "not-run"]


def _run(argv: list[str], cwd: Path, stdin: str | None = None) -> Done:
    return subprocess.run(
        argv,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=EXAMPLE_SECONDS,
        env={k: v for k, v in os.environ.items() if k != "LMC_TOKEN"},
        check=False,
    )


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Done]]]:
    """Every Python example, started up front a few at a time (each in its own empty
    folder), the ones marked with-server against a real sandboxed ``lmc serve``; a
    server that does not start fails those alone."""

    def start(pool: ThreadPoolExecutor, code: str) -> Future[Done]:
        return pool.submit(_run, [sys.executable, "-"], tmp_path_factory.mktemp("example"), code)

    with ThreadPoolExecutor(max_workers=CONCURRENT) as pool, ExitStack() as stack:
        started = {b.name: start(pool, b.code) for b in PYTHON if b.marker is None}
        try:
            server: Server | None = stack.enter_context(
                running_server("--pool-size", "1", "--max-sessions", "4")
            )
        except (AssertionError, OSError, subprocess.SubprocessError) as exc:
            server, failure = None, exc
        for block in (b for b in PYTHON if b.marker == "with-server"):
            if server is None:
                started[block.name] = Future()
                started[block.name].set_exception(failure)
                continue
            code = block.code.replace(SERVER_URL, server.url)
            started[block.name] = start(pool, code.replace(SERVER_TOKEN, f"token={TOKEN!r}"))
        yield started
        wait(started.values(), timeout=EXAMPLE_SECONDS * len(started))


@pytest.mark.integration
@pytest.mark.parametrize("block", PYTHON, ids=[b.name for b in PYTHON])
def test_python_example_runs(block: Block, examples: dict[str, Future[Done]]) -> None:
    """Guards the docs' Python examples from drifting away from the API."""
    if block.marker == "with-server":
        assert SERVER_URL in block.code, f"a with-server example names no {SERVER_URL}"
    done = examples[block.name].result(timeout=EXAMPLE_SECONDS * len(examples))
    assert done.returncode == 0, f"{block.name}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"


@pytest.mark.integration
@pytest.mark.parametrize("block", SHELL, ids=[b.name for b in SHELL])
def test_shell_example_runs(block: Block, tmp_path: Path) -> None:
    """Guards the shell examples marked to run: each line exits 0 and says something."""
    for line in block.code.splitlines():
        command = line.split("#", 1)[0].strip()
        if not command:
            continue
        argv = command.split()
        if argv[0] == "lmc":  # the console script, as installed with this interpreter
            argv = [sys.executable, "-m", "lmc_runtime", *argv[1:]]
        done = _run(argv, tmp_path)
        assert done.returncode == 0 and done.stdout.strip(), (command, done.stderr[-2000:])


def test_the_examples_that_do_not_run_are_few_and_say_why() -> None:
    """Guards the examples' coverage: most run, and each skipped one gives a reason."""
    assert all(b.reason for b in NOT_RUN), [b.name for b in NOT_RUN if not b.reason]
    assert len(NOT_RUN) <= len(PYTHON) // 2, [b.name for b in NOT_RUN]
    assert SHELL, "no shell example is marked to run"
