"""Code contexts through E2B's current Python SDK against a real ``lmc serve``:
made with a language and a cwd, listed, restarted and removed; each is an
interpreter of its own, and runs in two contexts go on at once."""

from __future__ import annotations

import threading

import pytest
from e2b import NotFoundException
from e2b_code_interpreter import Sandbox

pytestmark = pytest.mark.timeout(300)


def test_the_default_contexts_are_listed(sandbox: Sandbox) -> None:
    languages = [context.language for context in sandbox.list_code_contexts()]
    assert "python" in languages
    assert all(context.cwd == "/home/user" for context in sandbox.list_code_contexts())


def test_two_python_contexts_do_not_share_variables(sandbox: Sandbox) -> None:
    first = sandbox.create_code_context()
    second = sandbox.create_code_context(language="python")
    sandbox.run_code("shared = 'first'", context=first)
    seen = sandbox.run_code("shared", context=second)
    assert seen.error is not None and seen.error.name == "NameError"
    assert seen.error.value == "name 'shared' is not defined"
    assert sandbox.run_code("shared", context=first).text == "first"
    # Nor with the default context.
    assert sandbox.run_code("shared").error is not None


def test_a_context_is_listed_until_it_is_removed(sandbox: Sandbox) -> None:
    context = sandbox.create_code_context()
    listed = sandbox.list_code_contexts()
    assert listed[-1].id == context.id
    assert (listed[-1].language, listed[-1].cwd) == ("python", "/home/user")
    sandbox.remove_code_context(context.id)
    assert context.id not in [c.id for c in sandbox.list_code_contexts()]
    with pytest.raises(NotFoundException):
        sandbox.run_code("1", context=context)


def test_restart_clears_a_contexts_state(sandbox: Sandbox) -> None:
    context = sandbox.create_code_context()
    sandbox.run_code("x = 1", context=context)
    sandbox.restart_code_context(context)
    execution = sandbox.run_code("x", context=context)
    assert execution.error is not None
    assert execution.error.value == "name 'x' is not defined"


def test_a_context_works_in_its_cwd(sandbox: Sandbox) -> None:
    context = sandbox.create_code_context(cwd="/home/user/project/src")
    assert context.cwd == "/home/user/project/src"
    execution = sandbox.run_code("import os; os.getcwd()", context=context)
    assert execution.text == "/home/user/project/src"
    elsewhere = sandbox.create_code_context(cwd="/tmp")
    assert sandbox.run_code("import os; os.getcwd()", context=elsewhere).text == "/tmp"
    # A file written there is in the sandbox's home.
    sandbox.run_code("open('made-here.txt', 'w').write('hi')", context=context)
    read = sandbox.run_code("open('/home/user/project/src/made-here.txt').read()")
    assert read.text == "hi"


def test_a_bash_context_keeps_its_shell(sandbox: Sandbox) -> None:
    context = sandbox.create_code_context(language="bash")
    assert context.language == "bash"
    sandbox.run_code("export KEPT=yes; cd /tmp", context=context)
    execution = sandbox.run_code("echo $KEPT; pwd", context=context)
    assert "".join(execution.logs.stdout).split() == ["yes", "/tmp"]


def test_runs_in_two_contexts_go_on_at_once(sandbox: Sandbox) -> None:
    first = sandbox.create_code_context()
    second = sandbox.create_code_context()
    # Each run waits until the other has begun: only runs at once can both end.
    # It gives up well before the sandbox's own end (120 s), so that a run that
    # never began is told as such (False, and the other's error), not as a kill.
    done: dict[str, str | None] = {}
    code = (
        "import os, time\n"
        "open('/home/user/{me}', 'w').close()\n"
        "deadline = time.monotonic() + 60\n"
        "while not os.path.exists('/home/user/{other}') and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "os.path.exists('/home/user/{other}')"
    )

    def run(name: str, other: str, context: object) -> None:
        try:
            execution = sandbox.run_code(code.format(me=name, other=other), context=context)
        except Exception as exc:  # said in the assertion, not lost in the thread
            done[name] = repr(exc)
            return
        done[name] = execution.text if execution.error is None else repr(execution.error)

    threads = [
        threading.Thread(target=run, args=("ctx-a", "ctx-b", first)),
        threading.Thread(target=run, args=("ctx-b", "ctx-a", second)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(100)
    # Had one waited for the other, the first would have given up: False.
    assert done == {"ctx-a": "True", "ctx-b": "True"}


def test_two_runs_in_one_context_queue(sandbox: Sandbox) -> None:
    context = sandbox.create_code_context()
    results: list[str | None] = []
    begun = threading.Event()

    def slow() -> None:
        code = "import time; print('begun', flush=True); time.sleep(2); 'slow'"
        execution = sandbox.run_code(code, context=context, on_stdout=lambda _: begun.set())
        results.append(execution.text)

    thread = threading.Thread(target=slow)
    thread.start()
    assert begun.wait(60)
    # The second waits for the first, then runs: neither is refused.
    results.append(sandbox.run_code("'fast'", context=context).text)
    thread.join(60)
    assert results == ["slow", "fast"]


#: What a context's Python kernel says of itself: where its sockets are, and the run's name.
_KERNEL = (
    "from ipykernel.kernelapp import IPKernelApp\n"
    "mine = {name!r}\n"
    "f'{{IPKernelApp.instance().ip}} {{mine}}'"
)


def test_first_runs_in_several_contexts_start_kernels_of_their_own(sandbox: Sandbox) -> None:
    """Guards the kernels' sockets: each context's interpreters bind them in a
    folder of their own. In the sandbox's one shared folder, Python kernels
    starting at once bound the same paths and took each other's sockets; a run
    failed (BackendError) or waited a minute for a kernel that never answered."""
    contexts = {f"ctx-{n}": sandbox.create_code_context() for n in range(4)}
    seen: dict[str, str] = {}

    def run(name: str, context: object) -> None:
        execution = sandbox.run_code(_KERNEL.format(name=name), context=context, timeout=90)
        seen[name] = execution.text if execution.error is None else repr(execution.error)

    threads = [threading.Thread(target=run, args=item) for item in contexts.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(seen) == sorted(contexts), seen
    kernels = {name: said.split() for name, said in seen.items()}
    assert all(len(parts) == 2 and parts[1] == name for name, parts in kernels.items()), seen
    default = sandbox.run_code(_KERNEL.format(name="default")).text
    sockets = {parts[0] for parts in kernels.values()} | {default.split()[0]}
    assert len(sockets) == len(contexts) + 1, (seen, default)
