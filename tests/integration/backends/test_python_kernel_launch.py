"""The Python kernel's launcher (``kernels/lmc-python/lmc_kernel.py``): what it skips
at start stays importable for the user's code, and the kernel sees the working
directory as ``python -m ipykernel_launcher`` would have."""

from __future__ import annotations

from lmc_runtime import Computer

from ..conftest import run


def test_the_imports_skipped_at_start_are_importable_by_user_code(computer: Computer) -> None:
    result = run(computer, "import debugpy, jedi\nprint(debugpy.__name__, jedi.__name__)")
    assert result.output == "debugpy jedi\n"
    assert result.lines[-1] is None


def test_the_kernel_did_not_load_what_it_skips(computer: Computer) -> None:
    code = "import sys\nprint(sorted(n for n in ('debugpy', 'jedi') if n in sys.modules))"
    assert run(computer, code).output == "[]\n"


def test_the_launchers_folder_is_not_on_the_path_and_the_working_directory_is(
    computer: Computer,
) -> None:
    code = (
        "import os, sys\n"
        "print([p for p in sys.path if 'lmc-python' in p],"
        " os.getcwd() in [os.path.abspath(p) for p in sys.path])"
    )
    assert run(computer, code).output == "[] True\n"


def test_script_magics_share_one_parser_and_keep_their_options(computer: Computer) -> None:
    """IPython builds the same argument parser for each script magic; the launcher
    builds it once. Each magic must still run its program with its options."""
    assert run(computer, "%%bash --out said\necho from-bash").status == "ok"
    check = (
        "cell = get_ipython().magics_manager.magics['cell']\n"
        "print(said.strip(), cell['bash'].parser is cell['sh'].parser)"
    )
    assert run(computer, check).output == "from-bash True\n"
    assert run(computer, "%%sh --err e\necho oops >&2").status == "ok"
    assert run(computer, "print(e.strip())").output == "oops\n"


def test_the_kernel_starts_no_heartbeat(computer: Computer) -> None:
    """The runtime never pings a kernel's heartbeat (it watches the process), and
    ipykernel gives it a thread and a ZMQ context of its own: the launcher starts
    none, so the kernel holds one ZMQ context (one I/O thread) and one thread less.
    Regression: 12 threads a kernel, 0.16 MiB more of its own memory."""
    code = (
        "import os\nfrom ipykernel.kernelapp import IPKernelApp\n"
        "names = [open(f'/proc/self/task/{t}/comm').read().strip()"
        " for t in os.listdir('/proc/self/task')]\n"
        "print(IPKernelApp.instance().heartbeat, names.count('ZMQbg/IO/0'))"
    )
    assert run(computer, code).output == "None 1\n"
