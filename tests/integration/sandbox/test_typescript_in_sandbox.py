"""TypeScript runs inside the sandbox: the compiler next to the runner is visible there."""

from __future__ import annotations

import pytest

from lmc_runtime.backends.registry import Registry

from .conftest import Opener, needs_bwrap, run, text

_STATUS = Registry().availability("typescript")

pytestmark = [
    pytest.mark.anyio,
    needs_bwrap,
    pytest.mark.skipif(not _STATUS.available, reason=f"no TypeScript: {_STATUS.reason}"),
]


async def test_typescript_runs_sandboxed_with_imports_and_its_own_lines(
    sandboxed: Opener,
) -> None:
    async with sandboxed() as (_, computer):
        first = await run(
            computer,
            "import { join } from 'path'\nenum Side { Left = 40 }\nconst n: number = Side.Left + 2\n"
            "console.log(join('a', String(n)))",
            "typescript",
        )
        failed = await run(
            computer, "interface A { a: number }\n\nthrow new Error('inside')", "typescript"
        )
    assert "a/42" in text(first)
    assert (first[-1].extras or {}).get("status") == "ok", text(first)
    assert "Error: inside" in text(failed) and ">:3:7" in text(failed)
