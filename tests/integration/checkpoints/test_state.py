"""What a checkpoint of a live Python kernel carries, through a rollback and a fork.

Real kernels: the state is built by cells, changed or destroyed, and read back
after a rollback (or in a fork) by code in the revived kernel.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer, Timeouts

from ..conftest import run

#: Builds every kind of state the issue lists; ``big`` is 200 MB when numpy is there.
BUILD = """
import random, sys
sys.path.insert(0, {folder!r})
import counter
counter.bump(); counter.bump()
random.seed(1234)
def double(v):
    return 2 * v
class Point:
    def __init__(self, x):
        self.x = x
    def norm(self):
        return abs(self.x)
objects = {{"a": Point(-3), "b": [Point(4), {{"nested": (1, 2)}}]}}
def numbers():
    n = 0
    while True:
        n += 1
        yield n
gen = numbers()
next(gen); next(gen)
"""
BIG = "import numpy as np\nbig = np.arange(25_000_000, dtype=np.float64)  # 200 MB\n"
#: Destroys or changes all of it.
DESTROY = """
counter.bump()
random.random()
next(gen)
objects["a"].x = 100
del double, Point
if "big" in globals():
    big[:] = 0
"""
#: What the state says: the same text before the destruction and after a rollback.
READ = """
print(counter.count, round(random.random(), 12), next(gen), double(21),
      Point(-2).norm(), objects["a"].norm(), objects["b"][1]["nested"],
      type(objects["b"][0]).__name__)
if "big" in globals():
    print(big.nbytes, float(big[-1]), float(big.sum()))
