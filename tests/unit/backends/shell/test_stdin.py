"""The stdin of a run, and the route that carries it and the run's prompt."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio

from lmc_runtime.backends.core import Finished, Output
from lmc_runtime.backends.shell.stdin import ShellRoute, StdinSource


def test_without_a_callback_stdin_is_dev_null(tmp_path: Path) -> None:
    source = StdinSource(tmp_path, 1, interactive=False)
    assert source.path == os.devnull and not source.interactive
    assert source.reader_waiting(os.getsid(0)) is False
    source.close()


def test_with_a_callback_stdin_is_a_fifo_removed_on_close(tmp_path: Path) -> None:
    source = StdinSource(tmp_path, 2, interactive=True)
    fifo = Path(source.path)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    source.answer("hello")
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert os.read(fd, 100) == b"hello\n"
    finally:
        os.close(fd)
    source.close()
    assert not fifo.exists()


def test_nobody_reads_a_fresh_fifo(tmp_path: Path) -> None:
    source = StdinSource(tmp_path, 3, interactive=True)
    try:
        assert source.reader_waiting(os.getsid(0)) is False
    finally:
        source.close()


def test_the_route_keeps_the_unfinished_last_line_and_signals_output() -> None:
    async def main() -> None:
        route = ShellRoute(1, "tag")
        assert route.stdin == os.devnull and route.tail == ""
        await route.put(Output("first line\nname"))
        assert route.activity.is_set() and route.tail == "name"
        route.activity = anyio.Event()
        await route.put(Output("? "))
        assert route.activity.is_set() and route.tail == "name? "
        await route.put(Output("x" * 1000))
        assert len(route.tail) == 400
        await route.put(Finished())
        assert route.finished.is_set()
        route.close()

    anyio.run(main)
