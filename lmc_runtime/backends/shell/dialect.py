"""What differs between bash, zsh and sh: how to start them and what to tell them.

Every shell gets the same contract from its init script: its prompt is the
done marker (see :mod:`.protocol`), its continuation prompt is empty, and, where
the shell has a DEBUG trap, the trap reports the current line of the cell file
to the side-channel descriptor. A cell runs as ``. CELL <STDIN`` typed at the
top level (not inside a function, so ``declare`` and ``typeset`` stay global).

User code may set ``PS1`` (a virtualenv's ``activate`` does). bash and zsh
rebuild the marker prompt in a hook that runs before every prompt: bash's
``PROMPT_COMMAND`` (read-only), zsh's ``precmd_functions`` (re-armed by each
cell's line). sh has no such hook, so there ``PS1`` and ``PS2`` are read-only.
Setting a read-only one is an error the code sees, never a prompt the runtime
waits for forever.

Job notices ("[1]+ Done ...") of a job that ends between runs belong to no
run: bash (``set -b``) and zsh print them at once, so they come as late
output; sh can only print them when the next run starts, so there they are
dropped (the job's own output still comes).
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from .protocol import marker_prefix

__all__ = ["BashDialect", "Dialect", "ShDialect", "ZshDialect"]


def _marker(token: str, status: str) -> str:
    """The prompt text: the marker with ``status`` (a shell expansion) inside."""
    return marker_prefix(token).decode("ascii") + status + "\x07"


class Dialect:
    """One shell's startup and command syntax; subclasses override the differences."""

    program = "sh"
    #: Whether the shell can report the active line through a DEBUG trap.
    tracks_lines = False

    def find(self) -> str | None:
        """The program's path on PATH, or None."""
        return shutil.which(self.program)

    def missing_reason(self) -> str:
        return f"{self.program} is not installed (apt-get install {self.program})"

    def argv(self, path: str) -> list[str]:
        """The command line of an interactive shell without rc files or line editing."""
        return [path, "-i"]

    def init_script(self, token: str, ctl_fd: int) -> str:
        """Shell code run once at start, before the first cell."""
        return f"PS1='{_marker(token, '$?')}'\nPS2=''\nPS4='+ '\nunset HISTFILE\nreadonly PS1 PS2\n"

    def run_line(self, run: int, cell: Path, stdin: str, track: bool) -> str:
        """The one line typed into the PTY to run cell number ``run``."""
        return f". {shlex.quote(str(cell))} <{shlex.quote(stdin)}\n"


class ShDialect(Dialect):
    """POSIX sh (dash on Debian): no DEBUG trap, so only the final active line."""

    def run_line(self, run: int, cell: Path, stdin: str, track: bool) -> str:
        return "jobs >/dev/null 2>&1; " + super().run_line(run, cell, stdin, track)


class _Traced(Dialect):
    """A shell with a DEBUG trap: its run line tells the trap which cell and run to report."""

    tracks_lines = True
    #: What the run line sets first (zsh re-arms its prompt hook there).
    rearm = ""

    def run_line(self, run: int, cell: Path, stdin: str, track: bool) -> str:
        # The trap is set only while tracking: it costs every command some time.
        trap = 'trap "$__lmc_trap" DEBUG' if track else "trap - DEBUG"
        return (
            f"{self.rearm}__lmc_n={run} __lmc_l='' __lmc_f={shlex.quote(str(cell))}; {trap}; "
            + super().run_line(run, cell, stdin, track)
        )


class BashDialect(_Traced):
    """bash, interactive with job control, ``--noediting``, a DEBUG trap under ``set -T``."""

    program = "bash"

    def argv(self, path: str) -> list[str]:
        return [path, "--noprofile", "--norc", "--noediting", "-i"]

    def init_script(self, token: str, ctl_fd: int) -> str:
        report = (
            '[[ $LINENO == "$__lmc_l" ]] || { [[ ${BASH_SOURCE-} == "$__lmc_f" ]] && '
            f'{{ __lmc_l=$LINENO; printf \'%s %s\\n\' "$__lmc_n" "$LINENO" >&{ctl_fd} '
            "2>/dev/null || :; }; }"
        )
        # Before every prompt: keep $?, then the marker prompt, whatever the code set.
        prompt = (
            "__lmc_prompt() { __lmc_s=$?; "
            f"PS1={shlex.quote(marker_prefix(token).decode('ascii'))}\"$__lmc_s\"$'\\a'; "
            "PS0=''; PS2=''; }\n"
        )
        return (
            "PS2=''\nPS4='+ '\nunset HISTFILE\n"
            + prompt
            + "PROMPT_COMMAND=__lmc_prompt\nreadonly PROMPT_COMMAND\nset +o history\nset -T -b\n"
            + f"__lmc_n=0 __lmc_f='' __lmc_l='' __lmc_trap={shlex.quote(report)}\n"
        )


class ZshDialect(_Traced):
    """zsh without rc files or ZLE; its DEBUG trap sees the sourced file's line numbers."""

    program = "zsh"
    rearm = "precmd_functions=(__lmc_prompt) "

    def argv(self, path: str) -> list[str]:
        return [path, "-f", "+Z", "-i"]

    def init_script(self, token: str, ctl_fd: int) -> str:
        report = (
            '[[ $LINENO == "$__lmc_l" ]] || { [[ ${funcsourcetrace[1]-} == "$__lmc_f:0" ]] && '
            f'{{ __lmc_l=$LINENO; print -r -- "$__lmc_n $LINENO" >&{ctl_fd} '
            "2>/dev/null || :; }; }"
        )
        # Before every prompt: the marker prompt and options, whatever the code set.
        prompt = (
            "__lmc_prompt() { "
            f"PROMPT='{_marker(token, '%?')}'; RPROMPT=''; PS2=''; RPS2=''; "
            "unsetopt PROMPT_SP PROMPT_CR PROMPT_SUBST; setopt PROMPT_PERCENT; }\n"
        )
        return (
            f"PROMPT='{_marker(token, '%?')}'\nRPROMPT=''\nPS2=''\nRPS2=''\nPS4='+ '\n"
            "unsetopt PROMPT_SP PROMPT_CR PROMPT_SUBST BEEP\nsetopt PROMPT_PERCENT\n"
            "unset HISTFILE\nSAVEHIST=0\n"
            + prompt
            + "precmd_functions=(__lmc_prompt)\n"
            + f"__lmc_n=0 __lmc_f='' __lmc_l='' __lmc_trap={shlex.quote(report)}\n"
        )
