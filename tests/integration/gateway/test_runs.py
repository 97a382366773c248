"""Python and R on a real Kernel Gateway behave as they do locally: output streams,
plots come back as images, the active line is reported, interrupts and timeouts
stop the code with its state kept, and code that ignores them is stopped by a
restart of its kernel on the gateway (``state_lost``)."""

from __future__ import annotations

import shutil

import pytest

from lmc_runtime import Computer
from lmc_runtime.backends import Registry

from ..conftest import run
from .actions import assert_an_interrupt_keeps_the_state

pytestmark = pytest.mark.integration

STREAMED = "print('first', flush=True)\nimport time\ntime.sleep(0.5)\nprint('second')"


def test_output_streams_before_the_code_ends(shared: Computer) -> None:
    result = run(shared, STREAMED)
    kinds = [(m.format, m.content) for m in result.messages]
    first = kinds.index(("output", "first\n"))
    sleeping = kinds.index(("active_line", 3))
    assert first < sleeping < kinds.index(("output", "second\n"))
    assert result.final.content is None and result.status == "ok"


def test_a_plot_comes_back_as_an_image_with_its_chart(shared: Computer) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    result = run(shared, "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()")
    images = result.of("image", "base64.png")
    assert len(images) == 1 and result.status == "ok"
    assert (images[0].extras or {}).get("chart", {}).get("type") == "line"


def test_the_active_line_is_reported_inside_a_loop(shared: Computer) -> None:
    result = run(shared, "import time\nfor i in range(3):\n    time.sleep(0.1)\nx = 1")
    assert 3 in result.lines and result.lines[-1] is None


def test_an_interrupt_stops_the_code_and_keeps_its_state(shared: Computer) -> None:
    assert_an_interrupt_keeps_the_state(shared)


def test_a_timeout_interrupts_the_code_and_keeps_its_state(shared: Computer) -> None:
    run(shared, "kept = 'after timeout'")
    result = run(shared, "while True:\n    pass", timeout=1)
    assert result.status == "timeout" and "timed out" in result.output
    assert run(shared, "print(kept)").output == "after timeout\n"


def test_code_that_ignores_interrupts_is_stopped_by_a_new_kernel(own: Computer) -> None:
    run(own, "kept = 1")
    code = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.01)"
    result = run(own, code, timeout=1)
    assert result.status == "timeout" and result.final.extras["state_lost"] is True
    assert "restarted" in result.output
    after = run(own, "print('kept' in globals())")
    assert after.output == "False\n" and after.status == "ok"


def test_per_run_env_and_input_work_through_the_startup_code(shared: Computer) -> None:
    result = run(
        shared, "import os\nprint(os.environ.get('LMC_GW', '<unset>'))", env={"LMC_GW": "yes"}
    )
    assert result.output == "yes\n"
    assert (
        run(shared, "import os\nprint(os.environ.get('LMC_GW', '<unset>'))").output == "<unset>\n"
    )


@pytest.mark.skipif(shutil.which("R") is None, reason="R is not installed here")
def test_r_runs_on_the_gateway_with_its_active_line_and_plots(shared: Computer) -> None:
    result = run(shared, 'cat("hi\\n")\nSys.sleep(0.3)\nplot(1:3)', language="r")
    assert result.output == "hi\n" and 2 in result.lines
    assert len(result.of("image", "base64.png")) == 1 and result.status == "ok"


def test_a_gateway_that_refuses_the_token_gets_one_clear_reply(kernel_gateway) -> None:  # type: ignore[no-untyped-def]
    from lmc_runtime.backends.jupyter.gateway.rest import Gateway

    registry = Registry(gateway=Gateway(kernel_gateway.url, "wrong-token"))
    with Computer(registry=registry) as computer:
        result = run(computer, "print(1)")
    assert result.status == "backend_error"
    assert "refused the token (HTTP 403)" in result.output or "(HTTP 401)" in result.output
