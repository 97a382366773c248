"""Environments without building one: names, manifests, the lookup's checks on
folders made by hand, the CLI's parser, what a session's sandbox is told
(``PATH``, pip, ``NODE_PATH``, its commands), E2B's templates and the fork
server's refusal of another virtualenv's Python."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from lmc_runtime.cli.environments import data_dir_of
from lmc_runtime.cli.parser import build_parser
from lmc_runtime.e2b.errors import E2BError
from lmc_runtime.e2b.templates import template_of
from lmc_runtime.environments import Environment, name_problem
from lmc_runtime.environments.build import BuildFailed, create_environment
from lmc_runtime.environments.store import (
    MANIFEST,
    Manifest,
    find_environment,
    list_environments,
    remove_environment,
)
from lmc_runtime.sandbox.commands import write_commands
from lmc_runtime.sandbox.forks import forkable
from lmc_runtime.sandbox.policy import SandboxPolicy
from lmc_runtime.sandbox.view import view_env
from lmc_runtime.service.errors import EnvironmentBroken, UnknownEnvironment
from lmc_runtime.service.problems import problem_for


@pytest.mark.parametrize("name", ["a", "data-science", "py3_12", "0", "a" * 63])
def test_good_names(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize(
    "name", ["", "A", "-a", "_a", "a/b", "..", ".hidden", "a b", "a" * 64, "é", "a\n"]
)
def test_bad_names(name: str) -> None:
    assert name_problem(name) is not None


def _fake(data: Path, name: str, *, state: str = "ready", kernel: bool = True) -> Path:
    """An environment folder made by hand: a ``bin/python`` and, if ``kernel``,
    an ipykernel package, with a manifest."""
    root = data / "environments" / name
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").symlink_to(sys.executable)
    if kernel:
        package = root / "lib" / "python3.11" / "site-packages" / "ipykernel"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
    manifest = Manifest(name, "3.11", "2026-01-01T00:00:00+00:00", state, ["requests"])
    (root / MANIFEST).write_text(manifest.to_json())
    return root


def test_a_manifest_round_trips_and_bad_ones_say_why() -> None:
    manifest = Manifest("x", "3.11", "now", "ready", ["a"], ["b==1"], ["lodash"])
    assert Manifest.from_json(manifest.to_json()) == manifest
    for text, said in [
        ("[]", "not a JSON object"),
        ('{"name": "x"}', "'python' is missing"),
        ('{"name": "x", "python": "3", "created": "", "state": "odd"}', "state 'odd'"),
        ('{"name": "x", "python": "3", "created": "", "state": "ready", "pip": [1]}', "'pip'"),
    ]:
        with pytest.raises(ValueError, match=said):
            Manifest.from_json(text)


def test_a_ready_environment_is_found(tmp_path: Path) -> None:
    root = _fake(tmp_path, "sci")
    (root / "node_modules").mkdir()
    found = find_environment(tmp_path, "sci")
    assert found == Environment("sci", root, "3.11", node=True)
    assert found.python == root / "bin" / "python"


def test_missing_names_list_those_there_are(tmp_path: Path) -> None:
    _fake(tmp_path, "sci")
    _fake(tmp_path, "bare")
    (tmp_path / "environments" / ".sci.building-1234").mkdir()  # a build under way
    for name in ("nowhere", "../environments/sci", ".sci.building-1234", "SCI"):
        with pytest.raises(UnknownEnvironment) as caught:
            find_environment(tmp_path, name)
        assert caught.value.known == ("bare", "sci")
    status, code, message = problem_for(caught.value)  # type: ignore[misc]
    assert (status, code) == (400, "unknown_environment")
    assert "the environments are bare, sci" in message


def test_no_environments_at_all(tmp_path: Path) -> None:
    with pytest.raises(UnknownEnvironment, match="there are none"):
        find_environment(tmp_path, "sci")


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (lambda root: _rewrite(root, state="broken"), "its manifest says it is broken"),
        (lambda root: (root / MANIFEST).write_text("{"), "its manifest is not valid"),
        (lambda root: (root / "bin" / "python").unlink(), "its Python"),
        (
            lambda root: (root / "lib/python3.11/site-packages/ipykernel/__init__.py").unlink(),
            "ipykernel is not installed in it",
        ),
    ],
)
def test_a_broken_environment_says_what_is_wrong(tmp_path: Path, spoil: object, said: str) -> None:
    root = _fake(tmp_path, "sci")
    spoil(root)  # type: ignore[operator]
    with pytest.raises(EnvironmentBroken, match=said) as caught:
        find_environment(tmp_path, "sci")
    assert problem_for(caught.value)[:2] == (400, "environment_broken")  # type: ignore[index]
    (listed,) = list_environments(tmp_path)
    assert listed.name == "sci" and listed.problem is not None and said in listed.problem


def _rewrite(root: Path, **changes: str) -> None:
    data = json.loads((root / MANIFEST).read_text())
    (root / MANIFEST).write_text(json.dumps({**data, **changes}))


def test_remove_takes_the_whole_folder(tmp_path: Path) -> None:
    _fake(tmp_path, "sci")
    remove_environment(tmp_path, "sci")
    assert os.listdir(tmp_path / "environments") == []
    with pytest.raises(UnknownEnvironment):
        remove_environment(tmp_path, "sci")


def test_a_build_refuses_a_bad_name_or_an_existing_one(tmp_path: Path) -> None:
    with pytest.raises(BuildFailed, match="not an environment name"):
        create_environment(tmp_path, "../x")
    _fake(tmp_path, "sci")
    with pytest.raises(BuildFailed, match="exists already"):
        create_environment(tmp_path, "sci")
    (tmp_path / "a-file").write_text("")
    with pytest.raises(BuildFailed, match="a-file/environments: Not a directory"):
        create_environment(tmp_path / "a-file", "sci")


def test_a_failed_build_leaves_nothing(tmp_path: Path) -> None:
    false = shutil.which("false")
    assert false is not None
    with pytest.raises(BuildFailed, match="making the virtualenv failed"):
        create_environment(tmp_path, "sci", python=false)
    assert os.listdir(tmp_path / "environments") == []


def test_a_python_sandboxes_cannot_see_is_refused(tmp_path: Path) -> None:
    """A virtualenv's ``python`` is a link to the Python it was made with."""
    shutil.copy(sys.executable, tmp_path / "copied-python")
    with pytest.raises(BuildFailed, match="which sandboxes do not see"):
        create_environment(tmp_path, "sci", python=str(tmp_path / "copied-python"))
    root = _fake(tmp_path, "moved")
    (root / "bin" / "python").unlink()
    (root / "bin" / "python").symlink_to(tmp_path / "copied-python")
    with pytest.raises(EnvironmentBroken, match="which sandboxes do not see"):
        find_environment(tmp_path, "moved")