"""
HAS_NUMPY = importlib.util.find_spec("numpy") is not None


@pytest.fixture
def computer(tmp_path: Path) -> Iterator[Computer]:
    (tmp_path / "counter.py").write_text(
        "count = 0\ndef bump():\n    global count\n    count += 1\n"
    )
    with Computer(cwd=tmp_path, timeouts=Timeouts(interrupt_grace=2.0)) as c:
        assert run(c, BUILD.format(folder=str(tmp_path))).status == "ok"
        yield c


def _read(computer: Computer) -> str:
    result = run(computer, READ)
    assert result.status == "ok", result.messages
    return result.output


def test_every_kind_of_state_comes_back_with_a_rollback(computer: Computer) -> None:
    taken = computer.checkpoint()
    expected = _read(computer)  # reads advance the generator and random: once more after
    computer.rollback(taken)
    assert run(computer, DESTROY).status == "ok"
    assert run(computer, "print(counter.count, objects['a'].x)").output == "3 100\n"
    assert "NameError" in run(computer, "double").output
    computer.rollback(taken)
    assert _read(computer) == expected
    count, _, step, doubled, *_ = expected.split()
    assert (count, step, doubled) == ("2", "3", "42")


@pytest.mark.skipif(not HAS_NUMPY, reason="numpy is not installed: the 200 MB array is skipped")
def test_a_200_mb_array_comes_back_with_a_rollback(computer: Computer) -> None:
    assert run(computer, BIG).status == "ok"
    taken = computer.checkpoint()
    expected = _read(computer)
    assert "200000000 24999999.0" in expected
    computer.rollback(taken)
    assert run(computer, DESTROY).status == "ok"
    assert run(computer, "print(float(big.sum()))").output == "0.0\n"
    computer.rollback(taken)
    assert _read(computer) == expected


def test_a_fork_carries_the_state_and_each_side_goes_its_own_way(computer: Computer) -> None:
    fork = computer.fork()
    try:
        read = "print(counter.count, objects['a'].x, next(gen), random.random())"
        assert run(fork, read).output == run(computer, read).output
        assert run(fork, read).output.startswith("2 -3 4 ")
        run(fork, "counter.bump(); objects['a'].x = 'fork'; only_fork = 1")
        run(computer, "objects['a'].x = 'parent'; only_parent = 1")
        seen = "print(counter.count, objects['a'].x, 'only_fork' in globals(), 'only_parent' in globals())"
        assert run(fork, seen).output == "3 fork True False\n"
        assert run(computer, seen).output == "2 parent False True\n"
        pids = run(fork, "import os; print(os.getpid())").output
        assert pids != run(computer, "import os; print(os.getpid())").output
    finally:
        fork.close()
    assert run(computer, "print(objects['a'].x)").output == "parent\n"


def test_a_rollback_undoes_del_but_leaves_the_working_directorys_files(
    computer: Computer, tmp_path: Path
) -> None:
    (tmp_path / "data.txt").write_text("kept")
    run(computer, "value = open('data.txt').read()")
    taken = computer.checkpoint()
    destroyed = run(computer, "import os\ndel value, objects\nos.remove('data.txt')")
    assert destroyed.status == "ok"
    assert "NameError" in run(computer, "value").output
    computer.rollback(taken)
    assert run(computer, "print(value, sorted(objects))").output == "kept ['a', 'b']\n"
    # The library restores the interpreter only: the folder is its user's.
    assert not (tmp_path / "data.txt").exists()


def test_a_chain_of_three_rolls_back_to_the_first_and_each_stays(computer: Computer) -> None:
    taken = []
    for step in (1, 2, 3):
        run(computer, f"step = {step}")
        taken.append(computer.checkpoint())
    run(computer, "step = 4")
    computer.rollback(taken[0])
    assert run(computer, "print(step)").output == "1\n"
    computer.rollback(taken[2])
    assert run(computer, "print(step)").output == "3\n"
    computer.rollback(taken[0])
    assert run(computer, "print(step)").output == "1\n"
    assert [c.id for c in computer.checkpoints()] == taken
    assert all(c.alive and c.language == "python" for c in computer.checkpoints())


def test_a_revived_kernel_is_interrupted_asks_for_input_and_shows_displays(
    tmp_path: Path,
) -> None:
    with Computer(cwd=tmp_path, on_input=lambda prompt: "bob") as computer:
        run(computer, "x = 5")
        computer.rollback(computer.checkpoint())
        stopped = run(computer, "import time\nwhile True: time.sleep(0.01)", timeout=1.5)
        assert (
            stopped.status == "timeout" and (stopped.final.extras or {}).get("state_lost") is False
        )
        assert run(computer, "print(name := input('name? '), x)").output.endswith("bob 5\n")
        shown = run(computer, "from IPython.display import HTML\nHTML('<b>hi</b>')")
        assert [m.content for m in shown.of("code", "html")] == ["<b>hi</b>"]
        assert run(computer, "print(x)").output == "5\n"


def test_a_revived_kernels_runtime_hooks_are_installed_every_time(computer: Computer) -> None:
    """Regression: revived kernels reuse a shell prepared in the frozen copy; the
    runtime's startup (per-run environment, the note of what was left behind) must
    still be installed on it, for the first and for a second kernel revived from it."""
    run(computer, "import os, threading, time\nx = 1")
    run(computer, "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()")
    taken = computer.checkpoint()
    for _ in range(2):
        computer.rollback(taken)
        first = run(computer, "print(os.environ.get('LMC_HOOKED'), x)", env={"LMC_HOOKED": "yes"})
        assert first.output.endswith("yes 1\n")
        assert "1 thread" in first.output and "not carried" in first.output
        assert run(computer, "print(os.environ.get('LMC_HOOKED'))").output == "None\n"


def test_the_kernel_a_rollback_replaces_ends_without_taking_the_new_ones_files(
    computer: Computer,
) -> None:
    """Regression: a rollback kills the old kernel while the new one starts, on the
    same connection file and socket paths; the old one's cleanup must leave them."""
    run(computer, "x = 3")
    taken = computer.checkpoint()
    check = (
        "import glob, os\nfrom ipykernel.kernelapp import IPKernelApp\n"
        "f = IPKernelApp.instance().connection_file\n"
        "print(os.path.exists(f), len(glob.glob(os.path.join(os.path.dirname(f), '*-kernel-*'))), x)"
    )
    for _ in range(3):
        computer.rollback(taken)
        assert run(computer, check).output == "True 4 3\n"  # 4 sockets: no heartbeat


def test_a_revived_kernel_keeps_the_kernels_configuration_and_script_magics(
    computer: Computer,
) -> None:
    """Regression: a revived kernel takes the image's parsed configuration (not its
    command line parsed again) and the script magics' parser built once in the
    frozen copy; the kernelspec's options and ``%%bash --out`` must hold in
    every kernel revived from it, and in a fork, whose connection file is its own."""
    taken = computer.checkpoint()
    check = (
        "from ipykernel.kernelapp import IPKernelApp\nip = get_ipython()\n"
        "print(ip.colors, ip.history_manager.enabled, IPKernelApp.instance().connection_file)"
    )
    script = "%%bash --out said\necho from-bash"
    for _ in range(2):
        computer.rollback(taken)
        colors, history, connection = run(computer, check).output.splitlines()[-1].split()
        assert (colors, history) == ("NoColor", "False")
        assert run(computer, script).status == "ok"
        assert run(computer, "print(said.strip())").output == "from-bash\n"
    fork = computer.fork()
    try:
        colors, history, forked = run(fork, check).output.splitlines()[-1].split()
        assert (colors, history) == ("NoColor", "False") and forked != connection
        assert run(fork, script).status == "ok"
        assert run(fork, "print(said.strip())").output == "from-bash\n"
    finally:
        fork.close()
