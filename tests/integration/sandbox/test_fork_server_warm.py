"""The fork server warms what every kernel's start repeats alike (``_warm.py``)
before it forks any: it keeps no thread, descriptor or file of it, reads no
IPython folder of the host's, and the kernels it forks then run cells as
before (output, displays, errors, input), with their start file run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.sandbox import Sandbox
from lmc_runtime.sandbox.fileops import make_directory
from lmc_runtime.sandbox.forks import ForkServer

from .conftest import Opener, needs_bwrap, run, text

pytestmark = [pytest.mark.integration]
forked_only = pytest.mark.skipif(not ForkServer.supported(), reason="kernels are forked by root")

SANDBOX = Path(__file__).resolve().parents[3] / "lmc_runtime" / "sandbox"

#: Warms as the fork server does, and says what the process holds before and after.
WARM = r"""
import gc, json, os, sys, threading, tokenize
sys.path.insert(0, SANDBOX)
import _warm, _zygote
_zygote.preload()
def held():
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            pass  # the listing's own
    return {"threads": len(os.listdir("/proc/self/task")), "python_threads": threading.active_count(), "fds": fds}
before = held()
_warm.warm()
gc.collect()
after = held()
print(json.dumps({
    "before": before, "after": after,
    "tokenizer": tokenize._compile.cache_info().currsize,
    "precompiled": sorted(sys.modules[_warm.PRECOMPILED].code),
    "parsers": [type(p).__name__ for p, _ in sys.modules[_warm.PRECOMPILED].parsers.values()],
    "shell": type(getattr(sys.modules[_warm.PRECOMPILED], "shell", None)).__name__,
    "shell_config": getattr(sys.modules[_warm.PRECOMPILED], "shell_config", None),
    "main": sys.modules["__main__"].__name__,
    "loaded": sorted(getattr(sys.modules[_warm.PRECOMPILED], "loaded", {})),
    "pipes": sys.modules["ipykernel.iostream"].OutStream._watch_pipe_fd.__module__,
    "last": list(sys.modules)[-1],
    "before_mark": sorted(sys.modules[_warm.PRECOMPILED].modules) == sorted(list(sys.modules)[:-1]),
    "environ": sorted(os.environ),
}))
"""


#: Warms with the probe (``_hot.py``), as the fork server does, and says what was
#: gathered and what the process holds after.
WARM_GATHERED = r"""
import gc, json, os, sys
sys.path.insert(0, SANDBOX)
import _child, _gather, _handoff, _hot, _seccomp, _warm, _zygote
_zygote.preload()
from ipykernel.ipkernel import IPythonKernel
before = {"execute": id(IPythonKernel.execute_request.__code__), "idle": id(_gather.gather.__code__)}
fds = sorted(os.listdir("/proc/self/fd"))
probes = []
learn = _hot.learn
_hot.learn = lambda *args: probes.append(1) or learn(*args)
_warm.warm(_child._run_script, (_child, _handoff, _seccomp), None, CACHE)
module = sys.modules[_warm.PRECOMPILED]
try:
    os.waitpid(-1, os.WNOHANG)
    children = "some"
except ChildProcessError:
    children = "none"
kernel = [c for p, (s, c) in module.code.items() if p.endswith("lmc_kernel.py")][0]
print(json.dumps({
    "gathered": len(getattr(module, "gathered_from", [])),
    "execute_copied": id(IPythonKernel.execute_request.__code__) != before["execute"],
    "idle_kept": id(_gather.gather.__code__) == before["idle"],
    "probes": len(probes),
    "names": sorted(f"{c.co_filename}:{c.co_firstlineno}:{c.co_qualname}" for c in module.gathered_from),
    "start_copied": any(c.co_name == "_drop_privileges" for c in module.gathered_from),
    "kernel_copied": any(c.co_filename == kernel.co_filename for c in module.gathered_from),
    "children": children,
    "threads": len(os.listdir("/proc/self/task")),
    "fds_same": sorted(os.listdir("/proc/self/fd")) == fds,
}))
"""


def _said(script: str, env: dict[str, str], cwd: Path, timeout: float) -> Any:
    """What ``python -c script`` printed last, as JSON (it must succeed)."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _warmed_with_probe(home: Path, cwd: Path, tmp: Path, cache: Path | None = None) -> Any:
    """What :data:`WARM_GATHERED` says, run with ``HOME``, ``TMPDIR`` and the
    folder what the probe found is kept in (``cache``)."""
    script = f"SANDBOX = {str(SANDBOX)!r}\nCACHE = {str(cache) if cache else None!r}\n"
    env = {"HOME": str(home), "TMPDIR": str(tmp), "PATH": os.environ.get("PATH", "/usr/bin")}
    return _said(script + WARM_GATHERED, env, cwd, 180)


