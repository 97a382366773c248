"""Python code in the user's own environment: ``PythonBackend(python=...)`` (and
``Registry(python=...)``) runs the kernel in another interpreter, a venv's python
or an installed kernelspec's; one without ipykernel is unavailable with one
message saying what to install."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends import Registry
from lmc_runtime.backends.python import PythonBackend

from ..conftest import run


def make_venv(root: Path, *, system_site_packages: bool) -> Path:
    """A venv without pip (quick to make); its python."""
    args = [sys.executable, "-m", "venv", "--without-pip", str(root)]
    if system_site_packages:
        args.insert(3, "--system-site-packages")
    subprocess.run(args, check=True, timeout=120)
    return root / "bin" / "python"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv that sees our packages (ipykernel) and has a marker package of its own."""
    python = make_venv(tmp_path_factory.mktemp("venv") / "env", system_site_packages=True)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    assert site != sysconfig.get_paths()["purelib"]
    (Path(site) / "lmc_marker_only_here.py").write_text("WHERE = 'the venv'\n")
    return python


def test_code_runs_in_the_venv_with_its_packages(venv: Path) -> None:
    with Computer(python=venv, timeouts=Timeouts(startup=60)) as computer:
        result = run(
            computer,
            "import sys, lmc_marker_only_here\nprint(sys.executable)\n"
            "print(lmc_marker_only_here.WHERE)",
        )
        # The startup code loaded there too: it sets a run's environment.
        env = run(computer, "import os\nprint(os.environ['LMC_X'])", env={"LMC_X": "set"})
    assert result.status == "ok", result.messages
    assert result.output == f"{venv}\nthe venv\n"
    assert env.output == "set\n"


def test_the_marker_is_not_in_the_runtime_s_own_interpreter() -> None:
    """The other test's proof: the marker exists only in the venv."""
    with Computer() as computer:
        result = run(computer, "import lmc_marker_only_here")
    assert result.status == "error"


def test_a_venv_without_ipykernel_gives_one_clear_message_and_no_hang(tmp_path: Path) -> None:
    python = make_venv(tmp_path / "bare", system_site_packages=False)
    expected = f"{python} has no ipykernel: run {python} -m pip install ipykernel"
    started = time.monotonic()
    with Computer(registry=Registry(python=str(python))) as computer:
        status = computer.languages["python"]
        result = run(computer, "print(1)")
    assert time.monotonic() - started < 60  # a generous bound: only a hang trips it
    assert not status.available and status.reason == expected
    (reply,) = result.messages
    assert expected in reply.content
    assert reply.extras["status"] == "unavailable"  # type: ignore[index]


def test_a_missing_interpreter_is_unavailable(tmp_path: Path) -> None:
    reason = PythonBackend(str(tmp_path / "no" / "python")).availability().reason
    assert reason is not None and reason.startswith(f"{tmp_path / 'no' / 'python'} cannot be run")


def test_a_kernelspec_name_runs_that_kernelspec_s_interpreter(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "share" / "kernels" / "project-env"
    spec.mkdir(parents=True)
    argv = [str(venv), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share"))
    backend = PythonBackend("project-env")
    assert backend.program() == str(venv)
    assert backend.spec_manager().get_kernel_spec("lmc-python").argv[0] == str(venv)
    assert backend.availability().available
    missing = PythonBackend("no-such-spec").availability().reason
    assert missing == "no kernelspec is named 'no-such-spec' (`jupyter kernelspec list`)"


def test_a_path_is_told_from_a_name() -> None:
    assert PythonBackend("~/env/bin/python").program() == str(Path.home() / "env/bin/python")
    assert PythonBackend("env/bin/python").program() == str(Path.cwd() / "env/bin/python")
    assert PythonBackend().program() is None
