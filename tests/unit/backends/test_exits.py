"""describe_exit: one sentence for how any interpreter ended."""

from __future__ import annotations

import signal

from lmc_runtime.backends.core.procs import describe_exit


def test_sentences_name_the_interpreter_and_the_cause() -> None:
    assert describe_exit(None, "node") == "node ended"
    assert describe_exit(3, "the kernel") == "the kernel exited with code 3"
    assert describe_exit(-signal.SIGTERM, "node") == "node was killed by SIGTERM"
    assert "out-of-memory" in describe_exit(-signal.SIGKILL, "the kernel")
    assert "segmentation fault" in describe_exit(-signal.SIGSEGV, "node")
    assert describe_exit(-200, "node") == "node was killed by signal 200"
