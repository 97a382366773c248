"""How a kernel revived from a checkpoint is configured (``kernels/lmc-python/lmc_revive.py``)."""

from __future__ import annotations

import importlib.util
from types import ModuleType, SimpleNamespace

from traitlets.config import Config

from lmc_runtime.backends.kernelspecs import kernels_dir

OPTIONS = ["--IPKernelApp.exec_files=/k/lmc_startup.py", "--InteractiveShell.colors=NoColor"]


def _revive() -> ModuleType:
    path = kernels_dir() / "lmc-python" / "lmc_revive.py"
    spec = importlib.util.spec_from_file_location("_lmc_revive_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _image() -> SimpleNamespace:
    config = Config()
    config.IPKernelApp.connection_file = "/s/old.json"
    config.InteractiveShell.colors = "NoColor"
    return SimpleNamespace(argv=["-f", "/s/old.json", *OPTIONS], config=config, profile_dir="P")


def test_the_images_configuration_serves_a_command_line_that_differs_in_its_file_alone() -> None:
    revive, old, app = _revive(), _image(), SimpleNamespace()
    revive._config_of(old, app, ["-f", "/s/new.json", *OPTIONS])
    assert app.config.IPKernelApp.connection_file == "/s/new.json"
    assert app.config.InteractiveShell.colors == "NoColor"
    assert old.config.IPKernelApp.connection_file == "/s/old.json"  # a copy, not the image's
    assert app.profile_dir == "P" and app.parse_command_line() is None


def test_a_command_line_that_differs_otherwise_is_parsed_as_usual() -> None:
    revive, old = _revive(), _image()
    for argv in (
        ["-f", "/s/new.json", "--InteractiveShell.colors=Linux"],
        ["-f", "/s/new.json", *OPTIONS, "--debug"],
        [*OPTIONS],
    ):
        app = SimpleNamespace()
        revive._config_of(old, app, argv)
        assert vars(app) == {}, argv


def test_script_magics_share_one_parser_while_kept_and_not_after() -> None:
    from IPython.core.magics.script import ScriptMagics

    revive = _revive()
    owner = SimpleNamespace(script_paths={})
    with revive._parsers_kept():
        sh = ScriptMagics._make_script_magic(owner, "sh")
        bash = ScriptMagics._make_script_magic(owner, "bash")
    assert sh.parser is bash.parser
    assert sh.parser.parse_argstring("--out o").out == "o"
    later = ScriptMagics._make_script_magic(owner, "perl")
    assert later.parser is not sh.parser
