"""The node baseline: ``node`` driven directly over pipes, and lmc-runtime on the same code.

:class:`RawNode` runs a minimal eval loop (one JSON-encoded snippet a line on
stdin, evaluated with ``vm.runInThisContext``; its output, then an end marker,
on stdout), so its warm round trip is the floor any node runtime can reach.
Given the ``typescript`` package, the loop first transpiles each snippet with
``transpileModule`` and the runner's compiler options: the TypeScript floor.
:func:`lmc_round_trips` times the same code through :class:`~lmc_runtime.Computer`.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import subprocess
import time
from pathlib import Path

from lmc_runtime.computer import Computer
from lmc_runtime.replies import Status

from .workloads import BenchError, timed

__all__ = ["JS_PRINT_ONE", "TS_PRINT_ONE", "RawNode", "lmc_round_trips"]

#: The warm round trip's code, on both sides.
JS_PRINT_ONE = "console.log(1)"
TS_PRINT_ONE = "console.log(1 as number)"

_END = b"\x00lmc-raw-done\n"

_EVAL_LOOP = r"""
const vm = require('vm');
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  try { vm.runInThisContext(JSON.parse(line)); } catch (e) { console.error(e); }
  process.stdout.write('\0lmc-raw-done\n');
});
"""

#: The same loop for TypeScript; the compiler's folder is its argument.
_TS_EVAL_LOOP = r"""
const vm = require('vm');
const ts = require(process.argv[1]);
const options = {
  fileName: 'cell.ts',
  reportDiagnostics: true,
  compilerOptions: {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Preserve,
    verbatimModuleSyntax: true,
    sourceMap: true,
  },
};
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  try {
    vm.runInThisContext(ts.transpileModule(JSON.parse(line), options).outputText);
  } catch (e) { console.error(e); }
  process.stdout.write('\0lmc-raw-done\n');
});
"""


class RawNode:
    """One ``node`` process running a bare eval loop over its stdin and stdout.

    With ``typescript`` (the package's folder), snippets are TypeScript.
    """

    def __init__(self, *, node: str | None = None, typescript: Path | None = None) -> None:
        executable = node or shutil.which("node")
        if executable is None:
            raise BenchError("node is not installed")
        loop = [_EVAL_LOOP] if typescript is None else [_TS_EVAL_LOOP, str(typescript)]
        self._process = subprocess.Popen(
            [executable, "-e", *loop],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin = self._process.stdin
        self._stdout = self._process.stdout.fileno()
        os.set_blocking(self._stdout, False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout, selectors.EVENT_READ)
        self._buffer = b""

    def execute(self, code: str, *, timeout: float) -> str:
        """Run ``code``; return what it printed once the end marker came."""
        deadline = time.monotonic() + timeout
        self._stdin.write(json.dumps(code).encode("utf-8") + b"\n")
        self._stdin.flush()
        while _END not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"raw node did not finish {code!r} in {timeout:g} s")
            if not self._selector.select(left):
                continue
            data = os.read(self._stdout, 65536)
            if not data:
                raise BenchError(f"raw node ended while running {code!r}")
            self._buffer += data
        output, _, self._buffer = self._buffer.partition(_END)
        return output.decode("utf-8", "replace")

    def round_trips(self, n: int, timeout: float, code: str = JS_PRINT_ONE) -> list[float]:
        """``n`` timed warm round trips of ``code`` (``console.log(1)``), in seconds."""
        self.execute(code, timeout=timeout)  # warm up
        return timed(lambda: self.execute(code, timeout=timeout), n)

    def close(self) -> None:
        """End node (EOF on its stdin, then a kill if it lingers); never raises."""
        self._selector.close()
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        with contextlib.suppress(OSError):
            os.close(self._stdout)


async def lmc_round_trips(
    computer: Computer,
    n: int,
    *,
    timeout: float,
    code: str = JS_PRINT_ONE,
    language: str = "javascript",
) -> list[float]:
    """``n`` timed warm ``arun`` round trips of ``code`` on ``language``'s backend."""

    async def once() -> float:
        start = time.perf_counter()
        status = None
        text = []
        async for message in computer.arun(language, code, timeout=timeout):
            if message.format == "output":
                text.append(str(message.content))
            elif message.is_final:
                status = message.status
        seconds = time.perf_counter() - start
        if status != Status.OK:
            raise BenchError(f"lmc-runtime ended {code!r} with status {status!r}: {text!r}")
        return seconds

    await once()  # warm up (starts node on first use)
    return [await once() for _ in range(n)]
