"""The environment's way into a sandbox: carried names, and a descriptor."""

from __future__ import annotations

import os

from lmc_runtime.sandbox import _handoff


def test_carried_variables_get_their_names_and_win_except_the_runtimes() -> None:
    """A session's variable replaces the host's (PATH), never the runtime's own
    LMC_ ones (the status descriptor the wrapper inside reports on)."""
    env = {
        "PATH": "/bin",
        "LMC_SANDBOX_STATUS_FD": "7",
        "LMC_SANDBOX_SET_PATH": "/mine",
        "LMC_SANDBOX_SET_LMC_SANDBOX_STATUS_FD": "9",
        "LMC_SANDBOX_SET_GLIBC_TUNABLES": "x",
    }
    assert _handoff.session_variables(env) == {
        "PATH": "/mine",
        "LMC_SANDBOX_STATUS_FD": "7",
        "GLIBC_TUNABLES": "x",
    }


def test_the_environment_goes_through_a_descriptor_whole() -> None:
    """Values with '=', newlines, non-UTF-8 bytes and a megabyte arrive as sent."""
    env = {"A": "x=y\nz", "B": "", "C": "\udcff\u00fc", "BIG": "v" * (1 << 20)}
    fd = _handoff.env_fd(env)
    assert os.get_inheritable(fd)
    assert _handoff.received({_handoff.ENV_FD: str(fd), "OTHER": "1"}) == env
    try:
        os.fstat(fd)
    except OSError:
        pass
    else:
        raise AssertionError("the descriptor was left open")
    assert _handoff.received({"OTHER": "1"}) == {"OTHER": "1"}


def test_bwraps_options_go_through_a_descriptor() -> None:
    """Guards bwrap's command line, which the sandbox reads as its PID 1's: the
    options (the host folders it binds) travel in a memory file (``--args``)."""
    argv = ["bwrap", "--bind", "/srv/data/s1/work", "/home/user", "--", "cmd", "/run/x"]
    hidden, fd = _handoff.bwrap_options_fd(argv)
    assert fd is not None
    try:
        assert hidden == ["bwrap", "--args", str(fd), "--", "cmd", "/run/x"]
        assert os.read(fd, 4096) == b"--bind\0/srv/data/s1/work\0/home/user\0"
        assert os.get_inheritable(fd)
    finally:
        os.close(fd)
    assert _handoff.bwrap_options_fd(["bwrap", "--version"]) == (["bwrap", "--version"], None)
