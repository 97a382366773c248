"""How a kernel revived from a checkpoint is configured (``kernels/lmc-python/lmc_revive.py``)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
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


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("_revive_test_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_modules_a_startup_file_names_beside_it_are_compiled_with_it(tmp_path: Path) -> None:
    for name in ("lmc_a", "lmc_b", "lmc_other"):
        (tmp_path / f"{name}.py").write_text(f"name = {name!r}\n")
    startup = tmp_path / "startup.py"
    startup.write_text(
        "def install():\n    for name in ('lmc_a', 'lmc_b', 'not_beside'):\n        load(name)\n"
        "x = 'lmc_a'\ny = 3.5\n"
    )
    revive = _revive()
    found = revive._named_beside(revive._compiled(str(startup)), str(tmp_path))
    assert found == {str(tmp_path / "lmc_a.py"), str(tmp_path / "lmc_b.py")}


def test_a_module_compiled_in_the_image_runs_that_code_while_kept_and_not_after(
    tmp_path: Path,
) -> None:
    from importlib.machinery import SourceFileLoader

    path = tmp_path / "lmc_a.py"
    path.write_text("value = 'from the file'\n")
    revive = _revive()
    image = compile("value = 'from the image'", str(path), "exec")
    revive._MADE["compiled"][os.path.realpath(path)] = image
    with revive._modules_compiled():
        assert _load(path).value == "from the image"
        other = tmp_path / "lmc_b.py"
        other.write_text("value = 'not compiled before'\n")
        assert _load(other).value == "not compiled before"
    assert "get_code" not in SourceFileLoader.__dict__
    assert _load(path).value == "from the file"
