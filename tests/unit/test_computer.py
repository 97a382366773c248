"""The executor's routing, replies, budget and lifecycle, on the scripted fake backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from lmc_runtime import Computer, Limits, Timeouts, UsageError
from lmc_runtime.backends import BackendEntry, Registry
from lmc_runtime.messages import Message

from ..fakes import ScriptedBackend


def make(backend: ScriptedBackend | None = None, **kwargs: Any) -> tuple[Computer, ScriptedBackend]:
    backend = backend or ScriptedBackend()
    registry = Registry([])
    registry.add(BackendEntry("fake", "tests.fakes:ScriptedBackend", ("scripted",)), backend)
    return Computer(registry=registry, **kwargs), backend


def code(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "type": "code", "format": "fake", "content": text, **extra}


def test_routes_by_format_and_alias_to_one_persistent_session() -> None:
    computer, backend = make()
    with computer:
        first = list(computer.run(code("print a")))
        second = list(computer.run("scripted", "print b"))
    assert [m.content for m in first] == ["a\n", None]
    assert [m.content for m in second] == ["b\n", None]
    assert len(backend.sessions) == 1 and backend.sessions[0].closed


def test_every_reply_points_at_the_code_message_id() -> None:
    computer, _ = make()
    with computer:
        messages = list(computer.run(code("print a\nline 1", id="c1")))
    assert all(m.in_reply_to == "c1" and m.role == "computer" and m.id for m in messages)


def test_a_message_without_id_gets_one_shared_by_its_replies() -> None:
    computer, _ = make()
    with computer:
        messages = list(computer.run(code("print a")))
    assert len({m.in_reply_to for m in messages}) == 1 and messages[0].in_reply_to


def test_model_messages_are_accepted() -> None:
    computer, _ = make()
    msg = Message(role="assistant", type="code", format="fake", content="print m", id="x")
    with computer:
        assert [m.content for m in computer.run(msg)] == ["m\n", None]


@pytest.mark.parametrize(
    ("message", "status", "phrase"),
    [
        (
            {"role": "user", "type": "message", "content": "hi", "id": "u"},
            "not_understood",
            "only assistant code",
        ),
        (code("x", format="klingon"), "not_understood", "unknown language 'klingon'"),
        (code(7), "malformed", "content"),
        ({"type": "code"}, "malformed", "role"),
        (code("x", extras={"env": {"A": 1}}), "not_understood", "extras.env A must be a string"),
        (code("x", extras={"env": ["A"]}), "not_understood", "extras.env must be an object"),
    ],
)
def test_unrunnable_messages_get_one_not_understood_reply(
    message: Any, status: str, phrase: str
) -> None:
    computer, backend = make()
    with computer:
        replies = list(computer.run(message))
    assert len(replies) == 1
    assert replies[0].extras["status"] == status  # type: ignore[index]
    assert phrase in replies[0].content
    assert backend.sessions == []


def test_unavailable_language_says_why() -> None:
    computer, _ = make(ScriptedBackend(available=False))
    with computer:
        (reply,) = computer.run(code("print a"))
    assert reply.extras["status"] == "unavailable"  # type: ignore[index]
    assert "fake is switched off" in reply.content


def test_backend_start_failure_is_a_message_not_an_exception() -> None:
    computer, _ = make(ScriptedBackend(start_error="no kernel for you"))
    with computer:
        reply, final = computer.run(code("print a"))
    assert reply.extras["status"] == "backend_error"  # type: ignore[index]
    assert "no kernel for you" in reply.content
    assert final.is_final


def test_an_internal_bug_in_a_backend_never_reaches_the_caller() -> None:
    computer, _ = make()
    with computer:
        messages = list(computer.run(code("print a\ncrash boom")))
    assert messages[0].content == "a\n"
    assert messages[-2].extras["status"] == "backend_error"  # type: ignore[index]
    assert "boom" in messages[-2].content
    assert messages[-1].is_final


def test_output_budget_applies_to_every_backend(tmp_path: Path) -> None:
    computer, _ = make(limits=Limits(output_bytes=4000, spill_dir=tmp_path))
    with computer:
        messages = list(computer.run(code("flood 100000")))
    text = "".join(m.content for m in messages if m.format == "output")
    assert "bytes omitted" in text and len(text) < 5000
    truncated = [m for m in messages if (m.extras or {}).get("status") == "truncated"]
    assert len(truncated) == 1 and messages[-1].is_final
    assert Path(truncated[0].extras["output_path"]).stat().st_size == 100000  # type: ignore[index]


def test_options_carry_timeouts_and_tracking() -> None:
    computer, backend = make(
        timeouts=Timeouts(execution=9, interrupt_grace=1), track_active_line=False
    )
    with computer:
        list(computer.run(code("print a")))
        list(computer.run(code("print b"), timeout=2))
    options = [o for _, o in backend.sessions[0].executed]
    assert [o.timeout for o in options] == [9, 2]
    assert options[0].interrupt_grace == 1 and not options[0].track_lines


def test_an_execution_has_a_300_second_timeout_by_default() -> None:
    """Computer() does not wait forever on a `while True`: its runs have a deadline."""
    computer, backend = make()
    with computer:
        list(computer.run(code("print a")))
    assert Timeouts().execution == 300
    assert [o.timeout for _, o in backend.sessions[0].executed] == [300]


def test_timeouts_execution_none_turns_the_deadline_off() -> None:
    """Timeouts(execution=None) says 'no timeout' explicitly."""
    computer, backend = make(timeouts=Timeouts(execution=None))
    with computer:
        list(computer.run(code("print a")))
    assert [o.timeout for _, o in backend.sessions[0].executed] == [None]


def test_session_settings_carry_cwd_and_env(tmp_path: Path) -> None:
    computer, backend = make(cwd=tmp_path, env={"A": "1"})
    with computer:
        list(computer.run(code("print a")))
    assert backend.settings[0].cwd == tmp_path and backend.settings[0].env == {"A": "1"}


def test_async_interrupt_reaches_the_running_session() -> None:
    async def main() -> list[Any]:
        computer, backend = make()
        seen: list[Any] = []
        async with computer:
            async with anyio.create_task_group() as tg:

                async def consume() -> None:
                    async for m in computer.arun(code("print go\nwait")):
                        seen.append(m.content)
                        if m.content == "go\n":
                            tg.start_soon(computer.ainterrupt)

                tg.start_soon(consume)
        assert backend.sessions[0].interrupts == 1
        return seen

    seen = anyio.run(main)
    assert seen[0] == "go\n" and "interrupted" in seen[1] and seen[-1] is None


def test_restart_reaches_the_session_and_unknown_language_is_a_usage_error() -> None:
    computer, backend = make()
    with computer:
        list(computer.run(code("print a")))
        computer.restart("scripted")
        with pytest.raises(UsageError):
            computer.restart("klingon")
    assert backend.sessions[0].restarts == 1


def test_input_callback_is_passed_to_the_backend() -> None:
    computer, _ = make(on_input=lambda prompt: "42")
    with computer:
        messages = list(computer.run(code("input age? ")))
    assert messages[0].content == "age? 42\n"


def test_closed_computer_refuses_work() -> None:
    computer, _ = make()
    with computer:
        pass
    with pytest.raises(UsageError):
        list(computer.run(code("print a")))


def test_async_and_sync_use_do_not_mix() -> None:
    async def main() -> None:
        computer, _ = make()
        async with computer:
            with pytest.raises(UsageError):
                list(computer.run(code("print a")))

    anyio.run(main)


def test_languages_lists_availability_without_starting_anything() -> None:
    computer, backend = make(ScriptedBackend(available=False))
    status = computer.languages["fake"]
    assert not status.available and status.reason == "fake is switched off"
    assert status.aliases == ("scripted",) and backend.sessions == []


def test_spill_files_live_in_the_computers_own_folder_and_go_with_it() -> None:
    """Regression: whole outputs were spilled into the shared /tmp/lmc-runtime-output
    and never removed."""
    computer, _ = make(limits=Limits(output_bytes=4000))
    with computer:
        messages = list(computer.run(code("flood 100000")))
        (cut,) = [m for m in messages if (m.extras or {}).get("status") == "truncated"]
        saved = Path(cut.extras["output_path"])  # type: ignore[index]
        assert saved.parent == computer.spill_dir
        assert saved.stat().st_size == 100000
    assert not saved.exists() and not saved.parent.exists()


def test_a_given_spill_dir_is_left_in_place(tmp_path: Path) -> None:
    computer, _ = make(limits=Limits(output_bytes=4000, spill_dir=tmp_path))
    with computer:
        list(computer.run(code("flood 100000")))
    assert computer.spill_dir == tmp_path and len(list(tmp_path.iterdir())) == 1


def test_unknown_language_reply_names_only_languages_that_run_here() -> None:
    """Regression: the reply listed applescript on Linux."""
    registry = Registry([])
    registry.add(BackendEntry("fake", "tests.fakes:ScriptedBackend", ()), ScriptedBackend())
    off = ScriptedBackend(available=False)
    registry.add(BackendEntry("offline", "tests.fakes:ScriptedBackend", ()), off)
    with Computer(registry=registry) as computer:
        (reply,) = computer.run(code("x", format="klingon"))
    assert reply.extras["reason"].endswith("this computer runs: fake")  # type: ignore[index]
