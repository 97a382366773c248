"""Warm round trips in every other language, each against its raw program.

Shell and JavaScript are compared with ``bash`` and ``node`` driven directly
(a PTY with a sentinel, and a bare eval loop over pipes), TypeScript with that
loop transpiling each snippet with ``transpileModule``; R with the stock
``ir`` kernel through jupyter-client's blocking client; Java with ``jshell`` on
a PTY with a sentinel prompt. A language that cannot run here is left out with
a note, not failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial

from anyio.from_thread import BlockingPortal

from lmc_runtime.computer import Computer
from lmc_runtime.config import Limits

from . import ours
from .model import LanguageTrip, Timing
from .raw import RawKernel
from .rig import Plan, alternate

__all__ = ["LANGUAGE_CASES", "LanguageCase", "language_round_trips"]

logger = logging.getLogger(__name__)


class _Raw:
    """A raw program under test: timed round trips, then closed."""

    def __init__(self, trips: Callable[[int], list[float]], close: Callable[[], None]) -> None:
        self.trips = trips
        self.close = close


def _raw_bash(timeout: float) -> _Raw:
    from .raw_shell import RawShell

    shell = RawShell(timeout=timeout)
    return _Raw(partial(shell.round_trips, timeout=timeout), shell.close)


def _raw_node(timeout: float) -> _Raw:
    from .raw_node import RawNode

    node = RawNode()
    return _Raw(partial(node.round_trips, timeout=timeout), node.close)


def _raw_ts(timeout: float) -> _Raw:
    from lmc_runtime.backends.typescript import typescript_dir

    from .raw_node import TS_PRINT_ONE, RawNode

    node = RawNode(typescript=typescript_dir())
    return _Raw(partial(node.round_trips, timeout=timeout, code=TS_PRINT_ONE), node.close)


def _raw_ir(timeout: float) -> _Raw:
    kernel = RawKernel.start(timeout=timeout * 2, kernel_name="ir")
    return _Raw(lambda n: kernel.round_trips("cat(1)", n, timeout=timeout), kernel.shutdown)


def _raw_jshell(timeout: float) -> _Raw:
    from .raw_java import RawJshell

    jshell = RawJshell(timeout=timeout * 2)
    return _Raw(partial(jshell.round_trips, timeout=timeout), jshell.close)


@dataclass(frozen=True)
class LanguageCase:
    """One language's warm round trip: its code and its raw baseline."""

    language: str
    code: str
    raw_label: str
    raw: Callable[[float], _Raw]


LANGUAGE_CASES: tuple[LanguageCase, ...] = (
    LanguageCase("shell", "echo 1", "bash on a PTY", _raw_bash),
    LanguageCase("javascript", "console.log(1)", "node, eval loop", _raw_node),
    LanguageCase(
        "typescript", "console.log(1 as number)", "node, transpileModule + eval loop", _raw_ts
    ),
    LanguageCase("r", "cat(1)", "ir kernel, jupyter-client", _raw_ir),
    LanguageCase("java", "System.out.println(1);", "jshell on a PTY", _raw_jshell),
)


def _one(
    portal: BlockingPortal, computer: Computer, plan: Plan, case: LanguageCase
) -> LanguageTrip:
    raw = case.raw(plan.timeout)
    try:
        ours_trips = partial(
            ours.round_trips, computer, case.code, timeout=plan.timeout, language=case.language
        )

        def ours_sampler(n: int) -> list[float]:
            return portal.call(ours_trips, n)

        samplers = {"raw": raw.trips, "ours": ours_sampler}
        for sampler in samplers.values():
            sampler(plan.warmup)
        samples = alternate(samplers, plan.repeat, plan.block)
    finally:
        raw.close()
    return LanguageTrip(
        case.language,
        case.code,
        case.raw_label,
        Timing.from_seconds(samples["raw"]),
        Timing.from_seconds(samples["ours"]),
    )


def language_round_trips(
    portal: BlockingPortal, plan: Plan, limits: Limits, notes: list[str]
) -> list[LanguageTrip]:
    """Each language of :data:`LANGUAGE_CASES` that runs here, ours against raw."""
    trips: list[LanguageTrip] = []
    with ExitStack() as stack:
        computer = stack.enter_context(portal.wrap_async_context_manager(Computer(limits=limits)))
        available = computer.languages
        for case in LANGUAGE_CASES:
            status = available.get(case.language)
            if status is None or not status.available:
                reason = status.reason if status is not None else "unknown language"
                notes.append(f"{case.language} left out: {reason}")
                continue
            logger.info("round trip, %s: %d each", case.language, plan.repeat)
            try:
                trips.append(_one(portal, computer, plan, case))
            except Exception as exc:  # one language's failure must not sink the report
                logger.warning("the %s round trip failed", case.language, exc_info=True)
                notes.append(f"{case.language} left out: its round trip failed: {exc}")
    return trips
