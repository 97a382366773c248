"""Count a Python package's code lines and modules.

    python -m benchmarks.code_lines lmc_runtime
    python -m benchmarks.code_lines lmc_runtime --json

A code line holds at least one token that is not a comment and is not part of a
docstring (the string that opens a module, class or function); blank lines,
comment-only lines and docstring lines are left out. A module is a ``.py`` file.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import sys
import tokenize
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Count", "code_lines", "count_tree", "main"]

#: Tokens that never make a line count as code.
_LAYOUT = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


@dataclass(frozen=True)
class Count:
    modules: int
    code_lines: int


def _docstring_lines(tree: ast.Module) -> set[int]:
    """The line numbers every docstring of ``tree`` spans."""
    lines: set[int] = set()
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(tree):
        if not isinstance(node, owners) or not node.body:
            continue
        first = node.body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            end = first.end_lineno if first.end_lineno is not None else first.lineno
            lines.update(range(first.lineno, end + 1))
    return lines


def code_lines(source: str) -> int:
    """How many lines of ``source`` hold code (see the module's docstring)."""
    docstrings = _docstring_lines(ast.parse(source))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in _LAYOUT:
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def count_tree(root: Path) -> Count:
    """Modules and code lines of every ``.py`` file under ``root``."""
    files = sorted(root.rglob("*.py"))
    total = sum(code_lines(path.read_text(encoding="utf-8")) for path in files)
    return Count(modules=len(files), code_lines=total)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.code_lines")
    parser.add_argument("root", type=Path, help="a package's folder, e.g. lmc_runtime")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"{args.root} is not a folder")
    count = count_tree(args.root)
    if args.json:
        sys.stdout.write(json.dumps({"root": str(args.root), **asdict(count)}) + "\n")
    else:
        sys.stdout.write(f"{args.root}: {count.modules} modules, {count.code_lines} code lines\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
