"""``Sandbox.run_code`` through E2B's current Python SDK against a real ``lmc serve``:
each language, streamed callbacks, every result format, errors, execution
counts, per-run ``envs`` and the ``timeout`` whose interrupt leaves the context
usable."""

from __future__ import annotations

import base64
import shutil
from typing import Any

import pytest
from e2b import TimeoutException
from e2b_code_interpreter import Sandbox

pytestmark = pytest.mark.timeout(300)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_python_stdout_stderr_and_the_value_of_the_last_expression(sandbox: Sandbox) -> None:
    execution = sandbox.run_code("import sys\nprint('out')\nprint('err', file=sys.stderr)\n40 + 2")
    assert execution.logs.stdout == ["out\n"]
    assert execution.logs.stderr == ["err\n"]
    assert execution.error is None
    assert execution.text == "42"
    (main,) = execution.results
    assert main.is_main_result


def test_state_lasts_between_runs_and_executions_are_counted(sandbox: Sandbox) -> None:
    first = sandbox.run_code("counter = 1")
    second = sandbox.run_code("counter += 1; counter")
    assert second.text == "2"
    assert first.execution_count is not None and second.execution_count == first.execution_count + 1


def test_an_error_has_its_name_value_and_traceback(sandbox: Sandbox) -> None:
    execution = sandbox.run_code("def f():\n    raise ValueError('bad value')\nf()")
    assert execution.error is not None
    assert execution.error.name == "ValueError"
    assert execution.error.value == "bad value"
    assert "raise ValueError" in execution.error.traceback
    assert execution.logs.stderr == []  # the error is the error, not stderr


def test_callbacks_are_called_as_the_output_comes(sandbox: Sandbox) -> None:
    seen: dict[str, list[Any]] = {"stdout": [], "stderr": [], "result": [], "error": []}
    sandbox.run_code(
        "import sys\nprint('a')\nprint('b', file=sys.stderr)\n"
        "from IPython.display import display, Markdown\ndisplay(Markdown('**m**'))\n1/0",
        on_stdout=lambda m: seen["stdout"].append(m.line),
        on_stderr=lambda m: seen["stderr"].append(m.line),
        on_result=lambda r: seen["result"].append(r),
        on_error=lambda e: seen["error"].append(e),
    )
    assert seen["stdout"] == ["a\n"]
    assert seen["stderr"] == ["b\n"]
    assert [r.markdown for r in seen["result"]] == ["**m**"]
    assert [e.name for e in seen["error"]] == ["ZeroDivisionError"]


def test_a_matplotlib_figure_is_a_png_with_its_chart(sandbox: Sandbox) -> None:
    execution = sandbox.run_code(
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3], [1, 4, 9], label='sq')\nplt.title('squares')\nplt.show()"
    )
    assert execution.error is None, execution.error
    (figure,) = execution.results
    assert base64.b64decode(figure.png).startswith(PNG_MAGIC)
    assert figure.text and "Figure" in figure.text
    assert figure.chart is not None and figure.chart.title == "squares"
    assert not figure.is_main_result


def test_a_table_is_html_and_text(sandbox: Sandbox) -> None:
    # As a pandas DataFrame shows itself: _repr_html_ beside its repr.
    execution = sandbox.run_code(
        "class Table:\n"
        "    def _repr_html_(self): return '<table><tr><td>a</td></tr></table>'\n"
        "    def __repr__(self): return 'a\\n1'\n"
        "Table()"
    )
    assert execution.error is None, execution.error
    (frame,) = execution.results
    assert frame.is_main_result
    assert frame.html == "<table><tr><td>a</td></tr></table>"
    assert frame.text == "a\n1"
    assert set(frame.formats()) == {"text", "html"}


def test_markdown_latex_json_svg_and_javascript_keep_their_formats(sandbox: Sandbox) -> None:
    execution = sandbox.run_code(
        "from IPython.display import display, Markdown, Latex, JSON, SVG, Javascript\n"
        "display(Markdown('# title'))\n"
        "display(Latex(r'$\\alpha$'))\n"
        "display(JSON({'k': [1, 2]}))\n"
        'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4">'
        '<rect width="4" height="4"/></svg>\'))\n'
        "display(Javascript('console.log(1)'))\n"
    )
    assert execution.error is None, execution.error
    markdown, latex, data, svg, script = execution.results
    assert markdown.markdown == "# title"
    assert latex.latex == "$\\alpha$"
    assert data.json == {"k": [1, 2]}
    assert svg.svg is not None and svg.svg.startswith("<svg")
    assert script.javascript == "console.log(1)"
    assert not any(r.is_main_result for r in execution.results)


def test_envs_hold_for_one_run_only(sandbox: Sandbox) -> None:
    with_env = sandbox.run_code("import os; os.getenv('LMC_E2B_VAR')", envs={"LMC_E2B_VAR": "x1"})
    without = sandbox.run_code("import os; os.getenv('LMC_E2B_VAR', 'unset')")
    assert with_env.text == "x1"
    assert without.text == "unset"


def test_a_timeout_interrupts_the_code_and_the_context_goes_on(sandbox: Sandbox) -> None:
    sandbox.run_code("kept = 7")
    with pytest.raises(TimeoutException):
        sandbox.run_code("while True:\n    pass", timeout=3)
    # The server saw the client leave and interrupted the loop: the next run
    # is not queued behind it, and the state is kept.
    after = sandbox.run_code("kept", timeout=60)
    assert after.text == "7"


