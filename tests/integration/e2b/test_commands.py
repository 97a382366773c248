"""E2B's commands (envd's ``process.Process``) through the current Python SDK:
run in the foreground and the background, streamed output, exit codes, ``envs``,
``cwd``, ``user``, ``timeout``, stdin, ``list``, ``kill``, ``connect``, and PTYs."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from e2b import (
    CommandExitException,
    NotFoundException,
    Sandbox,
    SandboxException,
    TimeoutException,
)
from e2b.sandbox.commands.command_handle import PtySize

import lmc_runtime
from tests.integration.service.server import Server

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def sbx(e2b_env: Server) -> object:
    sandbox = Sandbox.create(timeout=120, envs={"SANDBOX_WIDE": "everywhere"})
    try:
        yield sandbox
    finally:
        sandbox.kill()


def test_a_command_streams_stdout_and_stderr_and_ends_with_its_code(sbx: Sandbox) -> None:
    seen: list[tuple[str, str]] = []
    result = sbx.commands.run(
        "echo out; echo err >&2; printf 'no newline'",
        on_stdout=lambda text: seen.append(("out", text)),
        on_stderr=lambda text: seen.append(("err", text)),
    )
    assert (result.exit_code, result.error) == (0, None)
    assert result.stdout == "out\nno newline"
    assert result.stderr == "err\n"
    assert ("err", "err\n") in seen
    with pytest.raises(CommandExitException) as failed:
        sbx.commands.run("echo partial; exit 3")
    assert failed.value.exit_code == 3
    assert failed.value.stdout == "partial\n"
    assert failed.value.error == "exit status 3"


def test_a_command_runs_in_the_home_as_user_with_the_sandboxs_and_its_own_variables(
    sbx: Sandbox,
) -> None:
    result = sbx.commands.run(
        'echo "$(whoami) $HOME $(pwd) $SANDBOX_WIDE $MINE"', envs={"MINE": "only-here"}
    )
    assert result.stdout == "user /home/user /home/user everywhere only-here\n"
    assert sbx.commands.run('echo "[$MINE]"').stdout == "[]\n"  # for that command only
    sbx.commands.run("mkdir -p work/deeper && echo hi > work/deeper/f")
    assert (
        sbx.commands.run("cat f; pwd", cwd="work/deeper").stdout == "hi\n/home/user/work/deeper\n"
    )
    assert sbx.commands.run("pwd", cwd="/tmp").stdout == "/tmp\n"
    assert sbx.commands.run("whoami", user="user").stdout == "user\n"
    with pytest.raises(SandboxException, match="one user"):
        sbx.commands.run("whoami", user="root")


def test_the_files_a_command_writes_are_the_sandboxs(sbx: Sandbox) -> None:
    sbx.commands.run("echo shared > /home/user/from-a-command.txt")
    assert sbx.files.read("/home/user/from-a-command.txt") == "shared\n"


#: Whether this checkout (which sandboxes read) lives under /tmp: its commands then
#: keep private /tmp folders, which leave it visible (see envd's process_launch).
_CHECKOUT_UNDER_TMP = Path("/tmp") in Path(lmc_runtime.__file__).resolve().parents


@pytest.mark.skipif(_CHECKOUT_UNDER_TMP, reason="this checkout is under /tmp")
def test_the_commands_of_a_sandbox_share_one_tmp(sbx: Sandbox) -> None:
    # One /tmp for every command, as on a machine.
    sbx.commands.run("mkdir -p /tmp/work && echo kept > /tmp/work/note")
    assert sbx.commands.run("cat /tmp/work/note").stdout == "kept\n"
    assert sbx.commands.run("stat -c %U /tmp/work").stdout == "user\n"


def test_background_commands_are_listed_connected_to_and_killed(sbx: Sandbox) -> None:
    first = sbx.commands.run("sleep 60", background=True)
    second = sbx.commands.run("echo started; sleep 60", background=True)
    listed = {process.pid: process for process in sbx.commands.list()}
    assert {first.pid, second.pid} <= listed.keys()
    assert listed[first.pid].cmd == "/bin/bash"
    assert listed[first.pid].args == ["-l", "-c", "sleep 60"]
    again = sbx.commands.connect(second.pid)
    assert again.pid == second.pid
    assert sbx.commands.kill(second.pid) is True
    with pytest.raises(CommandExitException) as killed:
        again.wait()
    assert killed.value.exit_code == -1
    assert killed.value.error == "signal: killed"
    assert first.kill() is True
    with pytest.raises(CommandExitException):
        first.wait()
    assert sbx.commands.kill(first.pid) is False  # gone
    assert {first.pid, second.pid}.isdisjoint(p.pid for p in sbx.commands.list())
    with pytest.raises(NotFoundException):
        sbx.commands.connect(first.pid)


def test_a_command_goes_on_when_its_client_leaves_or_times_out(sbx: Sandbox) -> None:
    with pytest.raises(TimeoutException):
        sbx.commands.run("sleep 1; echo done > /home/user/late.txt; sleep 60", timeout=2)
    (left,) = [p for p in sbx.commands.list() if "late.txt" in " ".join(p.args)]
    handle = sbx.commands.connect(left.pid)
    assert sbx.commands.run("cat /home/user/late.txt").stdout == "done\n"
    handle.kill()
    with pytest.raises(CommandExitException):
        handle.wait()


def test_stdin_is_sent_streamed_and_closed(sbx: Sandbox) -> None:
    cat = sbx.commands.run("cat", background=True, stdin=True)
    cat.send_stdin("Hello, ")
    sbx.commands.send_stdin(cat.pid, b"World!\n")
    sbx.commands.stream_input(cat.pid, ["streamed ", b"in order\n"])
    cat.close_stdin()
    result = cat.wait()
    assert result.stdout == "Hello, World!\nstreamed in order\n"
    # Without stdin=True the command reads end-of-input at once.
    assert sbx.commands.run("cat; echo eof").stdout == "eof\n"
    with pytest.raises(SandboxException):
        sleeper = sbx.commands.run("sleep 30", background=True)
        sbx.commands.send_stdin(sleeper.pid, "nobody reads this")


def test_output_streams_while_the_command_runs(sbx: Sandbox) -> None:
    sbx.commands.run("mkfifo /home/user/go")
    handle = sbx.commands.run("echo first; read line < /home/user/go; echo $line", background=True)
    first_line = threading.Event()
    results = []

    def wait() -> None:
        on_stdout = lambda text: first_line.set() if "first" in text else None  # noqa: E731
        results.append(handle.wait(on_stdout=on_stdout))

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    assert first_line.wait(30)  # while the command waits on the FIFO
    sbx.commands.run("echo second > /home/user/go")
    waiter.join(30)
    assert [result.stdout for result in results] == ["first\nsecond\n"]


def test_a_large_output_arrives_whole(sbx: Sandbox) -> None:
    result = sbx.commands.run("head -c 3000000 /dev/zero | tr '\\0' 'x'; echo")
    assert len(result.stdout) == 3_000_001
    assert set(result.stdout.strip()) == {"x"}


def test_a_pty_runs_an_interactive_shell_that_is_resized_and_killed(sbx: Sandbox) -> None:
    terminal = sbx.pty.create(PtySize(rows=24, cols=80), envs={"ABC": "123"}, cwd="/tmp")
    sbx.pty.send_stdin(terminal.pid, b"echo $ABC-$(pwd)-$(tput cols)-$(tty)\nexit\n")
    output: list[bytes] = []
    assert terminal.wait(on_pty=output.append).exit_code == 0
    assert "123-/tmp-80-/dev/" in b"".join(output).decode()

    resized = sbx.pty.create(PtySize(rows=24, cols=80))
    sbx.pty.resize(resized.pid, PtySize(rows=30, cols=100))
    sbx.pty.send_stdin(resized.pid, b"echo size=$(tput cols)x$(tput lines); exit\n")
    output.clear()
    assert resized.wait(on_pty=output.append).exit_code == 0
    assert "size=100x30" in b"".join(output).decode()

    other = sbx.pty.create(PtySize(rows=24, cols=80))
    assert sbx.pty.kill(other.pid) is True
    with pytest.raises(CommandExitException):
        other.wait()
    assert other.pid not in [p.pid for p in sbx.commands.list()]


def test_a_pty_is_connected_to_again(sbx: Sandbox) -> None:
    terminal = sbx.pty.create(PtySize(rows=24, cols=80), envs={"FOO": "bar"})
    terminal.disconnect()
    again = sbx.pty.connect(terminal.pid)
    sbx.pty.send_stdin(terminal.pid, b"echo $FOO-again\nexit 4\n")
    output: list[bytes] = []
    with pytest.raises(CommandExitException) as ended:
        again.wait(on_pty=output.append)
    assert ended.value.exit_code == 4
    assert "bar-again" in b"".join(output).decode()
