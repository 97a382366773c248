"""lmc_runtime.backends.registry: aliases resolve case-insensitively, backends are
imported lazily on first ``get``, and a backend that cannot load is reported as
unavailable with a reason instead of breaking the registry."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime.backends.base import Availability
from lmc_runtime.backends.python import PythonBackend
from lmc_runtime.backends.r import RBackend
from lmc_runtime.backends.registry import BackendEntry, Registry, default_entries

FAKE_BACKEND = """
from lmc_runtime.backends.base import Availability

class FakeBackend:
    name = "fake"
    aliases = ("fk", "Fake-Lang")

    def availability(self):
        return Availability.yes()

    async def start(self, task_group, settings):
        raise NotImplementedError

class DownBackend(FakeBackend):
    def availability(self):
        return Availability.no("fakec is not installed")
"""


@pytest.fixture
def fake_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The name of a fresh, not yet imported module holding fake backends."""
    name = f"lmc_fake_backend_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(FAKE_BACKEND)
    (tmp_path / f"{name}_broken.py").write_text("import lmc_no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)
    sys.modules.pop(f"{name}_broken", None)


def _registry(module: str, attr: str = "FakeBackend") -> Registry:
    return Registry([BackendEntry("fake", f"{module}:{attr}", ("fk", "Fake-Lang"))])


@pytest.mark.parametrize("spelling", ["fake", "FAKE", "Fake", "fk", "FK", "fake-lang", "FAKE-LANG"])
def test_names_and_aliases_resolve_case_insensitively(fake_module: str, spelling: str) -> None:
    assert _registry(fake_module).resolve(spelling) == "fake"


@pytest.mark.parametrize("spelling", ["python", "Python", "PY", "python3", "IPython"])
def test_default_python_aliases_resolve(spelling: str) -> None:
    assert Registry().resolve(spelling) == "python"


@pytest.mark.parametrize("unknown", ["cobol", "", "fak", "fake ", "pyth"])
def test_unknown_names_resolve_to_none(fake_module: str, unknown: str) -> None:
    assert _registry(fake_module).resolve(unknown) is None


def test_iteration_lists_canonical_names_only() -> None:
    assert list(Registry()) == [entry.name for entry in default_entries()]
    assert "python" in list(Registry())


def test_import_is_deferred_to_the_first_get(fake_module: str) -> None:
    registry = _registry(fake_module)
    assert registry.resolve("FK") == "fake"
    assert registry.entry("fake").target == f"{fake_module}:FakeBackend"
    assert fake_module not in sys.modules, "constructing and resolving must not import"
    backend = registry.get("fake")
    assert fake_module in sys.modules
    assert type(backend).__name__ == "FakeBackend"
    assert registry.get("fake") is backend, "the instance is created once and cached"


def test_availability_comes_from_the_backend(fake_module: str) -> None:
    assert _registry(fake_module).availability("fake") == Availability.yes()
    down = _registry(fake_module, "DownBackend").availability("fake")
    assert down == Availability(False, "fakec is not installed")


def test_missing_module_gives_unavailable_with_a_reason() -> None:
    registry = Registry([BackendEntry("ghost", "lmc_no_such_module_xyz:Backend")])
    availability = registry.availability("ghost")
    assert availability.available is False
    assert availability.reason is not None
    assert "could not be loaded" in availability.reason
    assert "lmc_no_such_module_xyz" in availability.reason
    with pytest.raises(ImportError):
        registry.get("ghost")


def test_missing_dependency_of_the_backend_gives_unavailable(fake_module: str) -> None:
    registry = Registry([BackendEntry("broken", f"{fake_module}_broken:Backend")])
    availability = registry.availability("broken")
    assert availability.available is False
    assert availability.reason is not None
    assert "lmc_no_such_dependency_xyz" in availability.reason


def test_missing_attribute_gives_unavailable(fake_module: str) -> None:
    availability = _registry(fake_module, "NoSuchBackend").availability("fake")
    assert availability.available is False


def test_add_with_an_instance_skips_the_import(fake_module: str) -> None:
    registry = Registry([])
    instance = object()
    registry.add(BackendEntry("inst", f"{fake_module}:FakeBackend", ("i",)), instance)  # type: ignore[arg-type]
    assert registry.get(registry.resolve("I") or "") is instance
    assert fake_module not in sys.modules


def test_re_adding_an_entry_drops_the_loaded_instance(fake_module: str) -> None:
    registry = _registry(fake_module)
    first = registry.get("fake")
    registry.add(BackendEntry("fake", f"{fake_module}:DownBackend"))
    second = registry.get("fake")
    assert second is not first
    assert type(second).__name__ == "DownBackend"


def test_interpreters_given_to_the_registry_reach_their_backends() -> None:
    registry = Registry(python="/opt/env/bin/python", r="/opt/R/bin/R", node="/opt/node")
    python, r = registry.get("python"), registry.get("r")
    assert isinstance(python, PythonBackend) and python.python == "/opt/env/bin/python"
    assert isinstance(r, RBackend) and r.r == "/opt/R/bin/R"
    for name in ("javascript", "typescript"):
        assert registry.entry(name).options == (("node", "/opt/node"),)
        reason = registry.availability(name).reason
        assert reason is not None and "/opt/node" in reason, "the node given is the one used"
    assert all(not entry.options for entry in default_entries())


def test_interpreters_apply_to_the_default_entries_only() -> None:
    with pytest.raises(TypeError):
        Registry([], python="/opt/env/bin/python")
