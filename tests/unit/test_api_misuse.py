"""Misuse of the Python API raises at once; only what a message holds becomes a reply.

Regression: ``run("print(3)")`` used to answer ``[lmc] not understood: give the code
too``, a reply an agent loop would feed to its model, and ``run(("python", code))``
was refused though the README documents the tuple.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from lmc_runtime import ArgumentTypeError, ArgumentValueError, Computer, UsageError
from lmc_runtime.backends import BackendEntry, Registry

from ..fakes import ScriptedBackend


def make() -> tuple[Computer, ScriptedBackend]:
    backend = ScriptedBackend()
    registry = Registry([])
    registry.add(BackendEntry("fake", "tests.fakes:ScriptedBackend", ("scripted",)), backend)
    return Computer(registry=registry), backend


def test_a_tuple_and_two_arguments_are_the_same_call() -> None:
    computer, backend = make()
    with computer:
        as_tuple = [m.content for m in computer.run(("fake", "print a"))]
        as_pair = [m.content for m in computer.run("fake", "print a")]
    assert as_tuple == as_pair == ["a\n", None]
    assert [code for code, _ in backend.sessions[0].executed] == ["print a", "print a"]


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (("print(3)",), "has no code"),
        (("fake", 3), "code must be a string"),
        ((("fake",),), "two strings"),
        ((("fake", "print a", "x"),), "two strings"),
        ((("fake", 3),), "two strings"),
        ((("fake", "print a"), "print b"), "not both"),
        (
            ({"role": "assistant", "type": "code", "format": "fake", "content": "x"}, "y"),
            "not both",
        ),
        ((42,), "not int"),
        ((None,), "not NoneType"),
        ((["fake", "print a"],), "not list"),
    ],
)
def test_misuse_raises_type_error_before_anything_runs(args: tuple[Any, ...], phrase: str) -> None:
    computer, backend = make()
    with computer:
        with pytest.raises(TypeError, match=phrase) as info:
            computer.run(*args)
    assert isinstance(info.value, ArgumentTypeError) and isinstance(info.value, UsageError)
    assert backend.sessions == []


@pytest.mark.parametrize(
    ("kwargs", "error", "phrase"),
    [
        ({"timout": 5}, TypeError, "unexpected keyword argument 'timout'"),
        ({"timeout": 0}, ValueError, "positive number"),
        ({"timeout": float("nan")}, ValueError, "positive number"),
        ({"timeout": "5"}, ValueError, "positive number"),
        # Regression: an integer past a float's range raised OverflowError.
        ({"timeout": 10**400}, ValueError, "an integer of 401 digits"),
        ({"timeout": True}, ValueError, "positive number"),
        ({"env": ["A=1"]}, TypeError, "mapping of str to str"),
        ({"env": {"A": 1}}, ValueError, "A must be a string"),
        ({"env": {"": "x"}}, ValueError, "invalid variable name"),
        ({"env": {"A=B": "x"}}, ValueError, "invalid variable name"),
        ({"env": {"A": "x\0y"}}, ValueError, "NUL"),
        # Regression: a lone surrogate reached the kernel's JSON packer (an internal
        # error), and a value past Linux's 128 KiB a failed start (E2BIG).
        ({"env": {"A": "\ud800"}}, ValueError, "not valid UTF-8"),
        ({"env": {"\udfff": "x"}}, ValueError, "not valid UTF-8"),
        ({"env": {"A": "x" * 140_000}}, ValueError, "longer than 131071 bytes"),
        ({"env": {f"V{i}": "x" * 100_000 for i in range(11)}}, ValueError, "at most 1048576"),
    ],
)
def test_bad_keyword_values_raise(kwargs: dict[str, Any], error: type, phrase: str) -> None:
    computer, _ = make()
    with computer:
        with pytest.raises(error, match=phrase) as info:
            computer.run("fake", "print a", **kwargs)
    assert isinstance(info.value, ArgumentTypeError | ArgumentValueError)


def test_async_misuse_raises_at_the_call_not_at_the_first_message() -> None:
    async def main() -> None:
        computer, _ = make()
        async with computer:
            with pytest.raises(TypeError, match="has no code"):
                computer.arun("print(3)")

    anyio.run(main)


def test_env_reaches_the_backend_merged_over_the_message_extras() -> None:
    computer, backend = make()
    message = {
        "role": "assistant",
        "type": "code",
        "format": "fake",
        "content": "print a",
        "extras": {"env": {"A": "from message", "B": "b"}},
    }
    with computer:
        list(computer.run(message, env={"A": "from call"}))
        list(computer.run("fake", "print a"))
    (_, first), (_, second) = backend.sessions[0].executed
    assert dict(first.env) == {"A": "from call", "B": "b"}
    assert dict(second.env) == {}


def test_interpreters_and_a_registry_do_not_go_together() -> None:
    with pytest.raises(TypeError, match="not both"):
        Computer(python="/usr/bin/python3", registry=Registry([]))


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [({"python": 3}, TypeError), ({"node": ""}, ValueError), ({"r": b"/usr/bin/R"}, TypeError)],
)
def test_interpreter_arguments_are_checked(kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        Computer(**kwargs)


def test_interpreters_choose_the_default_registry_s_backends(tmp_path: Any) -> None:
    computer = Computer(python=tmp_path / "venv/bin/python", node="/opt/node/bin/node")
    options = {name: dict(computer.registry.entry(name).options) for name in computer.registry}
    assert options["python"] == {"python": str(tmp_path / "venv/bin/python")}
    assert options["javascript"] == options["typescript"] == {"node": "/opt/node/bin/node"}
    assert options["r"] == {}
