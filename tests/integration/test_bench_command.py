"""lmc bench runs the benchmark of the benchmarks folder it is given, in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lmc_runtime.cli.bench import BENCHMARKS_ENV

#: A benchmarks folder's command that reports where it runs from and what it got.
COMMAND = """\
import json
import sys
from pathlib import Path

import benchmarks


def run(args):
    where = str(Path(benchmarks.__file__).parent)
    sys.stdout.write(json.dumps({"from": where, "quick": args.quick, "json": args.json}))
    return 7
"""


def _lmc_bench(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "bench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env=env,
    )


def test_lmc_bench_runs_the_folder_it_is_given_under_any_name(tmp_path: Path) -> None:
    """Guards --benchmarks DIR and $LMC_BENCHMARKS: the command of that folder runs, with
    lmc bench's options, and its exit status is lmc bench's."""
    folder = tmp_path / "my-measures"
    (folder / "bench").mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "bench" / "__init__.py").write_text("")
    (folder / "bench" / "command.py").write_text(COMMAND)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", BENCHMARKS_ENV)}
    given = _lmc_bench(tmp_path, "--quick", "--benchmarks", str(folder), env=env)
    assert given.returncode == 7, given.stderr
    assert json.loads(given.stdout) == {"from": str(folder), "quick": True, "json": False}
    named = _lmc_bench(tmp_path, "--json", env={**env, BENCHMARKS_ENV: str(folder)})
    assert named.returncode == 7, named.stderr
    assert json.loads(named.stdout) == {"from": str(folder), "quick": False, "json": True}
