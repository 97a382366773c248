"""Java: each session is one JVM running ``kernels/lmc-java/LmcJava.java`` on the JShell API.

The runner speaks the same protocol as node's (:mod:`.core.wire`), so the process
is the core's :class:`~.core.runner.RunnerInterpreter` and a run is a
:class:`~.core.runs.RunnerExecution`. What is Java's own: how the runner is
built (``javac``, by ``lmc setup``), how it is started, what its end means, and
the runner's word that the code waits for a line of input.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from .. import replies
from ..replies import Status
from .base import Availability, SessionSettings
from .core import Gone, Output, SupervisedBackend
from .core.runner import RunnerInterpreter
from .core.runs import RunnerExecution
from .core.wire import Reads
from .inputs import ask_input
from .kernelspecs import kernels_dir

__all__ = ["JAVA_FLAGS", "JavaBackend", "JavaExecution", "build_runner", "runner_build"]

#: C1 alone halves the start on small machines; the serial collector keeps threads
#: few; ``java.util`` is opened for the runner's per-run environment; UTF-8 everywhere.
JAVA_FLAGS = (
    *("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true"),
    *("--add-opens=java.base/java.util=ALL-UNNAMED", "-Dfile.encoding=UTF-8"),
    *("-Dsun.stdout.encoding=UTF-8", "-Dsun.stderr.encoding=UTF-8"),
)
_MAIN = "LmcJava"
_JAR = "lmc-java.jar"
_ARCHIVE = "lmc-java.jsa"
#: A class-data archive that does not fit this JVM is skipped (and one is made) without a word.
_ARCHIVE_FLAGS = ("-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")
_INSTALL = "apt-get install default-jdk-headless, or run `lmc setup`"


def _source() -> Path:
    return kernels_dir() / "lmc-java" / f"{_MAIN}.java"


def runner_build() -> Path:
    """Where the runner for this source is (or will be) built: ``lmc-java.jar``, and the
    class-data archive of what a session loads, ``lmc-java.jsa``, if one could be made."""
    digest = hashlib.sha256(_source().read_bytes()).hexdigest()[:16]
    return _source().parent / "build" / digest


def build_runner(say: Callable[[str], None]) -> bool:
    """Compile the runner with ``javac`` unless it is built; True when it is after."""
    target = runner_build()
    if not (target / _JAR).is_file():
        try:
            problem = _compile(target)
        except OSError as exc:  # a folder this user may not write, say
            problem = f"the runner could not be built in {target.parent}: {exc}"
        if problem is not None:
            say(f"lmc setup: Java stays unavailable: {problem}")
            return False
        say("lmc setup: built the Java runner")
    else:
        say("lmc setup: the Java runner is built")
    if not (target / _ARCHIVE).is_file():
        _record_archive(target, say)
    return True


def _compile(target: Path) -> str | None:
    """Build the runner's jar into ``target``; why not, if it could not be."""
    javac = shutil.which("javac")
    if javac is None:
        return f"javac is missing; {_INSTALL}"
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        classes = scratch / "classes"
        argv = [javac, "-nowarn", "-d", str(classes), str(_source())]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"javac failed:\n{done.stderr.strip()}"
        with zipfile.ZipFile(scratch / _JAR, "w", zipfile.ZIP_DEFLATED) as jar:
            for path in sorted(classes.iterdir()):
                jar.write(path, path.name)
        shutil.rmtree(classes)
        scratch.chmod(0o755)  # sandboxes run as other users
        (scratch / _JAR).chmod(0o644)
        with contextlib.suppress(OSError):  # else built meanwhile by another setup
            scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return None


def _record_archive(target: Path, say: Callable[[str], None]) -> None:
    """Run the runner's warm-up once, recording the classes it loads: sessions then map
    them from the archive instead of loading them (a third of a session's start)."""
    java = shutil.which("java") or "java"
    part = target / f".{_ARCHIVE}.{os.getpid()}"
    argv = [java, *JAVA_FLAGS, f"-XX:ArchiveClassesAtExit={part}", *_ARCHIVE_FLAGS]
    argv += ["-cp", str(target / _JAR), _MAIN, "--warm"]
    try:
        subprocess.run(argv, capture_output=True, timeout=120, check=True)
        part.chmod(0o644)
        part.rename(target / _ARCHIVE)
    except (OSError, subprocess.SubprocessError) as exc:
        part.unlink(missing_ok=True)
        say(f"lmc setup: Java sessions start without a class-data archive ({exc})")


class JavaRunner(RunnerInterpreter):
    """The JVM: an exit code of its own is the code's ``System.exit``."""

    def gone(self, code: int | None, announced: int | None) -> Gone:
        if code is not None and code >= 0:
            return Gone.exited(f"called System.exit({code})", code)
        return super().gone(code, announced)


class JavaExecution(RunnerExecution):
    """A run on the JVM: a read the runner says waits is answered by the input callback."""

    async def handle(self, item: Any) -> AsyncIterator[Any]:
        callback, stdin = self.options.on_input, self.stdin
        if not isinstance(item, Reads) or callback is None or stdin is None or stdin.closed:
            return
        prompt = self.route.tail
        value, failure = await ask_input(self.options, prompt)
        if value is not None:
            line = value.splitlines()[0] if value else ""
            try:
                stdin.answer(line)
            except (OSError, ValueError) as exc:
                failure = f"the answer could not be written ({exc})"
            else:
                yield Output(line + "\n")
                return
        await self.request_stop("input")  # the stop closes stdin: the read ends
        text = f"input({prompt!r}) could not be answered: {failure}"
        yield replies.notice(text, Status.ERROR, self.reply_to)


class JavaBackend(SupervisedBackend):
    """Sessions on the ``java`` found on PATH."""

    who = "java"
    execution = JavaExecution

    def availability(self) -> Availability:
        if shutil.which("java") is None:
            return Availability.no(f"Java is not installed (no `java` on PATH): {_INSTALL}")
        if not (runner_build() / _JAR).is_file():
            return Availability.no("the Java runner is not built: run `lmc setup`")
        return Availability.yes()

    def interpreter(self, settings: SessionSettings, env: Mapping[str, str]) -> JavaRunner:
        java, build = shutil.which("java") or "java", runner_build()
        archive = build / _ARCHIVE
        shared = [f"-XX:SharedArchiveFile={archive}", *_ARCHIVE_FLAGS] if archive.is_file() else []
        argv = [java, *JAVA_FLAGS, *shared, "-cp", os.fspath(build / _JAR), _MAIN]
        return JavaRunner(
            settings.command(argv),
            cwd=settings.host_cwd,
            env=env,
            fifo_dir=settings.work_dir,
            startup_timeout=settings.timeouts.startup,
            lifeline=settings.lifeline,
            who="java",
        )
