"""ES import declarations in JavaScript cells: bindings that later cells see."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts
from tests.integration.conftest import Result, assert_lines, run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
]

#: Packages and files in the working directory, as `npm install` would leave them.
PROJECT = {
    "node_modules/esm-only/package.json": (
        '{"name": "esm-only", "type": "module", "exports": {"import": "./index.js"}}'
    ),
    "node_modules/esm-only/index.js": (
        "export default function greet(who) { return 'hi ' + who }\nexport const answer = 42\n"
    ),
    "node_modules/plain-cjs/package.json": '{"name": "plain-cjs", "main": "main.js"}',
    "node_modules/plain-cjs/main.js": (
        "module.exports = function made() { return 'made' }\nmodule.exports.extra = 7\n"
    ),
    "node_modules/babel-cjs/package.json": '{"name": "babel-cjs", "main": "main.js"}',
    "node_modules/babel-cjs/main.js": (
        "Object.defineProperty(exports, '__esModule', { value: true })\n"
        "exports.default = 'the default'\nexports.named = 'a name'\n"
    ),
    "local.mjs": "export const where = 'local'\nexport default 'local default'\n",
    "throws.cjs": "function explode() { throw new Error('while loading') }\nexplode()\n",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    for name, text in PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def js(project: Path) -> Iterator[Computer]:
    with Computer(cwd=project, timeouts=Timeouts(interrupt_grace=2.0)) as c:
        yield c


def js_run(computer: Computer, code: str) -> Result:
    return run(computer, code, "javascript", timeout=30)


def test_every_import_form_binds_names_that_later_cells_see(js: Computer) -> None:
    first = js_run(
        js,
        "import { readFileSync } from 'fs'\n"
        "import fs from 'node:fs'\n"
        "import * as path from 'path'\n"
        "import os, { EOL } from 'os'\n"
        "import { join as joined } from 'node:path'\n"
        "import 'util'\n"
        "typeof readFileSync",
    )
    assert first.status == "ok", first.output
    assert first.output == "'function'\n"
    later = js_run(
        js,
        "[readFileSync === fs.readFileSync, path.join('a', 'b'), joined('c', 'd'),"
        " typeof os.cpus, EOL === '\\n']",
    )
    assert later.output == "[ true, 'a/b', 'c/d', 'function', true ]\n"


def test_running_an_import_again_binds_it_again(js: Computer) -> None:
    cell = "import { sep } from 'path'\nsep"
    assert js_run(js, cell).output == "'/'\n"
    again = js_run(js, cell)
    assert again.status == "ok" and again.output == "'/'\n"


def test_packages_resolve_from_the_working_directory(js: Computer) -> None:
    result = js_run(
        js,
        "import greet, { answer } from 'esm-only'\n"
        "import made, { extra } from 'plain-cjs'\n"
        "import babel, { named } from 'babel-cjs'\n"
        "import * as whole from 'babel-cjs'\n"
        "[greet('you'), answer, made(), extra, babel, named, whole.default]",
    )
    assert result.status == "ok", result.output
    assert result.output == "[ 'hi you', 42, 'made', 7, 'the default', 'a name', 'the default' ]\n"


def test_a_local_es_module_and_dynamic_import(js: Computer) -> None:
    result = js_run(
        js,
        "import here, { where } from './local.mjs'\n"
        "const dynamic = await import('./local.mjs')\n"
        "const esm = await import('esm-only');\n"
        "[here, where, dynamic.where, esm.answer]",
    )
    assert result.status == "ok", result.output
    assert result.output == "[ 'local default', 'local', 'local', 42 ]\n"


def test_an_unknown_module_is_an_error_naming_its_line(js: Computer) -> None:
    result = js_run(
        js,
        "globalThis.beforeImport = true\nimport nothing from 'no-such-module-xyz'\n"
        "globalThis.afterImport = true",
    )
    assert result.status == "error"
    assert "Uncaught Error: Cannot find module 'no-such-module-xyz'" in result.output
    assert "at <cell" in result.output and ">:2:1" in result.output
    assert "Require stack" not in result.output and "runner.js" not in result.output
    state = js_run(js, "[typeof beforeImport, typeof afterImport, typeof nothing]")
    assert state.output == "[ 'boolean', 'undefined', 'undefined' ]\n"


def test_a_module_that_throws_while_loading_shows_its_own_stack(js: Computer) -> None:
    result = js_run(js, "\nimport broken from './throws.cjs'")
    assert result.status == "error"
    assert "Error: while loading" in result.output
    assert "throws.cjs:1:" in result.output and ">:2:1" in result.output
    assert "imports.js" not in result.output


def test_importing_a_name_the_code_declared_is_an_error(js: Computer) -> None:
    assert js_run(js, "const taken = 1").status == "ok"
    result = js_run(js, "import taken from 'fs'")
    assert result.status == "error"
    assert "SyntaxError: Identifier 'taken' has already been declared" in result.output
    assert ">:1:1" in result.output and "let taken" not in result.output
    assert js_run(js, "taken").output == "1\n"


def test_export_is_dropped_from_declarations(js: Computer) -> None:
    result = js_run(
        js,
        "export const shared = 2\nexport function twice(n) { return n * shared }\n"
        "const unlisted = 0\nexport { unlisted }\ntwice(21)",
    )
    assert result.output == "42\n"
    assert js_run(js, "twice(shared)").output == "4\n"


def test_import_lines_are_active_lines(js: Computer) -> None:
    pause = "await new Promise(r => setTimeout(r, 60))"
    result = js_run(js, f"import {{ basename }} from 'path'\n{pause}\nbasename('/a/b')")
    assert_lines(result.lines, [1, 2, 3])
    assert result.output == "'b'\n"
