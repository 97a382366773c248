"""What jshell writes to its terminal: the code's output, and tagged words.

jshell runs in a feedback mode of ours (see :func:`init_script`) that wraps
everything it says itself in OSC tags carrying the session's random token:
``ESC ] lmc ; TOKEN ; p<id> BEL`` is the prompt (jshell is ready, and ``id`` is
the number its next snippet gets); each line of an error or exception sits
between an ``e`` (or, for a note, ``n``) tag and an ``f`` tag. What the code
writes to ``System.err`` sits between ``x`` and ``f`` tags (see
:func:`setup_snippet`), so both streams keep their order. The code's standard
input prints an ``i`` tag when it wants a line, and the line that
re-synchronizes after an interrupt prints ``s<n>``. Untagged text is the
code's own output. :class:`TagParser` splits the byte stream accordingly.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass

__all__ = [
    "Err",
    "Event",
    "Prompt",
    "Said",
    "Synced",
    "TagParser",
    "Wants",
    "abort_word",
    "eof_word",
    "init_script",
    "setup_snippet",
    "sync_snippet",
]

#: What is kept of one line jshell says.
_SAID_LIMIT = 64 * 1024
#: What jshell's line reader writes after a prompt on a dumb terminal.
_AFTER_PROMPT = b" \x08"


@dataclass(frozen=True)
class Prompt:
    """jshell is ready for input; its next snippet will be number ``snippet``."""

    snippet: int


@dataclass(frozen=True)
class Said:
    """One line jshell said itself: part of an error (``error``) or a note."""

    text: str
    error: bool


@dataclass(frozen=True)
class Err:
    """Text the code wrote to ``System.err``."""

    text: str


@dataclass(frozen=True)
class Synced:
    """The re-synchronizing line ``n`` ran: prompts from before it are stale."""

    n: int


@dataclass(frozen=True)
class Wants:
    """The code is reading standard input and waits for a line."""


Event = str | Err | Prompt | Said | Synced | Wants


def _tag(token: str, body: str) -> str:
    return f"\x1b]lmc;{token};{body}\x07"


def init_script(token: str) -> str:
    """The jshell commands that set up the ``lmc`` feedback mode (run from a load file)."""
    error, note, end = _tag(token, "e"), _tag(token, "n"), _tag(token, "f")
    defined = "defined,notdefined-added,modified,replaced-primary"
    return "\n".join(
        [
            "/set mode lmc -quiet",
            f'/set prompt lmc "{_tag(token, "p%s")}" "{_tag(token, "c%s")}"',
            f'/set format lmc errorpre "{error}"',
            f'/set format lmc errorpost "{end}"',
            f'/set format lmc display "{note}note: {{name}} cannot be used until'
            f'{{unresolved}} is declared{end}" {defined}',
            f'/set format lmc display "{error}{{name}} cannot be used until'
            f'{{unresolved}} is declared{end}" used',
            "/set truncation lmc 100000",
            "",
        ]
    )


def setup_snippet(token: str, fifo: str) -> str:
    """Java (one line) that sets up the code's ``System.in`` and ``System.err``.

    ``System.in`` prints an ``i`` tag when it needs a line, then reads one from
    ``fifo``: :func:`eof_word` reads as the end of input, :func:`abort_word`
    fails the read. ``System.err`` writes to the terminal between ``x`` and
    ``f`` tags.
    """
    ask, err, end = (_escaped(_tag(token, body)) for body in "ixf")
    utf8 = "java.nio.charset.StandardCharsets.UTF_8"
    stdin = (
        "System.setIn(new InputStream() { InputStream up; byte[] buf = {}; int pos; "
        "public int read() throws IOException { byte[] one = new byte[1]; "
        "return read(one, 0, 1) < 0 ? -1 : one[0] & 255; } "
        "public synchronized int read(byte[] b, int off, int len) throws IOException { "
        "if (len == 0) return 0; "
        f'if (pos >= buf.length) {{ System.out.print("{ask}"); System.out.flush(); '
        f"if (up == null) up = new FileInputStream({json.dumps(fifo)}); "
        "ByteArrayOutputStream line = new ByteArrayOutputStream(); int c; "
        "while ((c = up.read()) >= 0 && c != 10) line.write(c); "
        f"String got = line.toString({utf8}); "
        f'if (c < 0 || got.equals("{eof_word(token)}")) return -1; '
        f'if (got.equals("{abort_word(token)}")) '
        'throw new InterruptedIOException("the input was not given"); '
        "line.write(10); buf = line.toByteArray(); pos = 0; } "
        "int n = Math.min(len, buf.length - pos); System.arraycopy(buf, pos, b, off, n); "
        "pos += n; return n; } });"
    )
    stderr = (
        "System.setErr(new PrintStream(new OutputStream() { final PrintStream out = System.out; "
        "public void write(int b) { write(new byte[] {(byte) b}, 0, 1); } "
        "public void write(byte[] b, int off, int len) { synchronized (out) { "
        f'out.print("{err}"); out.write(b, off, len); out.print("{end}"); out.flush(); }} }} '
        f"}}, true, {utf8}));"
    )
    return f"{stdin} {stderr}"


def eof_word(token: str) -> str:
    """The line that the code's standard input reads as its end."""
    return f"lmc-end-of-input-{token}"


