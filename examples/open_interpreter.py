"""Open Interpreter on lmc-runtime: one call, then OI's computer and chat run on it.

Needs Open Interpreter (``pip install open-interpreter``) next to lmc-runtime.

    python examples/open_interpreter.py                  # a few runs through OI's API
    python examples/open_interpreter.py --url URL        # on a remote lmc serve ($LMC_TOKEN)
    python examples/open_interpreter.py --measure 20     # OI's round trip, before and after

``--measure N`` times ``interpreter.computer.run(language, code)`` for
``print(1)``, ``echo 1`` and ``console.log(1)``: N warm runs each on OI's own
languages, then N on lmc-runtime's after ``use_lmc``, in this one process, and
prints the medians (``--json`` for the figures as JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

# Keep OI off the network at import: no model cost map download, no telemetry.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DISABLE_TELEMETRY", "true")

from interpreter import interpreter

from lmc_runtime.integrations.open_interpreter import use_lmc

ROUND_TRIPS = {"python": "print(1)", "shell": "echo 1", "javascript": "console.log(1)"}


def demo(url: str | None) -> None:
    use_lmc(interpreter, url=url)
    for language, code in [
        ("python", "import sys\nprint(sys.version.split()[0])"),
        ("shell", "echo $((6 * 7))"),
        ("javascript", "const s = [1, 2, 3].map(x => x * x)\nconsole.log(s)"),
    ]:
        print(f"{language}> {code!r}")
        for chunk in interpreter.computer.run(language, code, stream=True):
            print("   ", chunk)
    print(interpreter.computer.run("python", "1 / 0")[-1]["content"].splitlines()[-1])


def round_trip(language: str, code: str) -> float:
    """One ``computer.run`` in milliseconds; its output must end in 1 (OI's own
    JavaScript prints node's ``...`` prompts before it)."""
    started = time.perf_counter()
    chunks = interpreter.computer.run(language, code)
    elapsed = (time.perf_counter() - started) * 1000
    text = "".join(str(c.get("content")) for c in chunks if c.get("format") == "output")
    if text.split()[-1:] != ["1"]:
        raise RuntimeError(f"{language} {code!r} printed {text!r}, not 1")
    return elapsed


def medians(runs: int) -> dict[str, float]:
    """The median round trip of each language, after one untimed run to warm it up."""
    result = {}
    for language, code in ROUND_TRIPS.items():
        round_trip(language, code)
        result[language] = statistics.median(round_trip(language, code) for _ in range(runs))
    return result


def measure(runs: int, url: str | None) -> dict[str, Any]:
    before = medians(runs)
    use_lmc(interpreter, url=url)
    after = medians(runs)
    return {"runs": runs, "before_ms": before, "after_ms": after}


def table(figures: dict[str, Any]) -> str:
    rows = [
        f"| `{ROUND_TRIPS[lang]}` ({lang}) | {figures['before_ms'][lang]:.1f} ms "
        f"| {figures['after_ms'][lang]:.1f} ms | {figures['before_ms'][lang] / ms:.0f}x |"
        for lang, ms in figures["after_ms"].items()
    ]
    head = "| `interpreter.computer.run` | OI's own languages | after `use_lmc` | faster |"
    return "\n".join([head, "|---|---|---|---|", *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a remote lmc serve (token in $LMC_TOKEN)")
    parser.add_argument("--measure", type=int, metavar="N", help="time N warm runs each")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.measure is None:
        demo(args.url)
        return
    figures = measure(args.measure, args.url)
    print(json.dumps(figures, indent=2) if args.json else table(figures))


if __name__ == "__main__":
    main()
