"""What differs between bash, zsh and sh: how to start them and what to tell them.

Every shell's prompt is the done marker (see :mod:`.protocol`), its
continuation prompt is empty, and where the shell has a DEBUG trap, the trap
reports the line of the cell file to the side-channel descriptor. A cell runs
as ``. CELL <STDIN`` typed at the top level, so ``declare`` stays global.

Code may set ``PS1`` (a virtualenv's ``activate`` does): bash and zsh rebuild
the marker prompt in a hook before every prompt (bash's read-only
``PROMPT_COMMAND``, zsh's ``precmd_functions``, re-armed by each run line); sh
has no hook, so there ``PS1`` and ``PS2`` are read-only. Job notices of jobs
that end between runs come as late output in bash (``set -b``) and zsh; sh
prints them only when the next run starts, so there they are dropped.
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path

from .protocol import marker_prefix

__all__ = ["BashDialect", "Dialect", "ShDialect", "ZshDialect", "run_env"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _marker(token: str, status: str) -> str:
    """The prompt text: the marker with ``status`` (a shell expansion) inside."""
    return marker_prefix(token).decode("ascii") + status + "\x07"


class Dialect:
    """One shell's startup and command syntax; subclasses override the differences."""

    program = "sh"
    #: Whether each run line starts with the run's begun record (sh: dash takes only
    #: descriptors 0 to 9 in a redirection, and the record pipe's may be higher).
    announces_begin = True

    def find(self) -> str | None:
        """The program's path on PATH, or None."""
        return shutil.which(self.program)

    def missing_reason(self) -> str:
        return f"{self.program} is not installed (apt-get install {self.program})"

    def argv(self, path: str) -> list[str]:
        """An interactive shell without rc files or line editing."""
        return [path, "-i"]

    def init_script(self, token: str, ctl_fd: int) -> str:
        """Shell code run once at start, before the first cell."""
        return (
            f"PS1='{_marker(token, '$?')}'\nPS2=''\nPS4='+ '\nunset HISTFILE\nreadonly PS1 PS2\n"
            + self.begun_setup(ctl_fd)
        )

    def begun_setup(self, ctl_fd: int) -> str:
        """The variable naming the line-record descriptor, for the begun records."""
        return f"__lmc_c={ctl_fd}\n" if self.announces_begin else ""

    def run_line(self, run: int, cell: Path, stdin: str, track: bool, prelude: str = "") -> str:
        """The line typed to run cell number ``run``, after ``prelude`` (commands and ``; ``).

        It starts with the run's begun record (``RUN 0``), so that a shell that dies
        before it took the line is known not to have run any of it.
        """
        begun = f"printf '{run} 0\\n' >&$__lmc_c 2>/dev/null; " if self.announces_begin else ""
        return f"{begun}{prelude}. {shlex.quote(str(cell))} <{shlex.quote(stdin)}\n"


class ShDialect(Dialect):
    """POSIX sh (dash on Debian): no DEBUG trap, so only the final active line, and no
    begun record."""

    announces_begin = False

    def run_line(self, run: int, cell: Path, stdin: str, track: bool, prelude: str = "") -> str:
        return super().run_line(run, cell, stdin, track, "jobs >/dev/null 2>&1; " + prelude)


class _Traced(Dialect):
    """A shell with a DEBUG trap: its run line tells the trap which cell and run to report."""

    #: What the run line sets first (zsh re-arms its prompt hook there).
    rearm = ""
    #: The trap's test that a command comes from the cell file, and how it writes a record.
    in_cell = ""
    record = ""

    def run_line(self, run: int, cell: Path, stdin: str, track: bool, prelude: str = "") -> str:
        # The trap is set only while tracking: it costs every command some time.
        trap = 'trap "$__lmc_trap" DEBUG' if track else "trap - DEBUG"
        ours = f"__lmc_n={run} __lmc_l='' __lmc_f={shlex.quote(str(cell))}; {trap}; "
        return super().run_line(run, cell, stdin, track, prelude + self.rearm + ours)

    def trap_setup(self, ctl_fd: int) -> str:
        """The trap's variables: it reports each new line of the cell on ``ctl_fd``."""
        report = (
            f'[[ $LINENO == "$__lmc_l" ]] || {{ [[ {self.in_cell} ]] && '
            f"{{ __lmc_l=$LINENO; {self.record} >&{ctl_fd} 2>/dev/null || :; }}; }}"
        )
        return f"__lmc_n=0 __lmc_f='' __lmc_l='' __lmc_trap={shlex.quote(report)}\n"


