"""What jshell writes to its terminal: the code's output, and tagged events.

jshell runs in a feedback mode of ours (:func:`init_script`) that wraps what it
says itself in OSC tags carrying the session's token: ``ESC ] lmc ; TOKEN ;
p<id> BEL`` is the prompt (``id``: the number of its next snippet); a line of an
error sits between ``e`` (a note: ``n``) and ``f``; what the code writes to
``System.err`` between ``x`` and ``f``. The code's ``System.in`` prints ``i``
when it wants a line; a re-synchronizing line prints ``s<n>``. Untagged text is
the code's stdout.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Event", "TagParser", "env_snippet", "init_script", "setup_snippet", "sync_snippet"]

#: What is kept of one line jshell says.
_SAID_LIMIT = 64 * 1024
#: What jshell's line reader writes after a prompt on a dumb terminal.
_AFTER_PROMPT = b" \x08"
_KINDS = {b"p": "prompt", b"s": "sync", b"i": "input", b"e": "error", b"n": "note"}


@dataclass(frozen=True)
class Event:
    """``out``/``err``: the code's text; ``error``/``note``: a line jshell said;
    ``prompt`` (``n``: the next snippet's number), ``sync`` (``n``), ``input``."""

    kind: str
    text: str = ""
    n: int = 0


def _tag(token: str, body: str) -> str:
    return f"\x1b]lmc;{token};{body}\x07"


def _java(text: str) -> str:
    """``text`` as a Java string literal."""
    return json.dumps(text)


_SETUP = """
System.setIn(new InputStream() {
  InputStream up; byte[] buf = {}; int pos;
  public int read() throws IOException {
    byte[] one = new byte[1]; return read(one, 0, 1) < 0 ? -1 : one[0] & 255; }
  public synchronized int read(byte[] b, int off, int len) throws IOException {
    if (len == 0) return 0;
    if (pos >= buf.length) {
      System.out.print(ASK); System.out.flush();
      if (up == null) up = new FileInputStream(FIFO);
      ByteArrayOutputStream line = new ByteArrayOutputStream(); int kind = up.read(), c;
      while ((c = up.read()) >= 0 && c != 10) line.write(c);
      if (kind == '!') throw new InterruptedIOException("the input was not given");
      if (c < 0 || kind != '=') return -1;
      line.write(10); buf = line.toByteArray(); pos = 0; }
    int n = Math.min(len, buf.length - pos); System.arraycopy(buf, pos, b, off, n);
    pos += n; return n; } });
System.setErr(new PrintStream(new OutputStream() {
  final PrintStream out = System.out;
  public void write(int b) { write(new byte[] {(byte) b}, 0, 1); }
  public void write(byte[] b, int off, int len) { synchronized (out) {
    out.print(ERR); out.write(b, off, len); out.print(END); out.flush(); } }
}, true, java.nio.charset.StandardCharsets.UTF_8));
class ENV {
  static Map<String, String> saved = new HashMap<>();
  @SuppressWarnings("unchecked") static Map<String, String> env() throws Exception {
    var m = Class.forName("java.util.Collections$UnmodifiableMap").getDeclaredField("m");
    m.setAccessible(true); return (Map<String, String>) m.get(System.getenv()); }
  static void put(Map<String, String> env, String k, String v) {
    if (v == null) env.remove(k); else env.put(k, v); }
  static void set(String... kv) throws Exception {
    var env = env();
    for (int i = 0; i < kv.length; i += 2) {
      if (!saved.containsKey(kv[i])) saved.put(kv[i], env.get(kv[i]));
      put(env, kv[i], kv[i + 1]); } }
  static void restore() throws Exception {
    var env = env(); saved.forEach((k, v) -> put(env, k, v)); saved.clear(); } }
"""


def init_script(token: str) -> str:
    """The jshell commands that set up the ``lmc`` feedback mode (run from a load file)."""
    error, note, end = _tag(token, "e"), _tag(token, "n"), _tag(token, "f")
    unresolved = "{name} cannot be used until{unresolved} is declared"
    defined = "defined,notdefined-added,modified,replaced-primary"
    return "\n".join(
        [
            "/set mode lmc -quiet",
            f'/set prompt lmc "{_tag(token, "p%s")}" "{_tag(token, "c%s")}"',
            f'/set format lmc errorpre "{error}"',
            f'/set format lmc errorpost "{end}"',
            f'/set format lmc display "{note}note: {unresolved}{end}" {defined}',
            f'/set format lmc display "{error}{unresolved}{end}" used',
            "/set truncation lmc 100000",
            "",
        ]
    )


def setup_snippet(token: str, fifo: str) -> str:
    """Java (one line) typed at the first prompt: the code's ``System.in`` (lines from
    ``fifo``: ``=`` and the line, ``.`` its end, ``!`` a failed read), its ``System.err``,
    and the class that sets and restores environment variables."""
    setup = " ".join(line.strip() for line in _SETUP.splitlines())
    setup = setup.replace("ENV", f"LmcEnv_{token}")
    for word, body in (("ASK", "i"), ("ERR", "x"), ("END", "f")):
        setup = setup.replace(word, _java(_tag(token, body)))
    return setup.replace("FIFO", _java(fifo)).strip()


def env_snippet(token: str, env: Mapping[str, str]) -> str:
    """Java that sets ``env`` until :func:`sync_snippet` restores it."""
    return f"LmcEnv_{token}.set({', '.join(_java(s) for pair in env.items() for s in pair)});"


def sync_snippet(token: str, n: int, *, restore: bool) -> str:
    """Java that restores the environment (if ``restore``) and prints the ``s<n>`` tag."""
    restoring = f"LmcEnv_{token}.restore(); " if restore else ""
    return f"{restoring}System.out.print({_java(_tag(token, f's{n}'))});"


class TagParser:
    """Bytes from jshell's terminal in, :class:`Event` items out, in order."""

    def __init__(self, token: str) -> None:
        self._prefix = f"\x1b]lmc;{token};".encode("ascii")
        self._tag = re.compile(re.escape(self._prefix) + rb"([pcs]\d+|[enxfi])\x07")
        self._out = codecs.getincrementaldecoder("utf-8")("replace")
        self._err = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = b""
        #: The tag whose text is being read (``e``, ``n``, ``x``), if any, and that text.
        self._inside = self._said = b""
        #: Just after a prompt: what jshell writes then is not output.
        self._fresh = False

    def feed(self, data: bytes) -> list[Event]:
        buf, self._held = self._held + data, b""
        events: list[Event] = []
        pos = 0
        while (start := buf.find(self._prefix, pos)) >= 0:
            match = self._tag.match(buf, start)
            if match is None and len(buf) - start < len(self._prefix) + 12:
                break  # perhaps a tag whose end is still to come
            self._text(buf[pos:start], events)
            pos = match.end() if match else start + 1
            if match:
                self._tagged(match.group(1), events)
            else:  # not a tag after all
                self._text(buf[start:pos], events)
        else:
            start = len(buf) - self._partial(buf[pos:])
        if self._fresh and len(buf[pos:start]) < 2 and _AFTER_PROMPT.startswith(buf[pos:start]):
            start = pos  # what follows the prompt may still be jshell's
        self._text(buf[pos:start], events)
        self._held = buf[start:]
        return events

    def flush(self) -> list[Event]:
        """What is held back, as output (the stream ended)."""
        events: list[Event] = []
        held, self._held = self._held, b""
        self._text(held, events)
        self._tagged(b"f", events)
        text = self._out.decode(b"", final=True)
        return [*events, Event("out", text)] if text else events

    def _tagged(self, body: bytes, events: list[Event]) -> None:
        kind = body[:1]
        if body in (b"e", b"n", b"x"):
            self._inside, self._said = body, b""
        elif body == b"f":
            if self._inside in (b"e", b"n"):
                text = self._said.decode("utf-8", "replace")
                events.append(Event(_KINDS[self._inside], text))
            self._inside = self._said = b""
        elif kind in (b"p", b"s", b"i"):
            events.append(Event(_KINDS[kind], n=int(body[1:] or 0)))
            if kind == b"p":
                self._inside, self._fresh = b"", True

    def _text(self, data: bytes, events: list[Event]) -> None:
        if not data:
            return
        if self._inside in (b"e", b"n"):
            self._said = (self._said + data)[:_SAID_LIMIT]
            return
        if self._fresh:
            data, self._fresh = data.removeprefix(_AFTER_PROMPT), False
        err = self._inside == b"x"
        text = (self._err if err else self._out).decode(data)
        if text:
            events.append(Event("err" if err else "out", text))

    def _partial(self, tail: bytes) -> int:
        """How many bytes at the end of ``tail`` may start a tag."""
        for size in range(min(len(tail), len(self._prefix)), 0, -1):
            if self._prefix.startswith(tail[-size:]):
                return size
        return 0
