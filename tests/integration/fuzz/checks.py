"""What every reply to fuzzed input must be, the Hypothesis profiles, and the tally
that the campaign (:mod:`.campaign`) reads.

Profiles: ``fuzz-ci`` (derandomized, no example database, no deadline; each test
sets its own modest number of examples) is the default; ``campaign`` (random)
is chosen with ``LMC_FUZZ_PROFILE=campaign``, and ``LMC_FUZZ_EXAMPLES=N`` then
gives every test ``N`` examples. With ``LMC_FUZZ_TALLY=path`` every input tried
is counted in that file (one JSON line each); under the campaign a failing input
is counted there instead of failing its test, so that one run counts them all.
"""

from __future__ import annotations

import json
import os
import reprlib
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import psutil
from hypothesis import HealthCheck, settings

from lmc_runtime import Message
from lmc_runtime.messages import parse_message

from .strategies import Case, Wire

__all__ = [
    "GUARD",
    "NOT_UNDERSTOOD",
    "Tally",
    "answers",
    "check_dicts",
    "check_replies",
    "descendants",
    "fuzz_settings",
    "new_processes",
    "servers",
]

#: Bounds a wait that only a hang comes near.
GUARD = 60.0

#: The statuses of a reply that refuses a message.
NOT_UNDERSTOOD = frozenset({"malformed", "not_understood", "unavailable"})

_SLOW = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
    HealthCheck.function_scoped_fixture,
    HealthCheck.filter_too_much,
]
settings.register_profile(
    "fuzz-ci", derandomize=True, database=None, deadline=None, suppress_health_check=_SLOW
)
settings.register_profile(
    "campaign", derandomize=False, database=None, deadline=None, suppress_health_check=_SLOW
)


def campaign() -> bool:
    """Whether the campaign's profile runs."""
    return os.environ.get("LMC_FUZZ_PROFILE") == "campaign"


def fuzz_settings(ci_examples: int, campaign_share: float = 1.0) -> settings:
    """The settings of a fuzz test: ``ci_examples`` examples in CI; under the
    campaign, ``campaign_share`` of its ``LMC_FUZZ_EXAMPLES`` (a test whose
    examples each start a process takes a share)."""
    if campaign():
        examples = int(os.environ.get("LMC_FUZZ_EXAMPLES", "200"))
        share = max(1, round(examples * campaign_share))
        return settings(settings.get_profile("campaign"), max_examples=share)
    return settings(settings.get_profile("fuzz-ci"), max_examples=ci_examples)


class Tally:
    """Counts the inputs one entry point was given, and those whose reply was wrong."""

    def __init__(self, entry: str) -> None:
        self.entry = entry
        self._path = os.environ.get("LMC_FUZZ_TALLY")

    def _write(self, **record: Any) -> None:
        if self._path is None:
            return
        with open(self._path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"entry": self.entry, **record}) + "\n")

    @contextmanager
    def trying(self, label: str, shown: object) -> Iterator[None]:
        """Count one input; under the campaign, a failed check is counted, not raised."""
        try:
            yield
        except Exception as exc:  # under the campaign, a hang or a crash is counted too
            if not isinstance(exc, AssertionError) and not campaign():
                raise
            reason = f"{type(exc).__name__}: {exc}"[:500]
            self._write(label=label, failed=True, reason=reason, input=_short(shown))
            if not campaign():
                raise
        else:
            self._write(label=label, failed=False)


def _short(value: object) -> str:
    shorter = reprlib.Repr()
    shorter.maxstring = shorter.maxother = shorter.maxlong = 200
    try:
        return shorter.repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__} that has no short repr>"


def check_replies(replies: list[Message], expect: Case | Wire) -> None:
    """``replies`` are one valid answer to ``expect``'s input: exactly one
    not-understood reply, or a run of computer messages whose last, and only
    last, is the final ``active_line`` null with a status."""
    assert replies, "no reply at all"
    for reply in replies:
        assert reply.role == "computer", reply
        json.dumps(reply.to_dict())  # every reply can be written as JSON
    first = replies[0]
    refused = len(replies) == 1 and first.format == "output" and first.status in NOT_UNDERSTOOD
    if refused:
        assert str(first.content).startswith("[lmc] not understood:"), first
        assert expect.expect != "run", f"a runnable message was refused: {first.content!r}"
        return
    assert expect.expect in ("run", "any"), f"ran what must be refused: {replies!r:.300}"
    finals = [m for m in replies if m.is_final]
    assert finals == [replies[-1]], f"not one final message, at the end: {replies!r:.300}"
    assert isinstance(replies[-1].status, str), replies[-1]
    if expect.expect == "run":
        assert replies[-1].status == "ok", replies[-1]
        output = "".join(str(m.content) for m in replies if m.format == "output")
        assert output == expect.output, (output[:300], expect.output)


def answers(messages: list[Message]) -> list[list[Message]]:
    """``messages`` as answers: each refusal alone, each run up to its final."""
    groups: list[list[Message]] = []
    run: list[Message] = []
    for message in messages:
        if not run and message.format == "output" and message.status in NOT_UNDERSTOOD:
            groups.append([message])
            continue
        run.append(message)
        if message.is_final:
            groups.append(run)
            run = []
    if run:
        groups.append(run)
    return groups


def check_dicts(lines: Iterable[Any], expect: Case | Wire) -> None:
    """As :func:`check_replies`, for replies that came over a wire as JSON."""
    check_replies([parse_message(line) for line in lines], expect)


def new_processes(before: set[int], root: int, apart: set[int] | None = None) -> set[int]:
    """The processes under ``root`` now (bounded wait for leftovers to end) that were
    not there ``before``: what a batch left behind. Those under a process in
    ``apart`` (another fixture's server, which may start processes of its own)
    are not counted."""
    deadline = time.monotonic() + 10
    while True:
        left = {pid for pid in descendants(root) - before if not _under(pid, apart or set())}
        if not left or time.monotonic() > deadline:
            return left
        psutil.wait_procs(_processes(left), 0.2)


def _under(pid: int, apart: set[int]) -> bool:
    try:
        return any(parent.pid in apart for parent in psutil.Process(pid).parents())
    except psutil.NoSuchProcess:
        return False


def servers(pids: set[int]) -> set[int]:
    """Those of ``pids`` that are lmc's own servers (``lmc serve``, ``lmc mcp``)
    started by other tests' fixtures."""
    found = set()
    for process in _processes(pids):
        try:
            command = " ".join(process.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if "lmc_runtime serve" in command or "lmc_runtime mcp" in command:
            found.add(process.pid)
    return found


def _processes(pids: set[int]) -> list[psutil.Process]:
    found = []
    for pid in pids:
        try:
            found.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
    return found


def descendants(root: int) -> set[int]:
    """The pids of every process under ``root``."""
    return {child.pid for child in _descendants(root)}


def _descendants(root: int) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process(root).children(recursive=True) if _alive(p)]
    except psutil.NoSuchProcess:
        return []


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
