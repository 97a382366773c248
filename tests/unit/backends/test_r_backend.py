"""lmc_runtime.backends.r: finding R, asking it (once) whether IRkernel is installed,
and the shipped kernelspec's argv pointing at that R."""

from __future__ import annotations

import json
import stat
from importlib.metadata import entry_points
from pathlib import Path

from lmc_runtime.backends import Registry
from lmc_runtime.backends.jupyter import LmcProvisioner
from lmc_runtime.backends.jupyter.provisioner import PROVISIONER_NAME
from lmc_runtime.backends.kernelspecs import kernels_dir
from lmc_runtime.backends.r import IRKERNEL_MISSING, R_MISSING, RBackend


def fake_r(bin_dir: Path, status: int) -> Path:
    """An `R` that logs each call and exits with ``status`` (0: IRkernel is there)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "R"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{bin_dir}/calls"\nexit {status}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_no_r_on_the_path_says_how_to_install_it(tmp_path: Path) -> None:
    availability = RBackend(path=str(tmp_path)).availability()
    assert not availability.available
    assert availability.reason == R_MISSING
    assert "apt-get install r-base-core r-cran-irkernel" in R_MISSING


def test_r_without_irkernel_says_how_to_install_irkernel(tmp_path: Path) -> None:
    fake_r(tmp_path / "bin", 1)
    assert RBackend(path=str(tmp_path / "bin")).availability().reason == IRKERNEL_MISSING


def test_r_is_asked_once_per_backend(tmp_path: Path) -> None:
    fake_r(tmp_path / "bin", 0)
    backend = RBackend(path=str(tmp_path / "bin"))
    assert backend.availability().available
    assert backend.availability().available
    calls = (tmp_path / "bin" / "calls").read_text().splitlines()
    assert len(calls) == 1 and "IRkernel" in calls[0]


def test_another_r_without_irkernel_says_how_to_install_it_there(tmp_path: Path) -> None:
    r = fake_r(tmp_path / "opt", 1)
    reason = RBackend(str(r)).availability().reason
    assert reason == f"{r} has no IRkernel: run {r} -e 'install.packages(\"IRkernel\")'"
    assert RBackend(str(tmp_path / "nothing")).availability().reason == (
        f"{tmp_path / 'nothing'} is not an R that can be run"
    )


def test_the_kernelspec_runs_the_r_that_was_found(tmp_path: Path) -> None:
    r = fake_r(tmp_path / "bin", 0)
    for backend in (RBackend(path=str(tmp_path / "bin")), RBackend(str(r), path="")):
        spec = backend.spec_manager().get_kernel_spec("lmc-r")
        assert spec.argv[0] == str(r)
        assert "{connection_file}" in spec.argv
        assert spec.interrupt_mode == "signal"


def test_the_shipped_kernelspec_starts_the_startup_code_from_its_own_folder() -> None:
    folder = kernels_dir() / "lmc-r"
    argv = json.loads((folder / "kernel.json").read_text())["argv"]
    assert argv[0] == "R"
    assert "{resource_dir}/lmc_startup.R" in argv
    assert (folder / "lmc_startup.R").is_file()


def test_the_registry_names_r_and_its_alias() -> None:
    registry = Registry()
    assert registry.resolve("R") == registry.resolve("r") == "r"
    assert isinstance(registry.get("r"), RBackend)
    assert RBackend.kernel_name == "lmc-r"


def test_the_shipped_kernelspecs_name_the_registered_provisioner() -> None:
    for name in ("lmc-r", "lmc-python"):
        spec = json.loads((kernels_dir() / name / "kernel.json").read_text())
        assert spec["metadata"]["kernel_provisioner"] == {"provisioner_name": PROVISIONER_NAME}
    (entry,) = entry_points(group="jupyter_client.kernel_provisioners", name=PROVISIONER_NAME)
    assert entry.load() is LmcProvisioner
