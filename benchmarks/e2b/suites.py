"""E2B's own public test suites, run unchanged against a real ``lmc serve``.

The suites are E2B's (the SDKs' tests in e2b-dev/E2B and e2b-dev/code-interpreter),
not this project's: they are a measure of how much of E2B's API a program
written for it finds here, not a gate. Give it checkouts of the two repositories
(a work tree, or a bare git directory, whose ``HEAD`` is exported) and a Python
with the SDKs those tests were written for::

    python -m benchmarks.e2b.suites --e2b-repo ../E2B --code-interpreter-repo \\
        ../code-interpreter --python venv/bin/python [--json out.json]

It starts ``lmc serve`` on a free port with a token in E2B's key shape, points
the suites at it with E2B's environment variables alone (``E2B_API_URL``,
``E2B_SANDBOX_URL``, ``E2B_API_KEY``), runs each suite with pytest (JUnit XML),
and prints each suite's pass rate and every test that did not pass, with the
first line of why.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

TOKEN = "e2b_" + "5eed" * 10

#: (suite name, repository, the paths of it that make the suite, the pytest
#: root folder (its pytest.ini and conftest.py)).
SUITES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("code-interpreter: python/tests", "code_interpreter", ("python/tests",), "python"),
    (
        "e2b python-sdk: files",
        "e2b",
        (
            "packages/python-sdk/tests/sync/sandbox_sync/files",
            "packages/python-sdk/tests/async/sandbox_async/files",
        ),
        "packages/python-sdk",
    ),
    (
        "e2b python-sdk: commands",
        "e2b",
        (
            "packages/python-sdk/tests/sync/sandbox_sync/commands",
            "packages/python-sdk/tests/async/sandbox_async/commands",
        ),
        "packages/python-sdk",
    ),
    (
        "e2b python-sdk: lifecycle",
        "e2b",
        (
            *(
                f"packages/python-sdk/tests/{mode}/sandbox_{mode}/test_{name}.py"
                for mode in ("sync", "async")
                for name in ("create", "kill", "connect", "timeout", "metrics", "secure", "host")
            ),
            "packages/python-sdk/tests/sync/api_sync",
            "packages/python-sdk/tests/async/api_async",
        ),
        "packages/python-sdk",
    ),
)


@dataclass
class Outcome:
    """One suite's result."""

    suite: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    not_passed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ran(self) -> int:
        return self.passed + self.failed

    @property
    def rate(self) -> float:
        return self.passed / self.ran if self.ran else 0.0


def _export(repo: Path, into: Path) -> Path:
    """A plain copy of ``repo``'s files: a work tree as it is, a git directory's HEAD."""
    if (repo / ".git").exists() or not (repo / "HEAD").exists():
        return repo
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "--git-dir", str(repo), "archive", "HEAD"], check=True, capture_output=True
    ).stdout
    archive_path = into.with_suffix(".tar")
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(into, filter="data")
    return into


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(data_dir: Path, extra: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "LMC_TOKEN": TOKEN}
    argv = [sys.executable, "-m", "lmc_runtime", "serve", "--port", str(port)]
    argv += ["--data-dir", str(data_dir), "--max-sessions", "32", *extra]
    log = open(data_dir.parent / "serve.log", "wb")  # noqa: SIM115 - lives as long as the server
    server = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"lmc serve exited; see {log.name}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return server, url
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("lmc serve did not answer /healthz in 60 s")


def _parse(junit: Path, suite: str) -> Outcome:
    outcome = Outcome(suite)
    if not junit.exists():
        return outcome
    for case in ET.parse(junit).iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if case.find("skipped") is not None:
            outcome.skipped += 1
        elif problem is not None:
            outcome.failed += 1
            why = (problem.get("message") or problem.text or "").strip().splitlines()
            outcome.not_passed.append((name, why[0][:200] if why else ""))
        else:
            outcome.passed += 1
    return outcome


def run_suite(
    name: str,
    root: Path,
    paths: tuple[str, ...],
    rootdir: str,
    python: str,
    url: str,
    timeout: int,
    work: Path,
) -> Outcome:
    # The suite's tests and pytest settings alone, without the SDK's source beside
    # them: the tests import the SDK installed in ``python``, not the checkout's.
    alone = work / f"alone-{abs(hash(name))}"
    shutil.copytree(root / rootdir / "tests", alone / "tests")
    for settings in ("pytest.ini", "conftest.py"):
        if (root / rootdir / settings).exists():
            shutil.copy(root / rootdir / settings, alone / settings)
    rebased = [Path(p).relative_to(rootdir) for p in paths]
    present = [str(alone / p) for p in rebased if (alone / p).exists()]
    root, rootdir = alone, "."
    junit = work / f"{name.replace(' ', '_').replace(':', '').replace('/', '_')}.xml"
    env = {
        **os.environ,
        "E2B_API_KEY": TOKEN,
        "E2B_API_URL": url,
        "E2B_SANDBOX_URL": url,
    }
    env.pop("E2B_DOMAIN", None)
    argv = [
        python,
        "-m",
        "pytest",
        *present,
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=--import-mode=importlib",
        f"--timeout={timeout}",
        f"--junitxml={junit}",
        "--rootdir",
        str(root / rootdir),
    ]
    subprocess.run(
        argv,
        cwd=root / rootdir,
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return _parse(junit, name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--e2b-repo", type=Path, required=True)
    parser.add_argument("--code-interpreter-repo", type=Path, required=True)
    parser.add_argument("--python", default=sys.executable, help="a Python with the SDKs")
    parser.add_argument("--timeout", type=int, default=120, help="seconds a test may take")
    parser.add_argument("--only", help="run the suites whose name contains this")
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    parser.add_argument("--serve-arg", action="append", default=[], help="passed to lmc serve")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lmc-e2b-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o711)
        repos = {
            "e2b": _export(args.e2b_repo, work / "e2b"),
            "code_interpreter": _export(args.code_interpreter_repo, work / "ci"),
        }
        server, url = _serve(work / "data", args.serve_arg)
        outcomes = []
        try:
            for name, repo, paths, rootdir in SUITES:
                if args.only and args.only not in name:
                    continue
                started = time.monotonic()
                outcome = run_suite(
                    name, repos[repo], paths, rootdir, args.python, url, args.timeout, work
                )
                outcomes.append(outcome)
                print(
                    f"{name}: {outcome.passed}/{outcome.ran} passed ({outcome.rate:.0%}), "
                    f"{outcome.skipped} skipped, {time.monotonic() - started:.0f} s",
                    flush=True,
                )
                for test, why in outcome.not_passed:
                    print(f"    {test}: {why}")
        finally:
            server.terminate()
            server.wait(timeout=60)
            shutil.copy(work / "serve.log", Path(tempfile.gettempdir()) / "lmc-e2b-serve.log")
        passed = sum(o.passed for o in outcomes)
        ran = sum(o.ran for o in outcomes)
        print(f"all: {passed}/{ran} passed ({passed / ran if ran else 0:.0%})")
        if args.json:
            args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
