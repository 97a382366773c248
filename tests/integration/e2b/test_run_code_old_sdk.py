"""``run_code`` and contexts through the older SDKs (``e2b`` 2.45, ``e2b-code-interpreter``
2.9, the releases E2B's stored test suites match), run by their own Python in a
subprocess against the same real ``lmc serve``."""

from __future__ import annotations

import pytest

from tests.integration.e2b.sdk_env import old_sdk_python, run_sdk_script
from tests.integration.service.server import Server

pytestmark = [
    pytest.mark.timeout(300),
]

#: Run by the older SDK's Python: what it saw, as one JSON object on stdout.
SCRIPT = r"""
import json, sys
from importlib.metadata import version
from e2b import TimeoutException
from e2b_code_interpreter import Sandbox

seen = {"versions": [version("e2b"), version("e2b-code-interpreter")]}
sbx = Sandbox.create(timeout=120)
try:
    streamed = {"stdout": [], "stderr": [], "results": [], "errors": []}
    ex = sbx.run_code(
        "import sys\nprint('out')\nprint('err', file=sys.stderr)\n"
        "from IPython.display import display, Markdown\ndisplay(Markdown('*md*'))\n6 * 7",
        on_stdout=lambda m: streamed["stdout"].append(m.line),
        on_stderr=lambda m: streamed["stderr"].append(m.line),
        on_result=lambda r: streamed["results"].append(r.markdown or r.text),
    )
    seen["basic"] = {
        "stdout": ex.logs.stdout, "stderr": ex.logs.stderr, "text": ex.text,
        "count": ex.execution_count, "streamed": streamed,
        "main": [r.is_main_result for r in ex.results],
    }
    err = sbx.run_code("raise KeyError('k')")
    seen["error"] = [err.error.name, err.error.value, "KeyError" in err.error.traceback]
    seen["envs"] = [
        sbx.run_code("import os; os.environ.get('OLD_SDK_VAR')", envs={"OLD_SDK_VAR": "v"}).text,
        sbx.run_code("import os; os.environ.get('OLD_SDK_VAR', 'gone')").text,
    ]
    seen["bash"] = sbx.run_code("echo $((6*7))", language="bash").logs.stdout
    one, two = sbx.create_code_context(), sbx.create_code_context(cwd="/home/user/old")
    sbx.run_code("v = 'one'", context=one)
    seen["isolated"] = sbx.run_code("v", context=two).error.name
    seen["cwd"] = sbx.run_code("import os; os.getcwd()", context=two).text
    sbx.restart_code_context(one)
    seen["restarted"] = sbx.run_code("v", context=one).error.name
    sbx.remove_code_context(two)
    seen["listed"] = [c.id for c in sbx.list_code_contexts()]
    seen["ids"] = [one.id, two.id]
    sbx.run_code("kept = 5", context=one)
    try:
        sbx.run_code("while True:\n    pass", context=one, timeout=3)
        seen["timeout"] = "no timeout"
    except TimeoutException:
        seen["timeout"] = sbx.run_code("kept", context=one, timeout=60).text
finally:
    sbx.kill()
print(json.dumps(seen))
"""


def test_the_older_sdks_run_code_and_use_contexts(e2b_env: Server) -> None:
    seen = run_sdk_script([str(old_sdk_python()), "-c", SCRIPT], timeout=240)
    assert seen["versions"][0].startswith("2.") and seen["versions"][1] != ""
    basic = seen["basic"]
    assert basic["stdout"] == ["out\n"] and basic["stderr"] == ["err\n"]
    assert basic["text"] == "42" and basic["main"] == [False, True]
    assert isinstance(basic["count"], int)
    assert basic["streamed"] == {
        "stdout": ["out\n"],
        "stderr": ["err\n"],
        "results": ["*md*", "42"],
        "errors": [],
    }
    assert seen["error"] == ["KeyError", "'k'", True]
    assert seen["envs"] == ["v", "gone"]
    assert seen["bash"] == ["42\n"]
    assert seen["isolated"] == "NameError"
    assert seen["cwd"] == "/home/user/old"
    assert seen["restarted"] == "NameError"
    one, two = seen["ids"]
    assert one in seen["listed"] and two not in seen["listed"]
    assert seen["timeout"] == "5"
