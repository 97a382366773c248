"""The launcher's command lines and the exec wrapper they start with."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from lmc_runtime.sandbox.forks import forkable
from lmc_runtime.sandbox.launch import EXEC_WRAPPER, SandboxLauncher
from lmc_runtime.sandbox.policy import SandboxPolicy, SessionLimits, session_env


def test_host_secrets_are_unset_and_session_names_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMC_UNIT_SECRET", "x")
    monkeypatch.setenv("HOME", "/root")
    launcher = SandboxLauncher(
        bwrap=None, env_allowlist=("PATH",), session_names=frozenset({"HOME"})
    )
    options = launcher.host_options()
    assert options[options.index("LMC_UNIT_SECRET") - 1 :][:2] == ["--unset", "LMC_UNIT_SECRET"]
    assert "PATH" not in options and "HOME" not in options
    assert "JPY_PARENT_PID" in options


def test_a_forked_kernel_gets_the_environment_the_wrapper_would_leave(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LMC_UNIT_SECRET", "x")
    monkeypatch.setenv("HOME", "/root")
    launcher = SandboxLauncher(
        bwrap=None, env_allowlist=("PATH",), session_names=frozenset({"HOME"})
    )
    env = {"LMC_UNIT_SECRET": "x", "HOME": "/work", "JPY_PARENT_PID": "1", "KERNEL_ONLY": "1"}
    # A host secret goes, as the wrapper's --unset would take it; what the host does
    # not have (the kernel's own variables) stays, and so do the session's names.
    assert launcher.sandbox_env(env) == {"HOME": "/work", "KERNEL_ONLY": "1"}


def test_only_python_scripts_of_this_interpreter_are_forked() -> None:
    assert forkable([sys.executable, "/k/lmc_kernel.py", "-f", "c.json"])
    assert not forkable([sys.executable, "-m", "ipykernel_launcher"])
    assert not forkable(["/usr/bin/R", "--slave", "x.py"])
    assert not forkable([sys.executable])


def test_bwrap_command_line_isolates(tmp_path: Path) -> None:
    launcher = SandboxLauncher(
        bwrap="/usr/bin/bwrap",
        writable=(tmp_path / "work",),
        readonly=(Path("/usr"),),
        network=False,
    )
    argv = launcher.wrap(["python", "-c", "1"])
    assert argv[:4] == [sys.executable, "-I", "-S", str(EXEC_WRAPPER)]
    bwrap = argv[argv.index("/usr/bin/bwrap") :]
    for flag in ("--unshare-all", "--die-with-parent", "--cap-drop", "--proc", "--dev"):
        assert flag in bwrap
    assert "--share-net" not in bwrap
    assert ["--bind", str(tmp_path / "work"), str(tmp_path / "work")] == bwrap[
        bwrap.index("--bind") : bwrap.index("--bind") + 3
    ]
    assert argv[-3:] == ["python", "-c", "1"]
    opted_in = SandboxLauncher(bwrap="/usr/bin/bwrap", network=True).wrap(["true"])
    assert "--share-net" in opted_in


def test_the_exec_wrapper_sets_limits_and_cleans_the_environment() -> None:
    code = (
        "import os, resource, signal;"
        "print(resource.getrlimit(resource.RLIMIT_FSIZE)[0], os.environ.get('GONE'),"
        " signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"
    )
    argv = [
        sys.executable,
        "-I",
        "-S",
        str(EXEC_WRAPPER),
        "--rlimit",
        "fsize=12345",
        "--unset",
        "GONE",
        "--sigint",
        "ignore",
        "--",
        sys.executable,
        "-c",
        code,
    ]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=30, env={"GONE": "1", "PATH": "/usr/bin"}
    )
    assert done.stdout.split() == ["12345", "None", "True"], done.stderr


def test_the_exec_wrapper_fails_clearly() -> None:
    argv = [sys.executable, "-I", "-S", str(EXEC_WRAPPER), "--rlimit", "bogus=1", "--", "true"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 127 and "lmc sandbox" in done.stderr


def test_session_env_keeps_only_allowlisted_host_variables(tmp_path: Path) -> None:
    host = {"PATH": "/bin", "LC_ALL": "C", "AWS_SECRET_ACCESS_KEY": "k", "HOME": "/root"}
    env = session_env(host, SandboxPolicy(env={"MINE": "1", "PATH": "/x"}), tmp_path)
    assert env["PATH"] == "/bin" and env["LC_ALL"] == "C" and "MINE" not in env
    assert env["LMC_SANDBOX_SET_MINE"] == "1" and env["LMC_SANDBOX_SET_PATH"] == "/x"
    assert env["HOME"] == str(tmp_path) and "AWS_SECRET_ACCESS_KEY" not in env


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError):
        SessionLimits(processes=1)
    with pytest.raises(ValueError):
        SessionLimits(output_bytes=10)


def test_a_checkout_or_virtualenv_under_tmp_is_bound_over_the_private_tmp(tmp_path: Path) -> None:
    """Regression: the private /tmp was mounted after the read-only binds, so a
    checkout or a virtualenv under /tmp vanished inside the sandbox (bwrap:
    execvp /tmp/venv/bin/python: No such file or directory)."""
    from lmc_runtime.sandbox.bwrap import bwrap_args

    venv = Path("/tmp/some-venv")
    args = bwrap_args(
        "bwrap",
        readonly=[Path("/usr"), venv],
        hidden=[],
        writable=[tmp_path],
        control=[],
        network=False,
    )
    pairs = list(itertools.pairwise(args))
    private_tmp = pairs.index(("--tmpfs", "/tmp"))
    bound = pairs.index(("--ro-bind", str(venv)))
    assert private_tmp < bound


def test_the_control_folder_is_bound_read_only_and_nothing_is_listed_from_it(
    tmp_path: Path,
) -> None:
    """Regression (security): the launcher listed the files of the runtime folder,
    which the sandbox could write, and bound each by path; a file swapped for a
    link between listing and binding bound a host file into the next sandbox, and
    120k files there made every launch slow and then too long for execve. Now the
    host-only control folder is bound once, read-only, and never scanned."""
    from lmc_runtime.sandbox.identity import Identity
    from lmc_runtime.sandbox.launch import SandboxLauncher

    control = tmp_path / "control"
    control.mkdir()
    for index in range(50):
        (control / f"f{index}").write_text("x")
    launcher = SandboxLauncher(
        bwrap="bwrap",
        writable=(tmp_path / "work",),
        control=(control,),
        identity=Identity(1500123, 1500123),
    )
    argv = launcher.wrap(["python3"])
    pairs = list(itertools.pairwise(argv))
    assert ("--ro-bind", str(control)) in pairs
    assert not any(str(control / f"f{index}") in argv for index in range(50))
    assert ("--user", "1500123:1500123") in pairs
    bwrap_at = argv.index("bwrap")
    assert "--disable-userns" in argv[bwrap_at:] and "--unshare-user" in argv[bwrap_at:]