def test_the_code_a_kernel_runs_is_gathered_by_a_probe_that_leaves_nothing(
    tmp_path: Path,
) -> None:
    """The fork server's probe (``_hot.py``) runs a kernel's start and first cell
    in a folder of its own, and gives the functions that ran copies of their
    code; it reads no IPython folder of the host's, and leaves no process,
    thread, descriptor or file."""
    home, cwd, tmp = tmp_path / "home", tmp_path / "cwd", tmp_path / "tmp"
    marker = tmp_path / "read"
    profile = home / ".ipython" / "profile_default"
    (profile / "startup").mkdir(parents=True)
    said = f"open({str(marker)!r}, 'a').write('read')\n"
    for name in ("ipython_config.py", "ipython_kernel_config.py", "startup/00-start.py"):
        (profile / name).write_text(said)
    cwd.mkdir()
    tmp.mkdir()
    home_before = sorted(str(p) for p in home.rglob("*"))
    state = _warmed_with_probe(home, cwd, tmp)
    assert state["gathered"] > 300, state  # a kernel's start runs about a thousand
    assert state["execute_copied"] and state["kernel_copied"] and state["start_copied"]
    assert state["idle_kept"]  # code no kernel runs stays where it was
    assert state["children"] == "none" and state["threads"] == 1 and state["fds_same"]
    assert not marker.exists() and not list(cwd.iterdir()) and not list(tmp.iterdir())
    assert sorted(str(p) for p in home.rglob("*")) == home_before
    assert state["probes"] == 1


def _about_the_same(names: list[str], probed: list[str]) -> None:
    """The same code, but for a few: a probe also names what its kernel ran at the
    address of the fork server's garbage (code a collection may free before or
    after the gathering)."""
    assert len(set(names) ^ set(probed)) <= 10, sorted(set(names) ^ set(probed))


def test_what_the_probe_found_is_kept_for_the_next_fork_server(tmp_path: Path) -> None:
    """The next fork server of this installation gathers the same code by the
    names the first one kept (``_hotcache.py``), and forks no probe; a kept file
    that is damaged is probed again and written anew."""
    for name in ("home", "cwd", "tmp"):
        (tmp_path / name).mkdir()
    home, cwd, tmp = tmp_path / "home", tmp_path / "cwd", tmp_path / "tmp"
    cache = tmp_path / "cache" / "fork-server"
    first = _warmed_with_probe(home, cwd, tmp, cache)
    assert first["probes"] == 1 and first["gathered"] > 300
    kept = list(cache.iterdir())
    assert len(kept) == 1 and kept[0].name.startswith("hot-")
    second = _warmed_with_probe(home, cwd, tmp, cache)
    assert second["probes"] == 0
    _about_the_same(second["names"], first["names"])
    assert second["execute_copied"] and second["kernel_copied"] and second["start_copied"]
    assert second["idle_kept"] and second["children"] == "none" and second["fds_same"]
    kept[0].write_text("{")
    third = _warmed_with_probe(home, cwd, tmp, cache)
    assert third["probes"] == 1
    _about_the_same(third["names"], first["names"])
    assert json.loads(kept[0].read_text())["names"]
    assert not list(tmp.iterdir()) and not list(cwd.iterdir())


@forked_only
@pytest.mark.anyio
async def test_the_fork_server_holds_one_thread_and_only_its_own_descriptors() -> None:
    forks = ForkServer()
    try:
        pid = await forks.pid()  # started, warmed, and ready
        threads = os.listdir(f"/proc/{pid}/task")
        kinds = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    finally:
        await forks.aclose()
    assert threads == [str(pid)]
    # stdin, its pipes to the runtime, its control socket and its starter's (and
    # what it opens as it serves: a wake-up pipe, and its own PID namespace, to
    # return to once it has forked a kernel into a sandbox's): no file, no event
    # descriptor or other socket (as zmq or a shell would leave).
    names = sorted(kind.split(":")[0] for kind in kinds)
    assert {"/dev/null", "pipe", "socket"} <= set(names) <= {"/dev/null", "pid", "pipe", "socket"}
    assert names.count("socket") == 2 and names.count("pid") <= 1, kinds
    own = f"pid:[{os.stat('/proc/self/ns/pid').st_ino}]"  # the host's
    assert all(kind == own for kind in kinds if kind.startswith("pid:")), kinds


