"""Where a secret's value could have leaked to: a process's memory (read from
the host, ``/proc/<pid>/mem``) and the files under a folder."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

_REGION = re.compile(r"([0-9a-f]+)-([0-9a-f]+) r")


def _needles(needles: Iterable[bytes]) -> tuple[bytes, ...]:
    if isinstance(needles, bytes):  # its items would be ints: give a list
        raise TypeError("give the needles as a list of bytes")
    return tuple(needles)


def _regions(maps: Iterable[str], mem: BinaryIO) -> Iterable[bytes]:
    for line in maps:
        match = _REGION.match(line)
        if match is None or "[vvar]" in line or "[vsyscall]" in line:
            continue
        start, end = int(match.group(1), 16), int(match.group(2), 16)
        try:
            mem.seek(start)
            yield mem.read(end - start)
        except (OSError, OverflowError, ValueError):  # an unreadable region
            continue


def memory_holds(pid: int, needles: Iterable[bytes]) -> set[bytes]:
    """Which of ``needles`` are in the readable memory of ``pid`` (none if it ended)."""
    needles, found = _needles(needles), set[bytes]()
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for data in _regions(maps.read().splitlines(), mem):
                found.update(needle for needle in needles if needle in data)
    except OSError:
        pass
    return found


def files_holding(folder: Path, needles: Iterable[bytes]) -> list[str]:
    """The regular files under ``folder`` holding one of ``needles``."""
    needles, hits = _needles(needles), list[str]()
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as file:
                    data = file.read()
            except OSError:
                continue
            if any(needle in data for needle in needles):
                hits.append(path)
    return hits


def pids_of_uids(uids: set[int]) -> list[int]:
    """The processes whose owner is one of ``uids``."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid in uids:
                    pids.append(int(entry))
            except OSError:
                continue
    return pids
