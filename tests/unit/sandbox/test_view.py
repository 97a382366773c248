"""The sandbox's view of itself: where host folders appear inside, the binds
bwrap gets for them, the accounts file and the session's environment."""

from __future__ import annotations

from pathlib import Path

from lmc_runtime.sandbox.bwrap import bwrap_args
from lmc_runtime.sandbox.policy import SandboxPolicy
from lmc_runtime.sandbox.view import SandboxView, view_env


def _view(root: Path) -> SandboxView:
    return SandboxView(root / "work", root / "runtime", root / "passwd", root / "group")


def test_host_paths_in_bound_folders_are_named_as_seen_inside(tmp_path: Path) -> None:
    """Guards the cwd a process enters: a folder of the home is named under
    /home/user, never by its host path."""
    view = _view(tmp_path)
    assert view.inside(tmp_path / "work") == "/home/user"
    assert view.inside(tmp_path / "work" / "project" / "src") == "/home/user/project/src"
    assert view.inside(tmp_path / "runtime" / "ipython") == "/run/lmc/ipython"
    assert view.inside(tmp_path / "workshop") == str(tmp_path / "workshop")


def test_bwrap_binds_the_home_runtime_and_accounts_after_etc(tmp_path: Path) -> None:
    """Guards the binds' order: the accounts go over /etc's own files, so they
    come after /etc is bound."""
    etc = Path("/etc")
    args = bwrap_args(
        "bwrap",
        readonly=(etc,),
        hidden=(),
        writable=(),
        control=(),
        network=False,
        view=_view(tmp_path),
    )
    assert args.index("/home/user") > 0 and args.index("/run/lmc") > args.index("/run")
    passwd = args.index("/etc/passwd")
    assert args[passwd - 1] == str(tmp_path / "passwd") and passwd > args.index(str(etc))


def test_the_accounts_name_the_code_user(tmp_path: Path) -> None:
    """Guards what whoami reads: the code's uid is 'user', whose home is /home/user."""
    view = _view(tmp_path)
    view.write_accounts(1000, 1000)
    entries = [line.split(":") for line in (tmp_path / "passwd").read_text().splitlines()]
    user = next(entry for entry in entries if entry[2] == "1000")
    assert user[0] == "user" and user[5] == "/home/user"
    assert "user:x:1000:" in (tmp_path / "group").read_text()
    assert all(len(entry) == 7 for entry in entries)  # the fields pwd reads


def test_the_environment_keeps_runtime_files_out_of_the_home() -> None:
    """Guards the listing of the home: every interpreter's own files go to the
    runtime folder, and a session's own variables still win."""
    policy = SandboxPolicy(env={"MPLCONFIGDIR": "/home/user/mpl"})
    env = view_env({"PATH": "/usr/bin"}, policy, "/home/user", "/run/lmc")
    assert env["HOME"] == "/home/user"
    for name in ("IPYTHONDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "PYTHONUSERBASE"):
        assert env[name].startswith("/run/lmc/"), name
    assert env["PATH"] == "/run/lmc/local/bin:/usr/bin"
    assert env["PIP_RETRIES"] == "0"  # no network: retrying cannot help
    assert "/home/user/mpl" in env.values()


def _full_view(root: Path) -> SandboxView:
    return SandboxView(
        root / "work", root / "runtime", root / "passwd", root / "group", root / "c", root / "s"
    )


def test_the_hosts_folders_of_the_session_are_named_as_seen_inside(tmp_path: Path) -> None:
    """Guards the paths the host hands a sandbox (connection file, FIFOs, sockets):
    they name /run/control and /run/shared, never the session folder."""
    view = _full_view(tmp_path)
    assert view.inside(tmp_path / "c" / "python" / "connection.json") == (
        "/run/control/python/connection.json"
    )
    assert view.inside(tmp_path / "s" / "python-kernel") == "/run/shared/python-kernel"
    assert view.inside(tmp_path / "cs") == str(tmp_path / "cs")
    control, shared = tmp_path / "c", tmp_path / "s"
    argv = [
        "node",
        f"{control}/javascript/events",
        f"--user-data-dir={shared}/render-1-profile",
        (control / "render-1" / "page.html").as_uri(),
        str(tmp_path / "cs"),
        str(control),
    ]
    assert [view.translate(argument) for argument in argv] == [
        "node",
        "/run/control/javascript/events",
        "--user-data-dir=/run/shared/render-1-profile",
        "file:///run/control/render-1/page.html",
        str(tmp_path / "cs"),
        "/run/control",
    ]


def test_a_linked_session_folder_is_named_as_seen_inside_too(tmp_path: Path) -> None:
    """Guards jupyter_client's connection file, which it names by its real path:
    a data directory reached through a link is translated by either name."""
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    view = _full_view(tmp_path / "linked")
    real = tmp_path / "real" / "c" / "python" / "connection.json"
    assert view.inside(real) == "/run/control/python/connection.json"
    assert view.translate(str(real)) == "/run/control/python/connection.json"


def test_bwrap_binds_control_read_only_and_shared_at_their_places(tmp_path: Path) -> None:
    args = bwrap_args(
        "bwrap",
        readonly=(),
        hidden=(),
        writable=(),
        control=(),
        network=False,
        view=_full_view(tmp_path),
    )
    control = args.index("/run/control")
    assert args[control - 2 : control] == ["--ro-bind", str(tmp_path / "c")]
    shared = args.index("/run/shared")
    assert args[shared - 2 : shared] == ["--bind", str(tmp_path / "s")]
    assert args[-2:] == ["--chdir", "/"]