def abort_word(token: str) -> str:
    """The line that makes the code's read of its standard input fail."""
    return f"lmc-no-input-{token}"


def _escaped(text: str) -> str:
    return text.replace("\x1b", "\\u001b").replace("\x07", "\\u0007")


def sync_snippet(token: str, n: int) -> str:
    """Java that prints the ``s<n>`` tag."""
    return f'System.out.print("{_escaped(_tag(token, f"s{n}"))}");'


class TagParser:
    """Bytes from jshell's terminal in, :data:`Event` items out, in order."""

    def __init__(self, token: str) -> None:
        self._prefix = f"\x1b]lmc;{token};".encode("ascii")
        self._tag = re.compile(re.escape(self._prefix) + rb"([pcs]\d+|[enxfi])\x07")
        self._out = codecs.getincrementaldecoder("utf-8")("replace")
        self._err = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = b""
        #: The tag whose text is being read (``e``, ``n``, ``x``), if any, and that text.
        self._inside = b""
        self._said = b""
        #: After a prompt: 1, and 2 once a space came that may start ``" \b"``.
        self._fresh = 0

    def feed(self, data: bytes) -> list[Event]:
        buf, self._held = self._held + data, b""
        events: list[Event] = []
        pos = 0
        while (start := buf.find(self._prefix, pos)) >= 0:
            match = self._tag.match(buf, start)
            if match is None and len(buf) - start < len(self._prefix) + 12:
                break  # perhaps a tag whose end is still to come
            self._text(buf[pos:start], events)
            if match is None:  # not a tag after all
                self._text(buf[start : start + 1], events)
                pos = start + 1
                continue
            pos = match.end()
            self._tagged(match.group(1), events)
        else:
            start = len(buf) - self._partial(buf[pos:])
        self._text(buf[pos:start], events)
        self._held = buf[start:]
        return events

    def flush(self) -> list[Event]:
        """What is held back, as output (the stream ended)."""
        events: list[Event] = []
        held, self._held = self._held, b""
        self._text(held, events)
        self._tagged(b"f", events)
        text = self._out.decode(b" " if self._fresh == 2 else b"", final=True)
        if text:
            events.append(text)
        return events

    def _tagged(self, body: bytes, events: list[Event]) -> None:
        if body in (b"e", b"n", b"x"):
            self._inside, self._said = body, b""
        elif body == b"f":
            if self._inside in (b"e", b"n"):
                events.append(Said(self._said.decode("utf-8", "replace"), self._inside == b"e"))
            self._inside = self._said = b""
        elif body == b"i":
            events.append(Wants())
        elif body[:1] == b"p":
            events.append(Prompt(int(body[1:])))
            self._inside, self._fresh = b"", 1
        elif body[:1] == b"s":
            events.append(Synced(int(body[1:])))

    def _text(self, data: bytes, events: list[Event]) -> None:
        if not data:
            return
        if self._inside == b"x":
            text = self._err.decode(data)
            if text:
                events.append(Err(text))
            return
        if self._inside:
            self._said = (self._said + data)[:_SAID_LIMIT]
            return
        if self._fresh:
            if self._fresh == 2:
                data = data[1:] if data[:1] == b"\x08" else b" " + data
            elif data == b" ":
                self._fresh = 2
                return
            else:
                data = data.removeprefix(_AFTER_PROMPT)
            self._fresh = 0
        text = self._out.decode(data)
        if text:
            events.append(text)

    def _partial(self, tail: bytes) -> int:
        """How many bytes at the end of ``tail`` may start a tag."""
        for size in range(min(len(tail), len(self._prefix)), 0, -1):
            if self._prefix.startswith(tail[-size:]):
                return size
        return 0
