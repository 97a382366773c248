"""What one option of ``lmc serve`` is: its name, how its value is read, its
default and help, and the flag, environment variables and ``--help`` default
made from them. The options themselves are the table in
:mod:`~lmc_runtime.service.options`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .values import Parser

__all__ = ["Option"]


@dataclass(frozen=True)
class Option:
    """One setting: its name (the TOML key), how its value is read, its default."""

    name: str
    parse: Parser
    default: object
    help: str
    #: A flag without a value (``--metrics-public``); env and file say true or false.
    switch: bool = False
    #: How ``--help`` shows the default, when not the default itself.
    show: str | None = None
    #: Environment variables read after ``LMC_SERVE_<NAME>``.
    also_env: tuple[str, ...] = ()
    metavar: str | None = None
    #: The flag may be given more than once (a list); the environment variable
    #: separates its items with ';', the file gives a list.
    repeat: bool = False
    #: The flag may also be given without a value, which then means this.
    bare: object = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env_names(self) -> tuple[str, ...]:
        return (f"LMC_SERVE_{self.name.upper()}", *self.also_env)

    @property
    def shown(self) -> str:
        if self.show is not None:
            return self.show
        if self.default is None:
            return "none"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        if isinstance(self.default, float):
            return f"{self.default:g}"  # 300, not 300.0: as the docs write it
        return str(self.default)
