"""The exec wrapper every sandboxed process starts through.

Run as ``python -I -S _exec.py [options] -- argv``: it imports nothing from the
package (so it starts in a few milliseconds, inside or outside the sandbox),
applies its options to itself, then replaces itself with ``argv``. Options:

``--cgroup FILE``
    write this process's pid into FILE (a ``cgroup.procs`` file): it and
    everything it starts are then accounted and limited by that cgroup.
``--rlimit NAME=VALUE``
    set the soft and hard limit ``NAME`` (``as``, ``data``, ``fsize``, ``cpu``,
    ``nproc``, ``core``) to VALUE.
``--sigint ignore|default``
    the SIGINT disposition ``argv`` starts with. The sandbox's own processes
    ignore SIGINT, so an interrupt sent to the process group reaches only the
    code inside, which starts with the default disposition again.
``--unset NAME``
    remove NAME from the environment.
``--bwrap-env``
    ``argv`` is a bwrap command line: give the environment to the sandboxed
    command as ``--clearenv --setenv NAME VALUE ...`` and start bwrap itself
    with an empty environment.
"""

import os
import resource
import signal
import sys

__all__: list[str] = []

_RLIMITS = {
    "as": resource.RLIMIT_AS,
    "data": resource.RLIMIT_DATA,
    "fsize": resource.RLIMIT_FSIZE,
    "cpu": resource.RLIMIT_CPU,
    "nproc": resource.RLIMIT_NPROC,
    "core": resource.RLIMIT_CORE,
}


def _fail(text: str) -> None:
    sys.stderr.write(f"lmc sandbox: {text}\n")
    sys.stderr.flush()
    os._exit(127)


def main(args: list[str]) -> None:
    if "--" not in args:
        _fail("usage: _exec.py [options] -- argv")
    split = args.index("--")
    options, argv = args[:split], args[split + 1 :]
    if not argv:
        _fail("no command given")
    env = dict(os.environ)
    bwrap_env = False
    index = 0
    while index < len(options):
        option = options[index]
        if option == "--bwrap-env":
            bwrap_env = True
            index += 1
            continue
        if index + 1 >= len(options):
            _fail(f"{option} needs a value")
        value = options[index + 1]
        index += 2
        try:
            if option == "--cgroup":
                with open(value, "w", encoding="ascii") as procs:
                    procs.write(str(os.getpid()))
            elif option == "--rlimit":
                name, _, number = value.partition("=")
                limit = int(number)
                resource.setrlimit(_RLIMITS[name], (limit, limit))
            elif option == "--sigint":
                handler = signal.SIG_IGN if value == "ignore" else signal.SIG_DFL
                signal.signal(signal.SIGINT, handler)
            elif option == "--unset":
                env.pop(value, None)
            else:
                _fail(f"unknown option {option}")
        except (OSError, ValueError, KeyError) as exc:
            _fail(f"{option} {value}: {exc}")
    if bwrap_env:
        extra = ["--clearenv"]
        for name, value in env.items():
            extra += ["--setenv", name, value]
        argv = [argv[0], *extra, *argv[1:]]
        env = {}
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        _fail(f"cannot run {argv[0]}: {exc}")


if __name__ == "__main__":
    main(sys.argv[1:])
