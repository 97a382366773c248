"""The package's layers point one way: no import circle between the top-level
subpackages of lmc_runtime (``backends``, ``service``, ``mcp``, ...).

The graph is built from the ``import`` and ``from`` statements of every module
(read with :mod:`ast`, nothing is imported), ``TYPE_CHECKING`` and function-level
imports included: each is a dependency of its folder. Its nodes are the
top-level subpackages and the top-level modules, so that a circle through a
module (``service`` -> ``x.py`` -> ``mcp`` -> ``service``) counts too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import lmc_runtime

PACKAGE = Path(lmc_runtime.__file__).parent

#: Circles known and left for now, each exactly as found (a strongly connected set
#: of top-level units); any other circle, or one of these that grows, fails.
ALLOWED: frozenset[frozenset[str]] = frozenset()


def _unit(root: Path, dotted: list[str]) -> str | None:
    """The top-level unit (subpackage or module) of ``dotted`` inside ``root``, if any."""
    if len(dotted) < 2 or dotted[0] != root.name:
        return None
    name = dotted[1]
    if (root / name).is_dir() or (root / f"{name}.py").is_file():
        return name
    return None


def _imported(tree: ast.AST, package: list[str]) -> Iterator[list[str]]:
    """The dotted names each import of a module in ``package`` names (module and
    module.name for ``from`` imports, relative ones resolved)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = base + (node.module.split(".") if node.module else [])
            else:
                module = (node.module or "").split(".")
            yield module
            for alias in node.names:
                yield [*module, alias.name]


def import_graph(root: Path) -> dict[str, set[str]]:
    """Which top-level units of the package at ``root`` each one imports."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        package = parts[:-1]
        source = _unit(root, parts if parts[-1] != "__init__" else parts[:-1])
        if source is None:  # the package's own __init__
            source = "__init__"
        targets = graph.setdefault(source, set())
        for dotted in _imported(ast.parse(path.read_text(encoding="utf-8")), package):
            target = _unit(root, dotted)
            if target is not None and target != source:
                targets.add(target)
    return graph


def circles(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected sets of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(frozenset(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_circle_finder_sees_a_circle_through_a_module_and_relative_imports(
    tmp_path: Path,
) -> None:
    """The check can fail: a circle a -> shared.py -> b -> a, made of relative,
    absolute and function-level imports, is found; a one-way chain is not."""
    root = tmp_path / "lmc_runtime"
    _write(
        root,
        {
            "__init__.py": "",
            "a/__init__.py": "from ..shared import thing\n",
            "shared.py": "def f():\n    import lmc_runtime.b.inner\n",
            "b/__init__.py": "",
            "b/inner.py": "from .. import a\n",
            "c/__init__.py": "from lmc_runtime.a import x\n",
        },
    )
    assert circles(import_graph(root)) == [frozenset({"a", "shared", "b"})]
    (root / "b/inner.py").write_text("")
    assert circles(import_graph(root)) == []


def test_no_import_circle_between_top_level_subpackages() -> None:
    """No circle of imports runs through a top-level subpackage of lmc_runtime,
    except the ones listed in ALLOWED."""
    folders = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    found = circles(import_graph(PACKAGE))
    unexpected = [sorted(c) for c in found if c & folders and c not in ALLOWED]
    assert unexpected == [], f"import circles between lmc_runtime's folders: {unexpected}"


def test_no_import_circle_between_top_level_modules() -> None:
    """Nor between lmc_runtime's top-level modules (execution.py reads the Computer
    it prepares a run for through a protocol, RunHost, instead of importing it)."""
    found = [sorted(c) for c in circles(import_graph(PACKAGE)) if c not in ALLOWED]
    assert found == [], f"import circles in lmc_runtime: {found}"


def test_mcp_imports_nothing_of_the_service() -> None:
    """lmc mcp --http takes what it shares with lmc serve (the token rules, the
    hardened server) from lmc_runtime.web, not from the service's package."""
    assert "service" not in import_graph(PACKAGE)["mcp"]
