"""The wheel: what it holds, and a fresh venv with it installed and no extras, run from
outside the repository."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest

import lmc_runtime
from lmc_runtime.cli.bench import NOT_FOUND

from ..integration.lmc_cli import EXTRA_ONLY_PACKAGES
from .wheels import REPO, fresh_venv, venv_pip

pytestmark = pytest.mark.integration

#: The load tools that lived in lmc_runtime/service/.
MEASURING_TOOLS = ("loadtest", "loadmix", "loadwire", "loadreport", "burst", "census")

#: Packages that only extras bring; the light install must have none of them.
NOT_IN_THE_LIGHT_INSTALL = set(EXTRA_ONLY_PACKAGES)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    outside: Path  # a working directory outside the repository

    def run(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return subprocess.run(
            args,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd=self.outside,
            env=env,
        )


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    """The wheel, with no extra, in a fresh venv; run from a folder outside the repository."""
    root = tmp_path_factory.mktemp("packaging")
    assert not root.resolve().is_relative_to(REPO)
    venv, outside = root / "venv", root / "elsewhere"
    outside.mkdir()
    fresh_venv(venv, str(wheel), outside)  # the pip cache is reused
    yield Installed(wheel, venv, outside)


@pytest.mark.timeout(900)
def test_the_wheel_holds_the_license_the_demo_and_one_version(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(wheel.read(metadata_name).decode())
        licenses = [n for n in names if n.endswith("/LICENSE")]
        assert licenses and b"MIT License" in wheel.read(licenses[0])
    assert "lmc_runtime/demo/demo.jsonl" in names
    # The Java runner ships as source; `lmc setup` builds it where it is installed.
    assert "lmc_runtime/_kernels/lmc-java/LmcJava.java" in names
    assert not [n for n in names if "/lmc-java/build/" in n]
    assert metadata["Version"] == lmc_runtime.__version__
    assert {"serve", "repl", "agent", "plot", "all", "test"} <= set(
        metadata.get_all("Provides-Extra") or []
    )
    urls = " ".join(metadata.get_all("Project-URL") or [])
    assert "https://github.com/lmc-runtime/lmc-runtime" in urls


#: The measuring tools, kept in the repository's benchmarks/ folder, not in the package.
MOVED_OUT = (
    "lmc_runtime/bench/",
    *(f"lmc_runtime/service/{name}.py" for name in MEASURING_TOOLS),
)


@pytest.mark.timeout(900)
def test_the_wheel_holds_no_measuring_tool_and_serve_needs_no_psutil(
    installed: Installed,
) -> None:
    """Guards the package's size: neither lmc bench's benchmark, the load, burst and
    census tools, nor the benchmarks folder ship, and [serve] does not bring psutil."""
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(wheel.read(metadata_name).decode())
    shipped = [n for n in names if n.startswith(MOVED_OUT) or n.startswith("benchmarks/")]
    assert shipped == []
    assert "lmc_runtime/cli/bench.py" in names  # the command that finds them stays
    serve = [
        requirement
        for requirement in metadata.get_all("Requires-Dist") or []
        if requirement.replace('"', "'").endswith("extra == 'serve'")
    ]
    assert serve and not [r for r in serve if r.startswith("psutil")], serve


@pytest.mark.timeout(900)
def test_lmc_bench_from_the_wheel_says_in_one_line_how_to_get_the_benchmarks(
    installed: Installed,
) -> None:
    """Guards lmc bench without a checkout: exit 2 and one line naming --benchmarks."""
    done = installed.run("lmc", "bench", "--quick")
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-3000:]
    assert done.stderr == f"{NOT_FOUND}\n"


@pytest.mark.timeout(900)
def test_the_light_install_has_no_extra(installed: Installed) -> None:
    done = installed.run(*venv_pip(installed.venv), "list", "--format=json")
    assert done.returncode == 0, done.stderr
    names = {entry["name"].lower().replace("_", "-") for entry in json.loads(done.stdout)}
    assert "lmc-runtime" in names
    assert names & NOT_IN_THE_LIGHT_INSTALL == set()


@pytest.mark.timeout(900)
def test_lmc_version_and_the_demo_run_from_the_light_install(installed: Installed) -> None:
    version = installed.run("lmc", "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout == f"lmc-runtime {lmc_runtime.__version__}\n"
    demo = installed.run("lmc", "demo")
    assert demo.returncode == 0, demo.stderr[-3000:]
    out = [json.loads(line) for line in demo.stdout.splitlines()]
    assert any(m["in_reply_to"] == "m1" and m["content"] == "9222500" for m in out), out[:5]
    assert any(m["in_reply_to"] == "m3" and m["type"] == "image" for m in out)


@pytest.mark.timeout(900)
def test_a_computer_round_trip_in_the_light_install(installed: Installed) -> None:
    code = (
        "from lmc_runtime import Computer\n"
        "with Computer() as computer:\n"
        "    for reply in computer.run(('python', 'print(1+1)')):\n"
        "        if reply.format == 'output':\n"
        "            print(repr(reply.content))\n"
    )
    done = installed.run("python", "-c", code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "'2\\n'\n"
