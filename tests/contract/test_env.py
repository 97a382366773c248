"""Variables given for one execution (``env=`` or ``extras.env``) apply to it alone."""

from __future__ import annotations

from lmc_runtime import Computer

from .harness import ComputerFactory, assert_ends_once, code_message, run
from .languages import Profile

NAME = "LMC_CONTRACT_VAR"
#: Spaces, both quotes, a dollar, a backslash and non-ASCII text: no quoting may change it.
VALUE = 'it\'s "a" $HOME \\n ü'


def test_env_applies_to_its_run_only(lang: Profile, computer: Computer) -> None:
    result = run(computer, lang, lang.show_env(NAME), env={NAME: VALUE})
    assert_ends_once(result)
    assert result.status == "ok" and result.output == VALUE + "\n", result.describe()
    after = run(computer, lang, lang.show_env(NAME))
    assert after.output == "<unset>\n", after.describe()


def test_env_restores_a_variable_the_interpreter_had(
    lang: Profile, make_computer: ComputerFactory
) -> None:
    computer = make_computer(env={NAME: "from-start"})
    assert run(computer, lang, lang.show_env(NAME), env={NAME: "for-one-run"}).output == (
        "for-one-run\n"
    )
    after = run(computer, lang, lang.show_env(NAME))
    assert after.output == "from-start\n", after.describe()


def test_env_from_the_message_extras(lang: Profile, computer: Computer) -> None:
    message = code_message(lang, lang.show_env(NAME))
    message["extras"] = {"env": {NAME: "from-extras"}}
    outputs = [m.content for m in computer.run(message) if m.format == "output"]
    assert outputs == ["from-extras\n"]


def test_env_is_restored_after_an_error(lang: Profile, computer: Computer) -> None:
    failed = run(computer, lang, lang.show_env(NAME) + "\n" + lang.fail, env={NAME: VALUE})
    assert failed.status == "error" and VALUE in failed.text, failed.describe()
    after = run(computer, lang, lang.show_env(NAME))
    assert after.output == "<unset>\n", after.describe()


def test_env_is_restored_after_a_timeout(lang: Profile, computer: Computer) -> None:
    stopped = run(computer, lang, lang.sleep(30), env={NAME: VALUE}, timeout=1.0)
    assert stopped.status == "timeout", stopped.describe()
    after = run(computer, lang, lang.show_env(NAME))
    assert after.output == "<unset>\n", after.describe()
