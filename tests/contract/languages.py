"""One profile per language: the snippets each behaviour of the contract needs.

A profile says, in its own language, how to print a line, set and read a
variable, loop forever, sleep, kill its own interpreter, print after the run
has ended, read a line of input... The tests in this folder state each
behaviour once and run it on every profile, so a new language joins the
contract by adding a profile here.

String literals go through :func:`quoted` (a JSON string, which Python, R,
JavaScript, TypeScript and Java all read alike) or :func:`single_quoted` for
the shells; the texts the tests pass are plain ASCII words.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["GOT", "PROFILES", "Profile", "quoted", "single_quoted"]

#: What the read-a-line snippet prints around the line it got.
GOT = "got:[{}]"


def quoted(text: str) -> str:
    """``text`` as a double-quoted string literal."""
    return json.dumps(text)


def single_quoted(text: str) -> str:
    """``text`` as a single-quoted shell word."""
    return "'" + text.replace("'", "'\\''") + "'"


def _until_go(path: str) -> str:
    """A shell loop that waits until ``path + ".go"`` exists (30 s at most)."""
    go = single_quoted(path + ".go")
    return f"i=0; while [ ! -e {go} ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done"


@dataclass(frozen=True)
class Profile:
    """The snippets of one language.

    Every snippet is top-level code; joined with newlines, snippets run one
    after the other. ``kept`` is the variable the state checks use.
    """

    #: The canonical language name, as the registry knows it.
    name: str
    #: Prints ``text`` and a newline on stdout.
    print_line: Callable[[str], str]
    #: Prints ``text`` and a newline on stderr.
    print_err: Callable[[str], str]
    #: Sets the variable ``kept`` to the string ``value``.
    set_kept: Callable[[str], str]
    #: Prints the value of ``kept`` and a newline (fails, or prints no value, once it is gone).
    show_kept: str
    #: Prints ``boom`` (on stdout or stderr) and ends the run in error.
    fail: str
    #: A busy CPU loop that never ends.
    busy_loop: str
    #: Sleeps for ``seconds``; the sleeping statement is the snippet's last line.
    sleep: Callable[[float], str]
    #: Prints ``tick`` every 50 ms, forever.
    tick_forever: str
    #: Runs forever and does not stop when interrupted (it ignores SIGINT, or runs
    #: where an interrupt cannot reach it): only a restart ends it.
    ignore_interrupts: str
    #: Prints ``line 0`` ... ``line <n-1>``, one a line.
    count_lines: Callable[[int], str]
    #: Prints the process id of the interpreter itself.
    print_pid: str
    #: Kills the interpreter running it with SIGKILL.
    kill_self: str
    #: Ends the interpreter on purpose (``exit()``, ``process.exit``...).
    exit_self: str
    #: Runs the shell command line ``command`` in a child process (``sh -c``),
    #: whose output is the interpreter's own; the run waits for it.
    child_runs: Callable[[str], str]
    #: Returns at once; once ``path + ".go"`` exists (looked for every 20 ms, for
    #: 30 s at most), prints ``late-line``, and 0.2 s after that creates ``path``.
    late_output: Callable[[str], str]
    #: Asks ``name? `` (no newline), reads one line of input, prints it as ``got:[line]``.
    read_line: str
    #: Prints the environment variable ``name`` and a newline, or ``<unset>`` if it is not set.
    show_env: Callable[[str], str]
    #: What :attr:`read_line` prints when its input is at its end, if it does not fail.
    at_end_of_input: str = GOT.format("")
    #: stdout and stderr share one stream (a terminal), so stderr is not marked.
    merged_streams: bool = False
    #: The interpreter reports the line running (``sh`` has no DEBUG trap to do it).
    tracks_lines: bool = True


def _python() -> Profile:
    return Profile(
        name="python",
        show_env=lambda name: f"import os\nprint(os.environ.get({quoted(name)}, '<unset>'))",
        print_line=lambda text: f"print({quoted(text)})",
        print_err=lambda text: f"import sys\nprint({quoted(text)}, file=sys.stderr)",
        set_kept=lambda value: f"kept = {quoted(value)}",
        show_kept="print(kept)",
        fail='raise ValueError("boom")',
        busy_loop="while True:\n    pass",
        sleep=lambda seconds: f"import time\ntime.sleep({seconds})",
        tick_forever=(
            "import time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.05)"
        ),
        ignore_interrupts=(
            "import signal, time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "while True:\n"
            "    time.sleep(0.01)"
        ),
        count_lines=lambda n: f"for i in range({n}):\n    print('line', i)",
        print_pid="import os\nprint(os.getpid())",
        kill_self="import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
        exit_self="exit()",
        child_runs=lambda command: (
            f"import subprocess\n_ = subprocess.run(['sh', '-c', {quoted(command)}], check=True)"
        ),
        late_output=lambda path: (
            "import os, threading, time\n"
            "def later():\n"
            f"    for _ in range(1500):\n"
            f"        if os.path.exists({quoted(path + '.go')}):\n"
            "            break\n"
            "        time.sleep(0.02)\n"
            "    print('late-line', flush=True)\n"
            "    time.sleep(0.2)\n"
            f"    open({quoted(path)}, 'w').close()\n"
            "threading.Thread(target=later, daemon=True).start()"
        ),
        read_line="line = input('name? ')\nprint('got:[' + line + ']')",
    )


def _r() -> Profile:
    return Profile(
        name="r",
        show_env=lambda name: (
            f'cat(Sys.getenv({quoted(name)}, unset = "<unset>"), "\\n", sep = "")'
        ),
        print_line=lambda text: f'cat({quoted(text)}, "\\n", sep = "")',
        print_err=lambda text: f"message({quoted(text)})",
        set_kept=lambda value: f"kept <- {quoted(value)}",
        show_kept='cat(kept, "\\n", sep = "")',
        fail='stop("boom")',
        busy_loop="repeat {}",
        sleep=lambda seconds: f"Sys.sleep({seconds})",
        tick_forever='repeat {\n  cat("tick\\n")\n  flush.console()\n  Sys.sleep(0.05)\n}',
        # Each interrupt is caught, and the loop goes on.
        ignore_interrupts=("repeat tryCatch(repeat Sys.sleep(0.01), interrupt = function(e) NULL)"),
        count_lines=lambda n: f'for (i in 0:{n - 1}) cat("line ", i, "\\n", sep = "")',
        print_pid='cat(Sys.getpid(), "\\n", sep = "")',
        kill_self="tools::pskill(Sys.getpid(), tools::SIGKILL)",
        exit_self="quit()",
        child_runs=lambda command: f"invisible(system({quoted(command)}))",
        # R runs no code of its own between runs (no threads, no timers
        # without the later package): a background job is what prints late.
        late_output=lambda path: (
            "invisible(system("
            + quoted(f"({_until_go(path)}; echo late-line; sleep 0.2; touch {single_quoted(path)})")
            + ", wait = FALSE))"
        ),
        read_line='line <- readline("name? ")\ncat("got:[", line, "]\\n", sep = "")',
    )


def _shell(name: str) -> Profile:
    return Profile(
        name=name,
        show_env=lambda name: f"printf '%s\\n' \"${{{name}-<unset>}}\"",
        print_line=lambda text: f"echo {single_quoted(text)}",
        print_err=lambda text: f"echo {single_quoted(text)} >&2",
        set_kept=lambda value: f"kept={single_quoted(value)}",
        show_kept='echo "$kept"',
        fail="(echo boom >&2; exit 3)",
        busy_loop="while :; do :; done",
        sleep=lambda seconds: f"sleep {seconds}",
        tick_forever="while :; do echo tick; sleep 0.05; done",
        ignore_interrupts="trap '' INT\nwhile :; do :; done",
        count_lines=lambda n: f'i=0\nwhile [ "$i" -lt {n} ]; do echo "line $i"; i=$((i + 1)); done',
        print_pid="echo $$",
        kill_self="kill -9 $$",
        exit_self="exit 3",
        child_runs=lambda command: f"sh -c {single_quoted(command)}",
        # The words are joined at run time: the shell's "Done" line for the job
        # quotes its command, and must not look like its output.
        late_output=lambda path: (
            f"({_until_go(path)}; printf '%s-%s\\n' late line; sleep 0.2;"
            f" touch {single_quoted(path)}) &"
        ),
        read_line="printf 'name? '\nread line\necho \"got:[$line]\"",
        merged_streams=True,
        tracks_lines=name != "sh",
    )


#: Reads one line from fd 0 without blocking the event loop's stdin handling.
_JS_READ_LINE = """\
function readLine() {
  const fs = require("fs")
  const byte = Buffer.alloc(1)
  let line = ""
  for (;;) {
    let n
    try {
      n = fs.readSync(0, byte, 0, 1, null)
    } catch (error) {
      if (error.code === "EAGAIN") continue
      throw error
    }
    if (n === 0 || byte[0] === 10) return line
    line += byte.toString()
  }
}
process.stdout.write("name? ")
const line = readLine()
console.log("got:[" + line + "]")"""


def _javascript() -> Profile:
    return Profile(
        name="javascript",
        show_env=lambda name: f'console.log(process.env[{quoted(name)}] ?? "<unset>")',
        print_line=lambda text: f"console.log({quoted(text)})",
        print_err=lambda text: f"console.error({quoted(text)})",
        set_kept=lambda value: f"let kept = {quoted(value)}",
        show_kept="console.log(kept)",
        fail='throw new Error("boom")',
        busy_loop="while (true) {}",
        sleep=lambda seconds: f"await new Promise(r => setTimeout(r, {int(seconds * 1000)}))",
        tick_forever=(
            'while (true) {\n  console.log("tick")\n  await new Promise(r => setTimeout(r, 50))\n}'
        ),
        # An interrupt stops the cell's own code, not a timer callback.
        ignore_interrupts=(
            "void setTimeout(() => { while (true) {} }, 50)\n"
            "await new Promise(r => setTimeout(r, 600000))"
        ),
        count_lines=lambda n: f'for (let i = 0; i < {n}; i++) console.log("line " + i)',
        print_pid="console.log(process.pid)",
        kill_self='process.kill(process.pid, "SIGKILL")',
        exit_self="process.exit(3)",
        child_runs=lambda command: (
            'require("child_process").execFileSync("sh", '
            f'["-c", {quoted(command)}], {{ stdio: "inherit" }})\nvoid 0'
        ),
        late_output=lambda path: (
            "let looks = 0\n"
            "const later = () => {\n"
            f'  if (!require("fs").existsSync({quoted(path + ".go")}) && ++looks < 1500) {{\n'
            "    void setTimeout(later, 20)\n"
            "    return\n"
            "  }\n"
            '  console.log("late-line")\n'
            f'  setTimeout(() => require("fs").writeFileSync({quoted(path)}, ""), 200)\n'
            "}\n"
            "void setTimeout(later, 20)"
        ),
        read_line=_JS_READ_LINE,
    )


_TS_READ_LINE = """\
function readLine(): string {
  const fs = require("fs")
  const byte: Buffer = Buffer.alloc(1)
  let line: string = ""
  for (;;) {
    let n: number
    try {
      n = fs.readSync(0, byte, 0, 1, null)
    } catch (error: any) {
      if (error.code === "EAGAIN") continue
      throw error
    }
    if (n === 0 || byte[0] === 10) return line
    line += byte.toString()
  }
}
process.stdout.write("name? " as string)
const line: string = readLine()
console.log("got:[" + line + "]")"""


def _typescript() -> Profile:
    """JavaScript's snippets with type annotations, so that only TypeScript runs them."""
    return Profile(
        name="typescript",
        show_env=lambda name: f'console.log((process.env[{quoted(name)}] ?? "<unset>") as string)',
        print_line=lambda text: f"console.log({quoted(text)} as string)",
        print_err=lambda text: f"console.error({quoted(text)} as string)",
        set_kept=lambda value: f"let kept: string = {quoted(value)}",
        show_kept="console.log(kept as string)",
        fail='throw new Error("boom" as string)',
        busy_loop="while (true as boolean) {}",
        sleep=lambda seconds: (
            f"await new Promise<void>((r: () => void) => setTimeout(r, {int(seconds * 1000)}))"
        ),
        tick_forever=(
            "while (true) {\n"
            '  console.log("tick" as string)\n'
            "  await new Promise<void>((r: () => void) => setTimeout(r, 50))\n"
            "}"
        ),
        ignore_interrupts=(
            "void setTimeout((): void => { while (true as boolean) {} }, 50)\n"
            "await new Promise<void>((r: () => void) => setTimeout(r, 600000))"
        ),
        count_lines=lambda n: f'for (let i: number = 0; i < {n}; i++) console.log("line " + i)',
        print_pid="console.log(process.pid as number)",
        kill_self='process.kill(process.pid as number, "SIGKILL")',
        exit_self="process.exit(3 as number)",
        child_runs=lambda command: (
            'require("child_process").execFileSync("sh" as string, '
            f'["-c", {quoted(command)}], {{ stdio: "inherit" }})\nvoid 0'
        ),
        late_output=lambda path: (
            "let looks: number = 0\n"
            "const later = (): void => {\n"
            f'  if (!require("fs").existsSync({quoted(path + ".go")}) && ++looks < 1500) {{\n'
            "    void setTimeout(later, 20)\n"
            "    return\n"
            "  }\n"
            '  console.log("late-line" as string)\n'
            f'  setTimeout((): void => require("fs").writeFileSync({quoted(path)}, ""), 200)\n'
            "}\n"
            "void setTimeout(later, 20)"
        ),
        read_line=_TS_READ_LINE,
    )


