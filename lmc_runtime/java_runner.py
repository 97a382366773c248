"""The Java runner, ``kernels/lmc-java/LmcJava.java`` and the classes beside it, as
``lmc setup`` builds it: a jar compiled with ``javac``, and the class-data archive of what
a session loads, in a folder named after the sources' digest. Java sessions run what is
built here.

Each step takes the runner's source, which the Java backend names
(:func:`lmc_runtime.backends.java.runner_source`), as ``lmc setup`` is given the
node runner's folder: this module imports no backend."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "ARCHIVE",
    "ARCHIVE_FLAGS",
    "INSTALL",
    "JAR",
    "JAVA_FLAGS",
    "MAIN",
    "build_runner",
    "plan_runner",
    "runner_build",
    "runner_sources",
]

#: C1 alone halves the start on small machines; the serial collector keeps threads
#: few; ``java.util`` is opened for the runner's per-run environment; UTF-8 everywhere.
JAVA_FLAGS = (
    *("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true"),
    *("--add-opens=java.base/java.util=ALL-UNNAMED", "-Dfile.encoding=UTF-8"),
    *("-Dsun.stdout.encoding=UTF-8", "-Dsun.stderr.encoding=UTF-8"),
)
MAIN = "LmcJava"
JAR = "lmc-java.jar"
ARCHIVE = "lmc-java.jsa"
#: A class-data archive that does not fit this JVM is skipped (and one is made) without a word.
ARCHIVE_FLAGS = ("-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")
INSTALL = "apt-get install default-jdk-headless, or run `lmc setup`"


def runner_sources(source: Path) -> list[Path]:
    """The runner's source files: ``source`` (its main class) and the classes beside it."""
    return sorted({source, *source.parent.glob("*.java")})


def runner_build(source: Path) -> Path:
    """Where the runner of ``source`` is (or will be) built: ``lmc-java.jar``, and the
    class-data archive of what a session loads, ``lmc-java.jsa``, if one could be made.
    Its folder is named after the digest of every source file of the runner."""
    digest = hashlib.sha256()
    for path in runner_sources(source):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return source.parent / "build" / digest.hexdigest()[:16]


def plan_runner(source: Path, say: Callable[[str], None]) -> None:
    """Say what :func:`build_runner` would do, and do nothing (``lmc setup --dry-run``)."""
    target = runner_build(source)
    if not (target / JAR).is_file():
        say(f"lmc setup: would build the Java runner with javac into {target}")
    elif not (target / ARCHIVE).is_file():
        say(f"lmc setup: would record the Java runner's class-data archive in {target}")
    else:
        say("lmc setup: the Java runner is built")


def build_runner(source: Path, say: Callable[[str], None]) -> bool:
    """Compile the runner with ``javac`` unless it is built; True when it is after."""
    target = runner_build(source)
    if not (target / JAR).is_file():
        try:
            problem = _compile(source, target)
        except OSError as exc:  # a folder this user may not write, say
            problem = f"the runner could not be built in {target.parent}: {exc}"
        if problem is not None:
            say(f"lmc setup: Java stays unavailable: {problem}")
            return False
        say("lmc setup: built the Java runner")
    else:
        say("lmc setup: the Java runner is built")
    if not (target / ARCHIVE).is_file():
        _record_archive(target, say)
    return True


def _compile(source: Path, target: Path) -> str | None:
    """Build the runner's jar into ``target``; why not, if it could not be."""
    javac = shutil.which("javac")
    if javac is None:
        return f"javac is missing; {INSTALL}"
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        classes = scratch / "classes"
        argv = [javac, "-nowarn", "-d", str(classes), *map(str, runner_sources(source))]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"javac failed:\n{done.stderr.strip()}"
        with zipfile.ZipFile(scratch / JAR, "w", zipfile.ZIP_DEFLATED) as jar:
            for path in sorted(classes.iterdir()):
                jar.write(path, path.name)
        shutil.rmtree(classes)
        scratch.chmod(0o755)  # sandboxes run as other users
        (scratch / JAR).chmod(0o644)
        with contextlib.suppress(OSError):  # else built meanwhile by another setup
            scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return None


def _record_archive(target: Path, say: Callable[[str], None]) -> None:
    """Run the runner's warm-up once, recording the classes it loads: sessions then map
    them from the archive instead of loading them (a third of a session's start)."""
    java = shutil.which("java") or "java"
    part = target / f".{ARCHIVE}.{os.getpid()}"
    argv = [java, *JAVA_FLAGS, f"-XX:ArchiveClassesAtExit={part}", *ARCHIVE_FLAGS]
    argv += ["-cp", str(target / JAR), MAIN, "--warm"]
    try:
        subprocess.run(argv, capture_output=True, timeout=120, check=True)
        part.chmod(0o644)
        part.rename(target / ARCHIVE)
    except (OSError, subprocess.SubprocessError) as exc:
        part.unlink(missing_ok=True)
        say(f"lmc setup: Java sessions start without a class-data archive ({exc})")
