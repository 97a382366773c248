"""E2B's commands through the SDK the stored copy of E2B's test suites matches
(``e2b`` 2.45, its own virtualenv, run in a subprocess), through the current
SDK's async client, and through the JS SDK (``@e2b/code-interpreter``, run by
node from the folder its set-up installs it in)."""

from __future__ import annotations

import pytest

from tests.integration.e2b.sdk_env import js_sdk_folder, old_sdk_python, run_sdk_script
from tests.integration.service.server import Server

pytestmark = pytest.mark.timeout(180)

#: What the older SDK does with commands; prints one JSON object of what it saw.
SCRIPT = r"""
import json
from e2b import CommandExitException, NotFoundException, Sandbox, SandboxException
from e2b.sandbox.commands.command_handle import PtySize

seen = {}
sbx = Sandbox.create(timeout=120)
try:
    import e2b
    seen["version"] = e2b.__version__ if hasattr(e2b, "__version__") else None
    result = sbx.commands.run("echo out; echo err >&2; echo $MINE", envs={"MINE": "mine"})
    seen["run"] = [result.stdout, result.stderr, result.exit_code]
    try:
        sbx.commands.run("exit 5")
    except CommandExitException as exc:
        seen["exit"] = [exc.exit_code, exc.error]
    try:
        sbx.commands.run("id", user="root")
    except SandboxException as exc:
        seen["root"] = str(exc)
    seen["cwd"] = sbx.commands.run("pwd", cwd="/tmp").stdout
    sleeper = sbx.commands.run("sleep 60", background=True)
    seen["listed"] = sleeper.pid in [p.pid for p in sbx.commands.list()]
    again = sbx.commands.connect(sleeper.pid)
    seen["killed"] = sbx.commands.kill(sleeper.pid)
    try:
        again.wait()
    except CommandExitException as exc:
        seen["kill_end"] = [exc.exit_code, exc.error]
    try:
        sbx.commands.connect(sleeper.pid)
    except NotFoundException:
        seen["gone"] = True
    cat = sbx.commands.run("cat", background=True, stdin=True)
    sbx.commands.send_stdin(cat.pid, "to cat\n")
    for stdout, _, _ in cat:
        seen["stdin"] = stdout
        break
    cat.kill()
    terminal = sbx.pty.create(PtySize(rows=24, cols=80), envs={"ABC": "123"})
    sbx.pty.resize(terminal.pid, PtySize(rows=24, cols=90))
    sbx.pty.send_stdin(terminal.pid, b"echo $ABC-$(tput cols)\nexit\n")
    out = []
    seen["pty_exit"] = terminal.wait(on_pty=out.append).exit_code
    seen["pty"] = "123-90" in b"".join(out).decode()
finally:
    sbx.kill()
print(json.dumps(seen))
"""


def test_the_older_sdk_runs_commands_and_ptys(e2b_env: Server) -> None:
    seen = run_sdk_script([str(old_sdk_python()), "-c", SCRIPT], timeout=150)
    assert seen["run"] == ["out\nmine\n", "err\n", 0]
    assert seen["exit"] == [5, "exit status 5"]
    assert "one user" in seen["root"]
    assert seen["cwd"] == "/tmp\n"
    assert seen["listed"] and seen["killed"] and seen["gone"]
    assert seen["kill_end"] == [-1, "signal: killed"]
    assert seen["stdin"] == "to cat\n"
    assert seen["pty_exit"] == 0 and seen["pty"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_async_sdk_runs_commands_and_streams_stdin(e2b_env: Server) -> None:
    from e2b import AsyncSandbox, CommandExitException

    sbx = await AsyncSandbox.create(timeout=120)
    try:
        chunks: list[str] = []
        result = await sbx.commands.run("for i in 1 2 3; do echo $i; done", on_stdout=chunks.append)
        assert result.stdout == "1\n2\n3\n" and "".join(chunks) == result.stdout
        cat = await sbx.commands.run("cat", background=True, stdin=True)
        stream = sbx.commands.stream_input(cat.pid)
        for piece in ("one ", "two ", "three\n"):
            await stream.send(piece)
        await stream.close()
        await cat.close_stdin()
        assert (await cat.wait()).stdout == "one two three\n"
        sleeper = await sbx.commands.run("sleep 60", background=True)
        assert await sbx.commands.kill(sleeper.pid)
        with pytest.raises(CommandExitException):
            await sleeper.wait()
    finally:
        await sbx.kill()


#: What the JS SDK does with commands and a PTY; prints one JSON object of what it saw.
JS_SCRIPT = r"""
import { Sandbox, CommandExitError } from '@e2b/code-interpreter'
const seen = {}
const sbx = await Sandbox.create({ timeoutMs: 120_000 })
try {
  const out = []
  const r = await sbx.commands.run('echo a; echo b >&2; echo $X', { envs: { X: 'x' }, onStdout: (d) => out.push(d) })
  seen.run = [r.stdout, r.stderr, r.exitCode, out]
  try { await sbx.commands.run('exit 4') } catch (e) { seen.exit = [e.constructor.name, e.exitCode, e.error] }
  const bg = await sbx.commands.run('cat', { background: true, stdin: true })
  await sbx.commands.sendStdin(bg.pid, 'hello\n')
  await sbx.commands.closeStdin(bg.pid)
  seen.stdin = (await bg.wait()).stdout
  const sl = await sbx.commands.run('sleep 60', { background: true })
  seen.listed = (await sbx.commands.list()).map((p) => p.pid).includes(sl.pid)
  seen.killed = await sbx.commands.kill(sl.pid)
  try { await sl.wait() } catch (e) { seen.killEnd = [e.exitCode, e.error] }
  try { await sbx.commands.run('id', { user: 'root' }) } catch (e) { seen.root = String(e.message).slice(0, 100) }
  const data = []
  const t = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => data.push(Buffer.from(d).toString()) })
  await sbx.pty.resize(t.pid, { cols: 99, rows: 24 })
  await sbx.pty.sendInput(t.pid, new TextEncoder().encode('tput cols; exit\n'))
  seen.ptyExit = (await t.wait()).exitCode
  seen.pty = data.join('').includes('99')
} finally {
  await sbx.kill()
}
process.stdout.write(JSON.stringify(seen) + '\n')
"""


def test_the_js_sdk_runs_commands_and_ptys(e2b_env: Server) -> None:
    folder = js_sdk_folder()  # where the module is found
    seen = run_sdk_script(
        ["node", "--input-type=module", "--eval", JS_SCRIPT], timeout=150, cwd=folder
    )
    assert seen["run"][:3] == ["a\nx\n", "b\n", 0]
    assert "".join(seen["run"][3]) == "a\nx\n"  # streamed, in one piece or more
    assert seen["exit"] == ["CommandExitError", 4, "exit status 4"]
    assert seen["stdin"] == "hello\n"
    assert seen["listed"] and seen["killed"]
    assert seen["killEnd"] == [-1, "signal: killed"]
    assert "permission_denied" in seen["root"] and "one user" in seen["root"]
    assert seen["ptyExit"] == 0 and seen["pty"]
