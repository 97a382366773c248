"""The network namespace of a sandboxed command that may use the network.

Run as ``python -I -S _netns.py [options] -- bwrap ... --share-net ...`` in
place of bwrap itself (stdlib only, like ``_exec.py``). It forks; the child
unshares a network namespace (and, when not root, a user namespace in which it
is root), installs the firewall there, then waits. This process stays in the
host's namespace and starts ``slirp4netns`` on the child's namespace; once
slirp4netns reports the interface configured, the child becomes bwrap, which
shares that namespace (its own user namespace is nested under it, so the code
inside has no capability over the namespace, its routes or its firewall).

The firewall rejects, inside the namespace, every packet to the host's own
addresses, loopback (except the namespace's own), link-local addresses and
slirp4netns's alias for the host; IPv6 reaches only the namespace's loopback.
Traffic to anything else leaves through slirp4netns, whose sockets live in the
host's namespace. Abstract unix sockets belong to a network namespace: the
host's are out of reach.

This process then stays the parent of bwrap: it forwards SIGTERM, SIGHUP,
SIGQUIT, SIGUSR1 and SIGUSR2 to it, ends with it the way it ended, and stops
slirp4netns (which also ends by itself when this process is gone: its exit fd
closes). Options:

``--slirp4netns PATH``, ``--iptables-restore PATH``, ``--ip6tables-restore PATH``
    the programs (absolute paths: the environment has no PATH to search).
``--block CIDR``
    an IPv4 address or network to reject (repeatable).
``--bwrap-env``
    hand bwrap the descriptors the exec wrapper wrote before the session's
    file size limit applied (see ``_handoff.py``): the environment, for the
    wrapper inside the sandbox, and the seccomp filter (``--seccomp FD``). They
    are inherited by bwrap alone, not by the programs that install the firewall.
``--timeout SECONDS``
    how long slirp4netns may take to configure the interface (default 30).
"""

import contextlib
import ctypes
import importlib.util
import os
import select
import signal
import sys
from types import ModuleType

__all__: list[str] = []

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def _fail(text: str) -> None:
    sys.stderr.write(f"lmc sandbox: network: {text}\n")
    sys.stderr.flush()
    os._exit(127)


def _rules4(blocked: list[str]) -> str:
    lines = ["*filter", ":OUTPUT ACCEPT [0:0]", "-A OUTPUT -o lo -j ACCEPT"]
    lines += [f"-A OUTPUT -d {cidr} -j REJECT" for cidr in blocked]
    return "\n".join([*lines, "COMMIT", ""])


_RULES6 = "*filter\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -o lo -j ACCEPT\n-A OUTPUT -j REJECT\nCOMMIT\n"


def _restore(program: str, rules: str) -> None:
    """Load ``rules`` with ``program`` (iptables-restore) in this namespace."""
    read, write = os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, read, 0),
        (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
    ]
    try:
        pid = os.posix_spawn(program, [program], {}, file_actions=actions)
    except OSError as exc:
        _fail(f"cannot run {program}: {exc}")
    os.close(read)
    os.write(write, rules.encode("ascii"))
    os.close(write)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        _fail(f"{program} could not install the firewall (status {status})")


def _enter_namespace() -> None:
    """Unshare the network namespace (and a user namespace when not root)."""
    uid, gid = os.geteuid(), os.getegid()
    flags = _CLONE_NEWNET if uid == 0 else _CLONE_NEWNET | _CLONE_NEWUSER
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        _fail(f"unshare: {os.strerror(ctypes.get_errno())}")
    if uid != 0:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"0 {uid} 1"),
            ("gid_map", f"0 {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w", encoding="ascii") as file:
                file.write(text)


def _child(
    options: dict[str, list[str]],
    ready: int,
    go: int,
    argv: list[str],
    env: dict[str, str],
    wrapper: ModuleType,
) -> None:
    try:
        _enter_namespace()
        _restore(options["--iptables-restore"][0], _rules4(options["--block"]))
        _restore(options["--ip6tables-restore"][0], _RULES6)
    except OSError as exc:
        _fail(f"cannot set up the namespace: {exc}")
    os.write(ready, b"1")
    os.close(ready)
    if os.read(go, 1) != b"1":  # the parent failed or is gone
        os._exit(127)
    os.close(go)
    exec_bwrap("--bwrap-env" in options, argv, env, wrapper)


def exec_bwrap(bwrap_env: bool, argv: list[str], env: dict[str, str], wrapper: ModuleType) -> None:
    """Become bwrap (``argv``), handing it the descriptors the exec wrapper wrote
    when ``bwrap_env`` (see ``--bwrap-env``)."""
    if bwrap_env:
        handoff = wrapper._sibling("_handoff")
        try:
            seccomp = int(env.pop(handoff.SECCOMP_FD))
            os.set_inheritable(seccomp, True)
            os.set_inheritable(int(env[handoff.ENV_FD]), True)
            if handoff.ARGS_FD in env:  # bwrap's options (its --args)
                os.set_inheritable(int(env.pop(handoff.ARGS_FD)), True)
        except (KeyError, ValueError, OSError) as exc:
            _fail(f"no environment and seccomp filter handed over: {exc}")
        argv = [argv[0], "--seccomp", str(seccomp), *argv[1:]]
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        _fail(f"cannot run {argv[0]}: {exc}")


