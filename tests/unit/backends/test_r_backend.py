"""lmc_runtime.backends.r: finding R and IRkernel without starting R, and the shipped
kernelspec's argv pointing at the R that was found."""

from __future__ import annotations

import json
import os
import stat
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from lmc_runtime.backends import Registry
from lmc_runtime.backends.jupyter import LmcProvisioner, kernels_dir
from lmc_runtime.backends.jupyter.provisioner import PROVISIONER_NAME
from lmc_runtime.backends.r import IRKERNEL_MISSING, R_MISSING, RBackend, find_irkernel


def fake_r(bin_dir: Path, r_home: Path) -> Path:
    """An `R` front-end script like Debian's, naming its R_HOME."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "R"
    script.write_text(f"#!/bin/sh\nR_HOME_DIR={r_home}\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def fake_package(library: Path, name: str = "IRkernel") -> Path:
    (library / name).mkdir(parents=True)
    (library / name / "DESCRIPTION").write_text(f"Package: {name}\n")
    return library / name


def test_no_r_on_the_path_says_how_to_install_it(tmp_path: Path) -> None:
    availability = RBackend(path=str(tmp_path)).availability()
    assert not availability.available
    assert availability.reason == R_MISSING
    assert "apt-get install r-base-core r-cran-irkernel" in R_MISSING


def test_r_without_irkernel_says_how_to_install_irkernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("R_LIBS", "R_LIBS_SITE", "R_LIBS_USER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    fake_r(tmp_path / "bin", tmp_path / "rhome")
    backend = RBackend(path=str(tmp_path / "bin"), system_libraries=[str(tmp_path / "none")])
    assert backend.availability().reason == IRKERNEL_MISSING


def test_irkernel_is_found_in_r_home_from_the_front_end_script(tmp_path: Path) -> None:
    r = fake_r(tmp_path / "bin", tmp_path / "rhome")
    found = fake_package(tmp_path / "rhome" / "site-library")
    assert find_irkernel(str(r), {}, []) == found


@pytest.mark.parametrize("var", ["R_LIBS", "R_LIBS_SITE", "R_LIBS_USER"])
def test_irkernel_is_found_in_r_libs_variables(tmp_path: Path, var: str) -> None:
    r = fake_r(tmp_path / "bin", tmp_path / "rhome")
    found = fake_package(tmp_path / "lib2")
    env = {var: os.pathsep.join([str(tmp_path / "lib1"), str(tmp_path / "lib2")])}
    assert find_irkernel(str(r), env, []) == found


def test_irkernel_is_found_in_the_user_library(tmp_path: Path) -> None:
    r = fake_r(tmp_path / "bin", tmp_path / "rhome")
    found = fake_package(tmp_path / "home" / "R" / "x86_64-pc-linux-gnu-library" / "4.2")
    assert find_irkernel(str(r), {"HOME": str(tmp_path / "home")}, []) == found


def test_a_folder_without_a_description_is_not_a_package(tmp_path: Path) -> None:
    r = fake_r(tmp_path / "bin", tmp_path / "rhome")
    (tmp_path / "rhome" / "library" / "IRkernel").mkdir(parents=True)
    assert find_irkernel(str(r), {}, []) is None


def test_the_kernelspec_runs_the_r_that_was_found(tmp_path: Path) -> None:
    r = fake_r(tmp_path / "bin", tmp_path / "rhome")
    spec = RBackend(path=str(tmp_path / "bin")).spec_manager().get_kernel_spec("lmc-r")
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
