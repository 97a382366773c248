"""The reaper of one ``lmc serve``'s sessions (see ``reaper.py``).

Run as ``python -I -S _reaper.py DATA_DIR PATH...``, in a session of its own,
with its stdin the read end of a pipe whose write end only the server holds.
It waits, importing nothing, for the pipe to end: the server closed it once its
sessions were closed, or died (the kernel closes a dead process's descriptors).
Then, with ``PATH...`` (the server's package and import path) to import from,
it releases what sessions the server left, if any (``reaper.reap``), and exits.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["main"]


def _wait_for_the_end() -> None:
    while True:
        try:
            if not os.read(0, 1 << 16):
                return
        except InterruptedError:
            continue
        except OSError:
            return


def main(argv: list[str]) -> int:
    # Signals meant for the server's terminal or group are not for this process.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    data_dir = argv[1]
    _wait_for_the_end()
    try:
        if not os.listdir(os.path.join(data_dir, "sessions")):
            return 0  # the usual end: the server closed its sessions
    except OSError:
        return 0
    sys.path[:0] = argv[2:]
    import logging
    from pathlib import Path

    from lmc_runtime.service.reaper import reap

    logging.basicConfig(format="lmc serve: %(levelname)s %(name)s: %(message)s")
    released = reap(Path(data_dir))
    if released:
        logging.getLogger("lmc_runtime.service.reaper").warning(
            "the server of %s ended without a shutdown: released the mounts and "
            "cgroups of its %d sessions (%s); their folders are the next start's",
            data_dir,
            len(released),
            ", ".join(released),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