def _start_slirp(program: str, child: int, ready: int, alive: int) -> int:
    argv = [
        program,
        "--configure",
        "--mtu=65520",
        "--disable-host-loopback",
        "--enable-seccomp",
        f"--ready-fd={ready}",
        f"--exit-fd={alive}",
    ]
    if os.geteuid() == 0:
        # Its own mount namespace, no capabilities left (it needs root to make one).
        argv.append("--enable-sandbox")
    else:
        argv.append(f"--userns-path=/proc/{child}/ns/user")
    argv += ["--netns-type=path", f"/proc/{child}/ns/net", "tap0"]
    quiet = [
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0),
    ]
    for fd in (ready, alive):
        os.set_inheritable(fd, True)
    try:
        return os.posix_spawn(program, argv, {}, file_actions=quiet)
    finally:
        for fd in (ready, alive):
            os.set_inheritable(fd, False)


def _wait_readable(fd: int, timeout: float) -> bytes:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return os.read(fd, 1) if poller.poll(max(0, int(timeout * 1000))) else b""


def parse(
    args: list[str], program: str, required: tuple[str, ...]
) -> tuple[dict[str, list[str]], list[str]]:
    """``[options] -- bwrap ...`` (this helper's and ``_egressns.py``'s): each
    option's values and the command. ``--bwrap-env`` takes no value; ``--block``
    may be given more than once; ``--timeout`` is 30 unless given."""
    if "--" not in args:
        _fail(f"usage: {program} [options] -- bwrap ...")
    split = args.index("--")
    options: dict[str, list[str]] = {"--block": [], "--timeout": ["30"]}
    flags, argv = args[:split], args[split + 1 :]
    index = 0
    while index < len(flags):
        if flags[index] == "--bwrap-env":
            options["--bwrap-env"] = []
            index += 1
            continue
        if index + 1 >= len(flags):
            _fail(f"{flags[index]} needs a value")
        if flags[index] == "--block":
            options["--block"].append(flags[index + 1])
        else:
            options[flags[index]] = [flags[index + 1]]
        index += 2
    for needed in required:
        if needed not in options:
            _fail(f"{needed} is required")
    if not argv:
        _fail("no command given")
    return options, argv


def main(args: list[str]) -> None:
    required = ("--slirp4netns", "--iptables-restore", "--ip6tables-restore")
    options, argv = parse(args, "_netns.py", required)
    wrapper = exec_wrapper()  # loaded before anything starts, so the end cannot fail
    env = bwrap_environment()
    child_ready, ready = os.pipe()
    go, parent_go = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(child_ready)
        os.close(parent_go)
        _child(options, ready, go, argv, env, wrapper)
    os.close(ready)
    os.close(go)
    if os.read(child_ready, 1) != b"1":  # the child failed and said why
        _, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF or 127)
    slirp_ready, slirp_says = os.pipe()
    alive, keep_alive = os.pipe()
    slirp = _start_slirp(options["--slirp4netns"][0], child, slirp_says, alive)
    os.close(slirp_says)
    os.close(alive)
    if _wait_readable(slirp_ready, float(options["--timeout"][0])) != b"1":
        os.kill(slirp, signal.SIGKILL)
        os.kill(child, signal.SIGKILL)
        _fail("slirp4netns did not configure the namespace")
    os.close(slirp_ready)
    for signum in _FORWARDED:
        signal.signal(signum, lambda number, _frame: os.kill(child, number))
    os.write(parent_go, b"1")
    os.close(parent_go)
    _, status = os.waitpid(child, 0)
    os.kill(slirp, signal.SIGKILL)
    os.waitpid(slirp, 0)
    os.close(keep_alive)
    wrapper.exit_like(status)


def bwrap_environment() -> dict[str, str]:
    """This process's environment, with the descriptors it names for bwrap kept
    from the programs started before it (they are inherited by bwrap alone)."""
    env = dict(os.environ)
    names = ("LMC_SANDBOX_ENV_FD", "LMC_SANDBOX_SECCOMP_FD", "LMC_SANDBOX_ARGS_FD")
    for name in names:
        if env.get(name, "").isdigit():
            with contextlib.suppress(OSError):
                os.set_inheritable(int(env[name]), False)
    return env


def exec_wrapper() -> ModuleType:
    """The exec wrapper beside this file (run with ``python -I``, so not importable
    by name): it knows how to end the way a child ended."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_exec.py")
    spec = importlib.util.spec_from_file_location("_lmc_exec_wrapper", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    main(sys.argv[1:])
