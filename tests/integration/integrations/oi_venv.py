"""A virtualenv with Open Interpreter, built once per machine for the tests that drive it.

Open Interpreter pins versions that clash with this project's environment, so it
lives in a virtualenv of its own: ``open-interpreter``, lmc-runtime's core
dependencies and its ``[client]`` extra, resolved together by pip. The checkout
itself is not installed there: the scripts run with it on ``PYTHONPATH``, next to
its metadata (:func:`checkout_metadata`: its entry points, which name the kernel
provisioner), so one cached virtualenv serves every checkout and none changes it
(:func:`~..venvs.cached_venv` keys it by what goes in).
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from ..venvs import cached_venv

OI_VERSION = "0.4.3"
REPO = Path(__file__).resolve().parents[3]


def requirements() -> list[str]:
    """Open Interpreter, lmc-runtime's core dependencies and its [client] extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    client = project["optional-dependencies"]["client"]
    return [f"open-interpreter=={OI_VERSION}", *project["dependencies"], *client]


def open_interpreter_python() -> Path:
    """The Python of the virtualenv, built first if it is not in the cache."""
    return cached_venv(f"open-interpreter-{OI_VERSION}", requirements(), what="Open Interpreter")


def checkout_metadata(dest: Path) -> Path:
    """A folder holding the checkout's installed metadata (``lmc_runtime-V.dist-info``
    with its entry points, from pyproject.toml), as installing it would write."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    init = (REPO / "lmc_runtime" / "__init__.py").read_text()
    found = re.search(r"^__version__ = \"([^\"]+)\"", init, re.MULTILINE)
    assert found, "lmc_runtime/__init__.py has no __version__"
    info = dest / f"lmc_runtime-{found[1]}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {found[1]}\n"
    )
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
            for group, points in groups.items()
        )
    )
    return dest


def script_env(metadata: Path, **extra: str) -> dict[str, str]:
    """The environment of a script in the virtualenv: this checkout importable with
    its ``metadata`` folder, and OI kept off the network (no model cost map
    download, no telemetry)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(metadata)])
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["DISABLE_TELEMETRY"] = "true"
    env.update(extra)
    return env
