"""A cell of Java cut into the chunks jshell must see whole, and typed so it does.

jshell runs what it has read as soon as that is a complete snippet, so a chain
whose next line starts with ``.``, or an ``else`` on a line of its own, would
run half a statement. :func:`plan_cell` cuts the cell where the code is complete
*and* the next line does not go on with it. In a chunk, every line but the last
opens a comment that the next line closes (``/*`` ... ``*/``), so jshell waits
for the whole; a last line that does not end in ``;`` gets one. Lines keep their
numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Chunk", "Plan", "plan_cell"]

_TOKENS = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>//[^\n]*)
    |(?P<block>/\*.*?(?:\*/|\Z))
    |(?P<text>\"\"\"(?:\\.|[^\\])*?(?:\"\"\"|\Z))
    |(?P<string>"(?:\\.|[^"\\\n])*(?P<shut>")?)
    |(?P<char>'(?:\\.|[^'\\\n])*(?P<cshut>')?)
    |(?P<word>(?:[^\W\d]|\$)[\w$]*)
    |(?P<number>\d[\w.]*)
    |(?P<op>>>>=|<<=|>>=|>>>|->|::|\+\+|--|&&|\|\||[-+*/%&|^!=<>]=|<<|>>|.)""",
    re.VERBOSE | re.DOTALL,
)
_CONTROL = frozenset({"if", "for", "while", "switch", "synchronized", "catch"})
#: Words after which a statement cannot end.
_OPEN_WORDS = frozenset(
    {
        *("new", "else", "do", "try", "finally", "throw", "import", "package", "extends"),
        *("implements", "permits", "throws", "instanceof", "class", "interface", "enum"),
        *("public", "private", "protected", "static", "final", "abstract"),
    }
)
#: What ends a statement that is complete as it stands.
_ENDS = frozenset({")", "]", "}", ";", "++", "--"})
#: A line starting with one of these goes on with the statement before it.
_GOES_ON = frozenset(
    {
        *(".", ")", "]", "{", "?", ":", "->", ",", "::", "=", "&&", "||", "&", "|", "^", "+", "-"),
        *("*", "/", "%", "==", "!=", "<", ">", "<=", ">=", "else", "catch", "finally"),
        *("instanceof", "extends", "implements", "throws", "permits"),
    }
)
#: Control characters, which the terminal would act on, become Java's own escapes.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class _Tok:
    text: str
    line: int  # 0-based line where it starts


@dataclass(frozen=True)
class Chunk:
    """Lines ``first`` .. of the cell (1-based), as the user wrote them and as typed."""

    first: int
    source: tuple[str, ...]
    typed: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.typed)


@dataclass(frozen=True)
class Plan:
    """The chunks of a cell, or why it cannot be sent: ``(line, message)``."""

    chunks: tuple[Chunk, ...] = ()
    problem: tuple[int, str] | None = None


@dataclass
class _Scan:
    """What the tokens say about each line of the cell."""

    tokens: list[_Tok]
    spans: set[int]  # lines that end inside a comment or text block
    unclosed: set[int]  # lines that end in an unterminated string or char literal
    comment_at: dict[int, int]  # where a trailing ``//`` comment starts
    starts: list[int]  # lines where a multi-line comment or text block starts
    unfinished: int | None = None  # the line of a comment or text block the cell ends in


def _scan(code: str) -> _Scan:
    scan = _Scan([], set(), set(), {}, [])
    line, line_start = 0, 0
    for match in _TOKENS.finditer(code):
        kind, text = match.lastgroup, match.group()
        newlines = text.count("\n")
        if kind in ("string", "char") and not (match.group("shut") or match.group("cshut")):
            scan.unclosed.add(line)
        if kind == "comment":
            scan.comment_at[line] = match.start() - line_start
        if kind in ("block", "text"):
            closing = "*/" if kind == "block" else '"""'
            if len(text) < 2 * len(closing) or not text.endswith(closing):
                scan.unfinished = line
            if newlines:
                scan.spans.update(range(line, line + newlines))
                scan.starts.append(line)
        if kind in ("text", "string", "char", "word", "number", "op"):
            scan.tokens.append(_Tok(text, line))
        if newlines:
            line += newlines
            line_start = match.start() + text.rfind("\n") + 1
    return scan