class BashDialect(_Traced):
    """bash, interactive with job control, ``--noediting``, a DEBUG trap under ``set -T``."""

    program = "bash"
    in_cell = '${BASH_SOURCE-} == "$__lmc_f"'
    record = 'printf \'%s %s\\n\' "$__lmc_n" "$LINENO"'

    def argv(self, path: str) -> list[str]:
        return [path, "--noprofile", "--norc", "--noediting", "-i"]

    def init_script(self, token: str, ctl_fd: int) -> str:
        # Before every prompt: keep $?, then the marker prompt, whatever the code set.
        marker = shlex.quote(marker_prefix(token).decode("ascii"))
        return (
            "PS2=''\nPS4='+ '\nunset HISTFILE\n"
            f"__lmc_prompt() {{ __lmc_s=$?; PS1={marker}\"$__lmc_s\"$'\\a'; PS0=''; PS2=''; }}\n"
            "PROMPT_COMMAND=__lmc_prompt\nreadonly PROMPT_COMMAND\nset +o history\nset -T -b\n"
            + self.trap_setup(ctl_fd)
            + self.begun_setup(ctl_fd)
        )


class ZshDialect(_Traced):
    """zsh without rc files or ZLE; its DEBUG trap sees the sourced file's line numbers."""

    program = "zsh"
    rearm = "precmd_functions=(__lmc_prompt) "
    in_cell = '${funcsourcetrace[1]-} == "$__lmc_f:0"'
    record = 'print -r -- "$__lmc_n $LINENO"'

    def argv(self, path: str) -> list[str]:
        return [path, "-f", "+Z", "-i"]

    def init_script(self, token: str, ctl_fd: int) -> str:
        # Before every prompt: the marker prompt and options, whatever the code set.
        prompt = f"PROMPT='{_marker(token, '%?')}'; RPROMPT=''; PS2=''; RPS2=''"
        options = "unsetopt PROMPT_SP PROMPT_CR PROMPT_SUBST; setopt PROMPT_PERCENT"
        return (
            f"{prompt}\nPS4='+ '\n{options}\nunsetopt BEEP\nunset HISTFILE\nSAVEHIST=0\n"
            f"__lmc_prompt() {{ {prompt}; {options}; }}\n"
            "precmd_functions=(__lmc_prompt)\n" + self.trap_setup(ctl_fd) + self.begun_setup(ctl_fd)
        )


def run_env(env: Mapping[str, str]) -> tuple[str, str, list[str]]:
    """For a run's variables: the script that saves each and exports it, the
    commands (one line) that put back what was saved, and the names no shell can set.

    A saved variable's state is ``x1`` (it was set) or ``x`` (unset); one that
    was never saved is left alone. A read-only variable (bash's ``UID``, sh's
    ``PS1``, or one the code made read-only) is neither set nor put back: an
    assignment to it would abort the whole typed line, the next run's code with
    it. A subshell tries the assignment first, where failing costs nothing.
    """
    script, restore, invalid = [], [], []
    for index, (name, value) in enumerate(env.items()):
        if not _NAME.fullmatch(name) or name.startswith("__lmc_"):
            invalid.append(name)
            continue
        state, saved, writable = f"__lmc_s{index}", f"__lmc_v{index}", f"( {name}= ) 2>/dev/null"
        script.append(
            f"if {writable}; then {state}=x${{{name}+1}} {saved}=${{{name}-}}; "
            f"export {name}={shlex.quote(value)}; else "
            f"echo 'lmc: {name} is read-only in this shell; it was not set' >&2; fi\n"
        )
        restore.append(
            f"case ${{{state}-}} in x1) {writable} && {name}=${saved};; "
            f"x) {writable} && unset {name};; esac; unset {state} {saved}; "
        )
    return "".join(script), "".join(restore), invalid
