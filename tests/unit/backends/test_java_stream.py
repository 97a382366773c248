"""Splitting what jshell writes to its terminal into output and tagged words."""

from __future__ import annotations

from lmc_runtime.backends.java.stream import (
    Event,
    TagParser,
    env_snippet,
    init_script,
    setup_snippet,
)


def _tag(body: str) -> bytes:
    return f"\x1b]lmc;tok;{body}\x07".encode()


STREAM = (
    b"hello "
    + _tag("p1")
    + b" \x08out\n"
    + _tag("e")
    + b"Error:"
    + _tag("f")
    + _tag("e")
    + b"bad"
    + _tag("f")
    + _tag("n")
    + b"note"
    + _tag("f")
    + b"x"
    + _tag("x")
    + "err é\n".encode()
    + _tag("f")
    + _tag("p2")
    + b" \x08"
    + _tag("i")
    + _tag("s3")
    + "é".encode()
)
EXPECTED: list[Event] = [
    Event("out", "hello "),
    Event("prompt", n=1),
    Event("out", "out\n"),
    Event("error", "Error:"),
    Event("error", "bad"),
    Event("note", "note"),
    Event("out", "x"),
    Event("err", "err é\n"),
    Event("prompt", n=2),
    Event("input"),
    Event("sync", n=3),
    Event("out", "é"),
]


def _joined(events: list[Event]) -> list[Event]:
    """Adjacent pieces of one stream joined, however the bytes were cut."""
    out: list[Event] = []
    for event in events:
        last = out[-1] if out else None
        if last is not None and event.kind == last.kind and event.kind in ("out", "err"):
            out[-1] = Event(event.kind, last.text + event.text)
        else:
            out.append(event)
    return out


def test_every_cut_of_the_stream_gives_the_same_events() -> None:
    for cut in range(len(STREAM) + 1):
        parser = TagParser("tok")
        events = parser.feed(STREAM[:cut]) + parser.feed(STREAM[cut:]) + parser.flush()
        assert _joined(events) == EXPECTED, cut


def test_byte_by_byte() -> None:
    parser = TagParser("tok")
    events: list[Event] = []
    for index in range(len(STREAM)):
        events += parser.feed(STREAM[index : index + 1])
    assert _joined(events + parser.flush()) == EXPECTED


def test_what_only_looks_like_a_tag_is_output() -> None:
    parser = TagParser("tok")
    data = b"\x1b]lmc;other;p1\x07 and \x1b]lmc;tok;zz\x07" + b"." * 40
    assert "".join(e.text for e in parser.feed(data) + parser.flush()) == data.decode()


def test_a_space_after_a_prompt_is_output_when_no_backspace_follows() -> None:
    parser = TagParser("tok")
    events = parser.feed(_tag("p1") + b" ") + parser.feed(b"x") + parser.flush()
    assert _joined(events) == [Event("prompt", n=1), Event("out", " x")]


def test_a_stream_that_ends_inside_a_tag_keeps_its_bytes() -> None:
    parser = TagParser("tok")
    assert parser.feed(b"a\x1b]lm") == [Event("out", "a")]
    assert parser.flush() == [Event("out", "\x1b]lm")]


def test_the_setup_names_the_token_and_the_fifo() -> None:
    script = init_script("tok")
    assert "/set feedback" not in script  # the command line picks the mode
    assert "\x1b]lmc;tok;p%s\x07" in script
    java = setup_snippet("tok", "/work/jshell-stdin")
    assert "\n" not in java
    assert 'new FileInputStream("/work/jshell-stdin")' in java
    assert '"\\u001b]lmc;tok;i\\u0007"' in java
    assert "class LmcEnv_tok " in java


def test_environment_values_become_java_string_literals() -> None:
    java = env_snippet("tok", {"A": 'say "hi"\n', "B": "é\x01"})
    assert java == 'LmcEnv_tok.set("A", "say \\"hi\\"\\n", "B", "\\u00e9\\u0001");'
