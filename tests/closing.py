"""Factory fixtures whose every product is closed when the test ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, Protocol, TypeVar

__all__ = ["closing_all"]


class _Closes(Protocol):
    def close(self) -> None: ...


P = ParamSpec("P")
C = TypeVar("C", bound=_Closes)


@contextmanager
def closing_all(make: Callable[P, C]) -> Iterator[Callable[P, C]]:
    """``make``, kept track of: on leaving, everything it made is closed, in order."""
    made: list[C] = []

    def tracked(*args: P.args, **kwargs: P.kwargs) -> C:
        item = make(*args, **kwargs)
        made.append(item)
        return item

    try:
        yield tracked
    finally:
        for item in made:
            item.close()