def _matching_open(tokens: list[_Tok]) -> int | None:
    """The index of the ``(`` that the last token, a ``)``, closes."""
    depth = 0
    for index in range(len(tokens) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(tokens[index].text, 0)
        if depth == 0:
            return index
    return None


def _wants_more(tokens: list[_Tok]) -> bool:
    """Whether the statement in ``tokens`` cannot end after its last token."""
    last = tokens[-1].text
    if last == "}":  # a do without its while, a try without catch or finally
        if tokens[0].text == "try" and tokens[1].text != "(":
            return not any(tok.text in ("catch", "finally") for tok in tokens)
        return tokens[0].text == "do"
    if last == ")":
        opened = _matching_open(tokens)
        before = tokens[opened - 1].text if opened else ""
        if before == "while" and opened and opened > 1 and tokens[opened - 2].text == "}":
            return False  # the end of a do-while
        annotation = opened is not None and opened > 1 and tokens[opened - 2].text == "@"
        return before in _CONTROL or annotation
    if len(tokens) > 1 and tokens[-2].text == "@":
        return True
    if last in _OPEN_WORDS:
        return True
    word = last[0].isalnum() or last[0] in "_$\"'"
    return not word and last not in _ENDS


def _chunk(lines: list[str], first: int, last: int, scan: _Scan, toks: list[_Tok]) -> Chunk:
    semicolon = toks[-1].text != ";" and (toks[-1].text != "}" or _wants_more(toks))
    typed = []
    for index in range(first, last + 1):
        line = lines[index]
        cut = scan.comment_at.get(index, len(line))
        if index < last and index not in scan.spans:
            comment = line[cut:]
            line = line[:cut] + "/*" + ("" if "*/" in comment else comment)
        elif index == last and semicolon:
            line = line[:cut] + ";" + line[cut:]
        if index > first and index - 1 not in scan.spans:
            line = "*/" + line
        typed.append(line)
    return Chunk(first + 1, tuple(lines[first : last + 1]), tuple(typed))


def plan_cell(code: str) -> Plan:
    """Cut ``code`` into chunks, or say why it cannot run (it ends mid-statement)."""
    code = _CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", code.replace("\r\n", "\n"))
    lines = code.split("\n")
    scan = _scan(code)
    if scan.unfinished is not None:
        problem = "reached end of input while parsing: a comment or text block is never closed"
        return Plan(problem=(scan.unfinished + 1, problem))
    chunks: list[Chunk] = []
    start: int | None = None
    taken: list[_Tok] = []
    stack: list[tuple[str, int]] = []
    position = 0
    for index in range(len(lines)):
        here = position < len(scan.tokens) and scan.tokens[position].line == index
        if start is None and (index in scan.starts or here):
            start, taken = index, []
        while position < len(scan.tokens) and scan.tokens[position].line == index:
            tok = scan.tokens[position]
            taken.append(tok)
            position += 1
            if tok.text in "([{":
                stack.append((tok.text, tok.line))
            elif tok.text in ")]}" and stack:
                stack.pop()
        if start is None or index in scan.spans or (stack and index not in scan.unclosed):
            continue
        following = scan.tokens[position] if position < len(scan.tokens) else None
        if taken and index not in scan.unclosed and following is not None:
            if _wants_more(taken) or following.text in _GOES_ON:
                continue
            if following.text == "while" and taken[0].text == "do":
                continue
        if taken:
            if taken[0].text == "/":
                return Plan(problem=(start + 1, "jshell commands (such as /vars) are not run here"))
            chunks.append(_chunk(lines, start, index, scan, taken))
        start, stack = None, []
    if start is not None and taken and stack:
        opened, line = stack[-1]
        problem = f"reached end of input while parsing: this '{opened}' is never closed"
        return Plan(problem=(line + 1, problem))
    return Plan(tuple(chunks))
