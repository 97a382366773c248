"""The code a kernel runs, copied together in the fork server (``_zygote.py``).

:func:`gather` gives each function whose code a kernel runs (named by the probe,
``_hot.py``, or by the names kept from an earlier probe, ``_hotcache.py``) a
copy of its code object (``CodeType.replace``): the copies are made one after
another, so they lie together, away from the code no kernel runs, and a kernel
that runs them copies their pages alone. The code the fork server compiled of
the kernel's own files (``_lmc_precompiled.code``) is copied so too, with the
code of the functions they define. The originals are kept
(``_lmc_precompiled.gathered_from``): freed, they would leave holes that a
kernel's new objects fill, copying those pages instead.

A code object is named, across processes, by its file, first line, qualified
name and a checksum of its bytecode, names and variables' names (:func:`named`, :func:`found`):
code made by ``exec`` shares a file name and lines. A name that two code
objects still share names both, which only copies more.

Stdlib only; imported by the fork server by its file name.
"""

import gc
import types
import zlib
from collections.abc import Iterable, Iterator

__all__ = ["Name", "found", "functions", "gather", "named"]

#: A code object's name: its file, first line, qualified name and checksum.
Name = tuple[str, int, str, int]


def _sum(code: types.CodeType) -> int:
    names = "\0".join((*code.co_names, "", *code.co_varnames))
    return zlib.crc32(names.encode(errors="surrogateescape"), zlib.crc32(code.co_code))


def _name(code: types.CodeType) -> Name:
    return (code.co_filename, code.co_firstlineno, code.co_qualname, _sum(code))


def _codes(
    functions: Iterable[object], compiled: dict[str, tuple[bytes, object]]
) -> Iterator[types.CodeType]:
    """Every code object of ``functions`` and ``compiled``, and the code they hold."""
    seen: set[int] = set()
    stack = [f.__code__ for f in functions if type(f) is types.FunctionType]
    stack += [code for _, code in compiled.values() if isinstance(code, types.CodeType)]
    while stack:
        code = stack.pop()
        if id(code) in seen:
            continue
        seen.add(id(code))
        yield code
        stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]


def named(
    ran: set[int], functions: Iterable[object], compiled: dict[str, tuple[bytes, object]]
) -> set[Name]:
    """The names of the code objects of ``functions`` and ``compiled`` whose ids
    are in ``ran``."""
    return {_name(code) for code in _codes(functions, compiled) if id(code) in ran}


def found(
    names: set[Name], functions: Iterable[object], compiled: dict[str, tuple[bytes, object]]
) -> set[int]:
    """The ids of the code objects of ``functions`` and ``compiled`` named in
    ``names``."""
    sums: dict[tuple[str, int, str], set[int]] = {}
    for file, line, qualname, checksum in names:
        sums.setdefault((file, line, qualname), set()).add(checksum)
    return {
        id(code)
        for code in _codes(functions, compiled)
        if _sum(code) in sums.get((code.co_filename, code.co_firstlineno, code.co_qualname), ())
    }


def gather(
    ran: set[int], functions: Iterable[object], compiled: dict[str, tuple[bytes, object]]
) -> list[types.CodeType]:
    """Give each of ``functions`` whose code ran (its id in ``ran``), or holds code
    that ran (a nested function's, a comprehension's), a copy of its code, and so
    each code in ``compiled`` (``path: (source, code)``); a copy holds the copies
    of the code it holds that ran, so that a function made later (a closure) is
    made of the same code as one made before. The copies are made one after
    another. The originals, to be kept."""
    originals: list[types.CodeType] = []
    copies: dict[int, types.CodeType] = {}
    hot: dict[int, bool] = {}

    def holds_hot(code: types.CodeType) -> bool:
        found = hot.get(id(code))
        if found is None:
            hot[id(code)] = False  # a code cannot hold itself; this ends any cycle
            found = hot[id(code)] = id(code) in ran or any(
                holds_hot(c) for c in code.co_consts if isinstance(c, types.CodeType)
            )
        return found

    def copied(code: types.CodeType) -> types.CodeType:
        done = copies.get(id(code))
        if done is not None:
            return done
        consts = tuple(
            copied(c) if isinstance(c, types.CodeType) and holds_hot(c) else c
            for c in code.co_consts
        )
        originals.append(code)
        done = copies[id(code)] = code.replace(co_consts=consts)
        return done

    for function in functions:
        if type(function) is types.FunctionType and holds_hot(function.__code__):
            function.__code__ = copied(function.__code__)
    for path, (source, code) in list(compiled.items()):
        if isinstance(code, types.CodeType) and holds_hot(code):
            compiled[path] = (source, copied(code))
    return originals


def functions() -> list[types.FunctionType]:
    """Every function this process holds (its collector's, before a freeze)."""
    return [o for o in gc.get_objects() if type(o) is types.FunctionType]
