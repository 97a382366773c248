"""The long fuzz campaign, outside CI: the fuzz tests' properties with many random
examples, and a table of the inputs each entry point was given and how many
got a wrong answer.

    python -m tests.integration.fuzz.campaign --examples 1500

(from the repository's root). Each test gets ``--examples`` examples (a batch
of inputs each), the ``lmc run`` tests a tenth of them (each example starts a
process). A failing input is counted and the campaign goes on; the failures
are listed after the table, with their inputs shortened, and written in full
to ``--report`` if given. Exit status: 0 if nothing failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.integration.fuzz.campaign")
    parser.add_argument("--examples", type=int, default=200, help="examples per test")
    parser.add_argument("-k", default=None, help="only the tests this pytest -k expression picks")
    parser.add_argument("--report", type=Path, default=None, help="write every record here")
    return parser


def _run_pytest(examples: int, tally: Path, select: str | None) -> int:
    import pytest

    os.environ.update(
        LMC_FUZZ_PROFILE="campaign", LMC_FUZZ_EXAMPLES=str(examples), LMC_FUZZ_TALLY=str(tally)
    )
    args = [str(HERE), "-q", "-p", "no:cacheprovider", "--timeout=0"]
    args += ["--basetemp=/tmp/bt-fuzz-campaign", "-W", "ignore::DeprecationWarning"]
    if select:
        args += ["-k", select]
    return int(pytest.main(args))


def _table(records: list[dict[str, Any]]) -> list[str]:
    tried: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    batches: Counter[str] = Counter()
    broken: Counter[str] = Counter()
    for record in records:
        entry = record["entry"]
        if record["label"] == "health":
            batches[entry] += 1
            broken[entry] += record["failed"]
        else:
            tried[entry] += 1
            failed[entry] += record["failed"]
    rows = ["| entry point | inputs tried | failed | batches | failed after a batch |"]
    rows.append("|---|---:|---:|---:|---:|")
    for entry in sorted(set(tried) | set(batches)):
        rows.append(
            f"| {entry} | {tried[entry]} | {failed[entry]} | {batches[entry]} | {broken[entry]} |"
        )
    rows.append(
        f"| all | {sum(tried.values())} | {sum(failed.values())} | "
        f"{sum(batches.values())} | {sum(broken.values())} |"
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.chdir(REPO)
    with tempfile.TemporaryDirectory(prefix="lmc-fuzz-") as tmp:
        tally = Path(tmp) / "tally.jsonl"
        tally.touch()
        started = time.monotonic()
        status = _run_pytest(args.examples, tally, args.k)
        minutes = (time.monotonic() - started) / 60
        records = [json.loads(line) for line in tally.read_text().splitlines() if line]
    if args.report is not None:
        args.report.write_text("".join(json.dumps(record) + "\n" for record in records))
    out = sys.stdout
    out.write(f"\n{args.examples} examples per test, {minutes:.1f} minutes; pytest: {status}\n\n")
    out.write("\n".join(_table(records)) + "\n")
    failures = [record for record in records if record["failed"]]
    for record in failures[:20]:
        out.write(f"\n{record['entry']} / {record['label']}: {record['reason']}\n")
        out.write(f"  input: {record['input']}\n")
    return 1 if failures or status else 0


if __name__ == "__main__":
    sys.exit(main())