def _java() -> Profile:
    return Profile(
        name="java",
        show_env=lambda name: (
            f'System.out.println(java.util.Objects.requireNonNullElse(System.getenv({quoted(name)}), "<unset>"));'
        ),
        print_line=lambda text: f"System.out.println({quoted(text)});",
        print_err=lambda text: f"System.err.println({quoted(text)});",
        set_kept=lambda value: f"String kept = {quoted(value)};",
        show_kept="System.out.println(kept);",
        fail='throw new RuntimeException("boom");',
        busy_loop="while (true) {}",
        sleep=lambda seconds: f"Thread.sleep({int(seconds * 1000)});",
        tick_forever='while (true) {\n  System.out.println("tick");\n  Thread.sleep(50);\n}',
        # The interrupt's ThreadDeath is caught, and the loop goes on.
        ignore_interrupts=(
            "while (true) {\n  try {\n    while (true) {}\n  } catch (Throwable stopped) {\n  }\n}"
        ),
        count_lines=lambda n: (
            f'for (int i = 0; i < {n}; i++) {{\n  System.out.println("line " + i);\n}}'
        ),
        print_pid="System.out.println(ProcessHandle.current().pid());",
        kill_self=(
            'new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid()))'
            ".start().waitFor();"
        ),
        exit_self="System.exit(3);",
        child_runs=lambda command: (
            f'new ProcessBuilder("sh", "-c", {quoted(command)}).inheritIO().start().waitFor();'
        ),
        late_output=lambda path: (
            "new Thread(() -> {\n"
            "  try {\n"
            f"    for (int i = 0; i < 1500 && !java.nio.file.Files.exists(java.nio.file.Path.of({quoted(path + '.go')})); i++) {{\n"
            "      Thread.sleep(20);\n"
            "    }\n"
            '    System.out.println("late-line");\n'
            "    Thread.sleep(200);\n"
            f"    java.nio.file.Files.createFile(java.nio.file.Path.of({quoted(path)}));\n"
            "  } catch (Exception e) {\n"
            "    throw new RuntimeException(e);\n"
            "  }\n"
            "}).start();"
        ),
        read_line=(
            'System.out.print("name? ");\n'
            "String line = new java.io.BufferedReader("
            "new java.io.InputStreamReader(System.in)).readLine();\n"
            'System.out.println("got:[" + line + "]");'
        ),
        at_end_of_input=GOT.format("null"),
    )


#: Every language an interpreter runs, in the order the tests list them.
PROFILES: dict[str, Profile] = {
    profile.name: profile
    for profile in (
        _python(),
        _r(),
        _shell("shell"),
        _shell("sh"),
        _shell("zsh"),
        _javascript(),
        _typescript(),
        _java(),
    )
}
