"""The sentences a shell execution ends with when it was stopped or its shell ended."""

from __future__ import annotations

from .process import ExitInfo

__all__ = ["exit_text", "stop_phrase"]

_STOP_WORDS = {
    "timeout": "timed out",
    "interrupt": "was interrupted",
    "input": "was interrupted because its input got no answer",
}


def stop_phrase(reason: str, timeout: float | None, where: str) -> str:
    """ "Execution timed out after 2 s at line 3", and the like."""
    word = _STOP_WORDS[reason]
    if reason == "timeout" and timeout is not None:
        word += f" after {timeout:g} s"
    return f"Execution {word}{where}"


def exit_text(info: ExitInfo, where: str, outcome: str) -> str:
    """What to say when the shell ended by itself (``exit`` in the code, or a crash)."""
    if info.signal is None:
        return (
            f"The code exited the shell{where} (exit status {info.exit_code}): "
            f"{outcome}, and its state was lost."
        )
    return f"The shell died{where}: {info.description}. State lost; {outcome}."