def test_the_cli_parses_env_commands(tmp_path: Path) -> None:
    parser = build_parser()
    create = ["env", "create", "sci", "--pip", "numpy", "pandas==2.2", "--requirements", "r.txt"]
    more = ["--npm", "lodash", "--python", "/usr/bin/python3", "--data-dir", str(tmp_path)]
    args = parser.parse_args([*create, *more])
    assert (args.name, args.pip, args.npm) == ("sci", ["numpy", "pandas==2.2"], ["lodash"])
    assert (args.requirements, args.python) == ([Path("r.txt")], "/usr/bin/python3")
    assert data_dir_of(args) == tmp_path.resolve()
    assert parser.parse_args(["env", "list"]).func.__name__ == "cmd_env_list"
    assert parser.parse_args(["env", "remove", "sci"]).name == "sci"
    with pytest.raises(SystemExit):
        parser.parse_args(["env"])


def test_the_data_dir_is_found_as_lmc_serve_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = build_parser().parse_args(["env", "list"])
    monkeypatch.setenv("LMC_SERVE_DATA_DIR", str(tmp_path / "served"))
    assert data_dir_of(args) == tmp_path / "served"
    monkeypatch.delenv("LMC_SERVE_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir_of(args) == tmp_path / "xdg" / "lmc-runtime"


def test_a_session_s_variables_put_the_environment_first(tmp_path: Path) -> None:
    environment = Environment("sci", tmp_path / "sci", "3.12", node=True)
    policy = SandboxPolicy(environment=environment)
    env = view_env({"PATH": "/usr/bin"}, policy, "/home/user", "/run/lmc", "/run/control/bin")
    path = env["PATH"].split(":")
    root = str(tmp_path / "sci")
    assert path == [
        "/run/lmc/local/bin",
        "/run/control/bin",
        f"{root}/bin",
        f"{root}/node_modules/.bin",
        "/usr/bin",
    ]
    site = "/run/lmc/local/lib/python3.12/site-packages"
    assert (env["PIP_TARGET"], env["PYTHONPATH"]) == (site, site)
    assert "PIP_USER" not in env
    assert (env["VIRTUAL_ENV"], env["NODE_PATH"]) == (root, f"{root}/node_modules")


def test_the_session_s_commands_start_the_environment_s_python(tmp_path: Path) -> None:
    """Scripts, not links: Python finds its virtualenv by the path it was started
    at, and a link to the venv's ``python`` (itself a link) would resolve past it."""
    venv = tmp_path / "sci" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    (venv / "pip").write_text("#!/bin/sh\n")
    commands = tmp_path / "control" / "bin"
    commands.parent.mkdir()
    write_commands(commands, str(venv / "python"), [str(venv)])
    for name, target in [("python3", "python"), ("pip", "pip")]:
        script = commands / name
        assert not script.is_symlink()
        assert script.read_text() == f'#!/bin/sh\nexec {venv / target} "$@"\n'
        assert os.access(script, os.X_OK)
    assert f":{venv}:$PATH" in (commands.parent / "profile.sh").read_text()


def test_the_fork_server_never_runs_another_virtualenv_s_python(tmp_path: Path) -> None:
    """A virtualenv's ``python`` is a link to the same binary as the server's:
    forked from the server's zygote, it would have the server's packages."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    assert os.path.realpath(tmp_path / "bin" / "python") == os.path.realpath(sys.executable)
    assert not forkable([str(tmp_path / "bin" / "python"), "/k/lmc_kernel.py", "-f", "c.json"])
    assert forkable([sys.executable, "/k/lmc_kernel.py", "-f", "c.json"])


def test_e2b_templates_name_environments(tmp_path: Path) -> None:
    _fake(tmp_path, "sci")
    assert template_of("code-interpreter-v1", tmp_path) == ("code-interpreter-v1", None)
    assert template_of("base:latest", tmp_path) == ("base", None)
    assert template_of("sci", tmp_path) == ("sci", "sci")
    with pytest.raises(E2BError, match=r"this server has base, .*, sci") as caught:
        template_of("nowhere", tmp_path)
    assert caught.value.status == 404