def test_the_working_directory_is_the_home(sandbox: Sandbox) -> None:
    execution = sandbox.run_code("import os; print(os.getcwd())")
    assert execution.logs.stdout == ["/home/user\n"]


def test_javascript_and_typescript_run(sandbox: Sandbox) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    js = sandbox.run_code("console.log('from js')", language="js")
    assert js.logs.stdout == ["from js\n"]
    ts = sandbox.run_code("const m: string = 'from ts'; console.log(m)", language="ts")
    assert ts.logs.stdout == ["from ts\n"]
    # The value of the last expression is the main result, as a kernel's.
    cwd = sandbox.run_code("console.log('x'); process.cwd()", language="js")
    assert cwd.text == "/home/user" and cwd.logs.stdout == ["x\n"]
    awaited = sandbox.run_code("await Promise.resolve(6 * 7)", language="ts")
    assert awaited.text == "42" and awaited.results[0].is_main_result
    thrown = sandbox.run_code("throw new TypeError('nope')", language="javascript")
    assert thrown.error is not None and thrown.error.name == "TypeError"
    assert thrown.error.value == "nope"


def test_r_java_and_bash_run(sandbox: Sandbox) -> None:
    r = sandbox.run_code('print("from r")', language="r")
    assert r.logs.stdout == ['[1] "from r"\n']
    value = sandbox.run_code("1 + 1", language="r")
    assert [r.text for r in value.results] == ["[1] 2"]  # IRkernel's display, as in E2B
    bash = sandbox.run_code("echo from-bash; pwd", language="bash")
    assert bash.logs.stdout and "from-bash\n/home/user" in "".join(bash.logs.stdout)
    java = sandbox.run_code('System.out.println("from java");', language="java")
    assert "from java" in "".join(java.logs.stdout)
    home = sandbox.run_code('System.getProperty("user.home")', language="java")
    assert home.text == "/home/user" and home.results[0].is_main_result


def test_an_unknown_language_is_a_clear_refusal(sandbox: Sandbox) -> None:
    from e2b import SandboxException

    with pytest.raises(SandboxException, match="cannot run in this sandbox"):
        sandbox.run_code("x", language="cobol")


def test_a_client_that_leaves_interrupts_its_run(sandbox: Sandbox, e2b_env: Any) -> None:
    import httpx

    headers = {"E2b-Sandbox-Id": sandbox.sandbox_id, "E2b-Sandbox-Port": "49999"}
    token = getattr(sandbox, "_envd_access_token", None)
    if token:
        headers["X-Access-Token"] = token
    code = "import time\nprint('begun', flush=True)\nwhile True:\n    time.sleep(0.05)"
    with (
        httpx.Client(timeout=60) as client,
        client.stream("POST", f"{e2b_env.url}/execute", json={"code": code}, headers=headers) as r,
    ):
        first = next(r.iter_lines())
        assert '"begun' in first
    # The connection is closed: the loop was interrupted and the next run is not
    # queued behind it.
    after = sandbox.run_code("'next'", timeout=60)
    assert after.text == "next"


def test_a_run_whose_sandbox_is_killed_says_so(sandbox: Sandbox) -> None:
    import threading

    killer = threading.Timer(2.0, sandbox.kill)
    killer.start()
    try:
        with pytest.raises(TimeoutException, match="sandbox was killed"):
            sandbox.run_code("import time; time.sleep(300)", timeout=120)
    finally:
        killer.cancel()


@pytest.mark.parametrize(
    ("language", "code"),
    [
        ("bash", "echo ${LMC_E2B_VAR:-unset}"),
        ("js", "console.log(process.env.LMC_E2B_VAR ?? 'unset')"),
        ("r", 'cat(Sys.getenv("LMC_E2B_VAR", "unset"), "\\n", sep = "")'),
        ("java", 'System.out.println(System.getenv().getOrDefault("LMC_E2B_VAR", "unset"));'),
    ],
)
def test_envs_hold_for_one_run_in_each_language(sandbox: Sandbox, language: str, code: str) -> None:
    if language == "js" and shutil.which("node") is None:
        pytest.skip("node is not installed")
    with_env = sandbox.run_code(code, language=language, envs={"LMC_E2B_VAR": "given"})
    assert "".join(with_env.logs.stdout).strip() == "given", with_env
    without = sandbox.run_code(code, language=language)
    assert "".join(without.logs.stdout).strip() == "unset", without


def test_java_reads_envs_as_system_properties_too(e2b_env: Any) -> None:
    # E2B's Java code reads its variables with System.getProperty: they are both.
    sbx = Sandbox.create(timeout=120, envs={"SANDBOX_WIDE": "everywhere"})
    try:
        prop = 'System.getProperty("PER_RUN", "unset")'
        assert sbx.run_code(prop, language="java", envs={"PER_RUN": "x"}).text == "x"
        assert sbx.run_code(prop, language="java").text == "unset"
        wide = sbx.run_code('System.getProperty("SANDBOX_WIDE")', language="java")
        assert wide.text == "everywhere"
        failed = sbx.run_code('throw new RuntimeException("bad");', language="java")
        assert failed.error is not None
        assert (failed.error.name, failed.error.value) == ("java.lang.RuntimeException", "bad")
    finally:
        sbx.kill()