def test_warming_leaves_no_thread_descriptor_or_file_and_reads_no_ipython_folder(
    tmp_path: Path,
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    marker = tmp_path / "read"
    # An IPython folder that says so if anything reads its configuration or runs
    # its start files: the fork server must not (it is the host's, not a session's).
    startup = home / ".ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    said = f"open({str(marker)!r}, 'a').write('read')\n"
    (home / ".ipython" / "profile_default" / "ipython_config.py").write_text(said)
    (home / ".ipython" / "profile_default" / "ipython_kernel_config.py").write_text(said)
    (startup / "00-start.py").write_text(said)
    cwd.mkdir()
    home_before = sorted(str(p) for p in home.rglob("*"))
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    state = _said(f"SANDBOX = {str(SANDBOX)!r}\n" + WARM, env, cwd, 120)
    before, after = state["before"], state["after"]
    assert after["threads"] == after["python_threads"] == 1
    assert after["fds"] == before["fds"]
    assert not marker.exists() and not list(cwd.iterdir())
    assert sorted(str(p) for p in home.rglob("*")) == home_before
    # And it warmed: the tokenizer's expression is compiled, the kernel's files too.
    assert state["tokenizer"] >= 1
    kernels = Path(__file__).resolve().parents[3] / "kernels" / "lmc-python"
    files = ("lmc_checkpoint.py", "lmc_displays.py", "lmc_kernel.py", "lmc_lean.py")
    files += ("lmc_pip.py", "lmc_pipes.py", "lmc_revive.py", "lmc_shell.py", "lmc_startup.py")
    assert state["precompiled"] == [str(kernels / name) for name in files]
    assert state["parsers"] == ["MagicArgumentParser"]  # the script magics' one
    # The kernel's shell, made with its command line's configuration, and nothing
    # of it kept in this process: its __main__ and environment are as they were.
    assert state["shell"] == "ZMQInteractiveShell"
    assert state["shell_config"] == {
        "InteractiveShell": {"colors": "NoColor"},
        "HistoryManager": {"enabled": "False"},  # read by its class, as traitlets does
    }
    assert state["main"] == "__main__"
    # The modules a kernel loads by their file names, made here, but ipykernel's
    # classes left as they are (each kernel changes them with the module it
    # took); the modules' names, and the mark last.
    assert state["loaded"] == ["lmc_kernel", "lmc_lean", "lmc_pipes", "lmc_revive", "lmc_shell"]
    assert state["pipes"] == "ipykernel.iostream"
    assert state["last"] == "_lmc_forked_here" and state["before_mark"]
    assert not {"TERM", "PAGER", "CLICOLOR"} & set(state["environ"])  # the shell's own


@needs_bwrap
@forked_only
@pytest.mark.anyio
async def test_a_kernel_forked_from_the_warmed_fork_server_runs_cells(
    sandboxed: Opener,
) -> None:
    asked: list[str] = []

    def answer(prompt: str) -> str:
        asked.append(prompt)
        return "alice"

    forks = ForkServer()
    sandbox: Sandbox
    try:
        async with sandboxed(forks=forks) as (sandbox, _):
            (sandbox.control_dir / "input").mkdir()
            make_directory(sandbox.shared_dir, "input", parents=False, owner=sandbox.owner)
            folders = {"work_dir": sandbox.control_dir / "input"}
            folders["shared_dir"] = sandbox.shared_dir / "input"
            async with sandbox.computer(on_input=answer, **folders) as computer:
                printed = await run(computer, "print(6 * 7)")
                shown = await run(
                    computer,
                    "from IPython.display import display, HTML\ndisplay(HTML('<b>hi</b>'))",
                )
                failed = await run(computer, "1/0")
                read = await run(computer, "name = input('name? ')\nprint('got', name)")
                started = await run(
                    computer,
                    "import builtins, os, sys\n"
                    "print(os.getppid() == 0, hasattr(builtins, '__lmc_begun__'),"
                    " '_lmc_precompiled' in sys.modules, get_ipython().kernel._kernel_modules)",
                )
                held = await run(
                    computer,
                    "import gc\n"
                    "kept = [o for o in gc.get_objects() if type(o) is list and len(o) == 1\n"
                    "        and getattr(o[0], '__name__', '') == '_lmc_precompiled']\n"
                    "print(len(kept), len(getattr(kept[0][0], 'gathered_from', [])) > 300)",
                )
                kept = await run(
                    computer,
                    "import sys, wave\nkept = get_ipython()._sys_modules_keys\n"
                    "print(type(kept).__name__, 'json' in kept, 'wave' in kept,"
                    " '_lmc_forked_here' in sys.modules)",
                )
                culled = await run(
                    computer,
                    "%reset -f --aggressive\nimport sys\n"
                    "print('wave' in sys.modules, 'json' in sys.modules)",
                )
    finally:
        await forks.aclose()
    assert text(printed) == "42\n"
    assert [m.content for m in shown if m.format == "html"] == ["<b>hi</b>"]
    assert (failed[-1].extras or {}).get("error") == "ZeroDivisionError"
    assert "ZeroDivisionError: division by zero" in text(failed)
    assert "got alice" in text(read) and asked == ["name? "]
    # Forked (its parent is outside its namespace); its start file ran; the fork
    # server's compiled code is no module the user's code finds; the kernel was
    # made without its walk of every module (modules_unlisted in lmc_lean.py).
    assert text(started) == "True True False []\n"
    # The modules it started with are the fork server's and those it added
    # (start_modules_shared in lmc_lean.py), and %reset --aggressive culls the rest.
    assert text(kept) == "StartModules True False False\n"
    # What the fork server made, the originals of the code it gathered among it,
    # is held for the kernel's life (freed, every page of it would be copied).
    assert text(held) == "1 True\n"
    assert text(culled).endswith("False True\n"), text(culled)


#: What a shell takes from its process when it is made, as a forked kernel has it.
SHELL_STATE = r"""
import json, os, pickle, sys
from pathlib import Path
ip = get_ipython()
class Kept:
    pass
print(json.dumps({
    "prebuilt": getattr(ip, "_lmc_prebuilt", False),
    "kernel": ip.kernel is not None and ip.kernel.shell is ip and ip.parent is ip.kernel,
    "starting_dir": ip.starting_dir == os.getcwd(),
    "home_dir": ip.home_dir == os.path.expanduser("~"),
    "dh": [str(p) for p in _dh] == [os.getcwd()],
    "ipython_dir": ip.ipython_dir == os.environ.get("IPYTHONDIR", ip.ipython_dir),
    "profile": ip.profile_dir.location == os.path.join(ip.ipython_dir, "profile_default")
        and os.path.isdir(ip.profile_dir.location),
    "db": str(ip.db.root).startswith(ip.profile_dir.location),
    "main": sys.modules["__main__"] is ip.user_module,
    "pickled": type(pickle.loads(pickle.dumps(Kept()))).__name__,
    "pager": [os.environ.get("PAGER"), os.environ.get("TERM")],
    "config": ip.config is ip.kernel.config,
    "encoding": ip.stdin_encoding == (sys.stdin.encoding or "ascii"),
    "logger": ip.logger.home_dir == ip.home_dir,
}))
"""


@needs_bwrap
@forked_only
@pytest.mark.anyio
async def test_a_forked_kernel_takes_the_fork_servers_shell_as_its_own(
    sandboxed: Opener,
) -> None:
    """Regression: every kernel made IPython's shell at its start (some 18 ms of
    its 48 ms of CPU); it now takes the one the fork server made, and what a shell
    takes from its process (folders, home, ``__main__``, environment) is its own."""
    forks = ForkServer()
    try:
        async with sandboxed(forks=forks) as (_, computer):
            seen = await run(computer, SHELL_STATE)
            shown = await run(computer, "6 * 7")
            moved = await run(computer, "%cd\nimport os\nprint(os.getcwd())")
    finally:
        await forks.aclose()
    state = json.loads(text(seen).strip().splitlines()[-1])
    assert state == {
        "prebuilt": True,
        "kernel": True,
        "starting_dir": True,
        "home_dir": True,
        "dh": True,
        "ipython_dir": True,
        "profile": True,
        "db": True,
        "main": True,
        "pickled": "Kept",
        "pager": ["cat", "xterm-color"],
        "config": True,
        "encoding": True,
        "logger": True,
    }
    assert [m.content for m in shown if m.type == "console" and m.content] == ["42"]
    assert text(moved).strip().splitlines()[-1] == "/home/user"
