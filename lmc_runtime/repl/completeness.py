"""When Enter runs the input, and how far the next line is indented.

Python uses the compiler's own answer (:mod:`codeop`), as the standard console
does. Other languages follow one rule, driven by a :class:`Syntax` profile:
the input is complete when no string or block comment is open, every bracket
is closed, the last line does not end with a backslash or a continuation
operator, and no block keyword (``if``/``fi``, ``do``/``done``...) is open. A
blank line always ends the input, so a rule that guesses wrong never traps
anyone: pressing Enter once more runs what is there.
"""

from __future__ import annotations

import codeop
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Syntax", "indent_after", "is_complete", "syntax_for"]

_PAIRS = {")": "(", "]": "[", "}": "{"}
_INDENT = "    "


@dataclass(frozen=True)
class Syntax:
    """What the generic completeness rule needs to know about a language."""

    quotes: str = "'\""
    line_comments: tuple[str, ...] = ()
    block_comment: tuple[str, str] | None = None
    #: Trailing operators after which an expression goes on (R's ``1 +``).
    continuations: tuple[str, ...] = ()
    #: Words that open and close blocks, counted outside strings and comments.
    openers: frozenset[str] = frozenset()
    closers: frozenset[str] = frozenset()
    #: ``<<WORD`` here-documents stay open until a line reads ``WORD``.
    heredocs: bool = False
    #: Enter always runs (languages whose input is not code, like HTML).
    always_complete: bool = False
    #: A trailing character after which the next line is indented.
    indenters: str = "([{"
    #: Trailing words after which the next line is indented (shell: ``do``, ``then``).
    indent_words: tuple[str, ...] = ()
    #: A line comment starts only at a word boundary (shell: ``${#x}`` is no comment).
    comment_after_space: bool = False


_SHELL = Syntax(
    quotes="'\"`",
    line_comments=("#",),
    continuations=("|", "&&", "||"),
    openers=frozenset({"if", "do", "case"}),
    closers=frozenset({"fi", "done", "esac"}),
    heredocs=True,
    comment_after_space=True,
    indent_words=("do", "then", "else"),
)
_SYNTAXES: dict[str, Syntax] = {
    "shell": _SHELL,
    "sh": _SHELL,
    "zsh": _SHELL,
    "javascript": Syntax(
        quotes="'\"`", line_comments=("//",), block_comment=("/*", "*/"), continuations=("=>",)
    ),
    "r": Syntax(
        line_comments=("#",),
        continuations=("+", "-", "*", "/", ",", "<-", "|>", "%>%", "=", "&", "|", "^", "~"),
    ),
    "applescript": Syntax(quotes='"', line_comments=("--", "#"), block_comment=("(*", "*)")),
    "html": Syntax(always_complete=True, indenters=""),
    "python": Syntax(indenters=":([{"),
}
_DEFAULT = Syntax(line_comments=("#",))
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def syntax_for(language: str) -> Syntax:
    """The profile for ``language`` (a canonical name); a generic one if none is known."""
    return _SYNTAXES.get(language, _DEFAULT)


def _last_line_blank(text: str) -> bool:
    return "\n" in text and not text.rsplit("\n", 1)[1].strip()


def _python_complete(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if codeop.compile_command(text, "<input>", "exec") is None:
                return False
        except (SyntaxError, ValueError, OverflowError):
            pass  # complete enough: the interpreter reports the error
    # Inside an indented block more may follow (``else:``): a blank line ends it.
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    return "\n" not in text.strip() or not last[:1].isspace()


@dataclass
class _Scan:
    """What is still open at the end of the input."""

    brackets: list[str]
    in_string: bool
    in_block_comment: bool
    depth: int
    code_tail: str  # the last line without its comment


def _scan(text: str, syntax: Syntax) -> _Scan:
    brackets: list[str] = []
    depth = 0
    quote: str | None = None
    block = False
    i, n = 0, len(text)
    line_start, comment_at = 0, n
    word: list[str] = []

    def end_word() -> None:
        nonlocal depth
        if word:
            token = "".join(word)
            depth += (token in syntax.openers) - (token in syntax.closers)
            word.clear()

    while i < n:
        ch = text[i]
        if block:
            assert syntax.block_comment is not None
            end = syntax.block_comment[1]
            if text.startswith(end, i):
                block, i = False, i + len(end)
                continue
        elif quote is not None:
            if ch == "\\" and quote != "'":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in syntax.quotes:
            end_word()
            quote = ch
        elif syntax.block_comment and text.startswith(syntax.block_comment[0], i):
            end_word()
            block, i = True, i + len(syntax.block_comment[0])
            continue
        elif any(text.startswith(c, i) for c in syntax.line_comments) and (
            i == 0 or not syntax.comment_after_space or text[i - 1].isspace()
        ):
            end_word()
            newline = text.find("\n", i)
            if newline < 0:
                comment_at = i
            i = n if newline < 0 else newline
            continue
        elif _WORD.match(ch) or (word and ch.isdigit()):
            word.append(ch)
        else:
            end_word()
            if ch in "([{":
                brackets.append(ch)
            elif ch in _PAIRS and brackets and brackets[-1] == _PAIRS[ch]:
                brackets.pop()
        if ch == "\n":
            line_start = i + 1
        i += 1
    end_word()
    return _Scan(brackets, quote is not None, block, depth, text[line_start:comment_at])


def _heredoc_open(text: str) -> bool:
    lines = text.split("\n")
    for number, line in enumerate(lines):
        for match in _HEREDOC.finditer(line):
            word = match.group(2)
            if not any(later.strip() == word for later in lines[number + 1 :]):
                return True
    return False


def _generic_complete(text: str, syntax: Syntax) -> bool:
    if syntax.always_complete:
        return True
    scan = _scan(text, syntax)
    if scan.brackets or scan.in_string or scan.in_block_comment or scan.depth > 0:
        return False
    tail = text.rstrip(" \t")
    if tail.endswith("\\"):
        return False
    code_tail = scan.code_tail.rstrip()
    if code_tail and any(code_tail.endswith(op) for op in syntax.continuations):
        return False
    return not (syntax.heredocs and _heredoc_open(text))


_RULES: dict[str, Callable[[str], bool]] = {"python": _python_complete}


def _repl_line(text: str) -> bool:
    """A raw LMC message (``{...``) or a ``%command``: one line, whatever the language."""
    stripped = text.strip()
    one_line = "\n" not in stripped
    return stripped.startswith("{") or (one_line and re.match(r"%[A-Za-z]", stripped) is not None)


def is_complete(language: str, text: str) -> bool:
    """Whether Enter at the end of ``text`` should run it in ``language``."""
    if not text.strip() or _last_line_blank(text) or _repl_line(text):
        return True
    if text.lstrip().startswith("%%"):  # an IPython cell magic: a blank line ends the cell
        return False
    rule = _RULES.get(language)
    return rule(text) if rule is not None else _generic_complete(text, syntax_for(language))


def indent_after(language: str, text_before_cursor: str) -> str:
    """The indentation for a new line typed after ``text_before_cursor``."""
    line = text_before_cursor.rsplit("\n", 1)[-1]
    indent = line[: len(line) - len(line.lstrip())]
    stripped = line.rstrip()
    syntax = syntax_for(language)
    last_word = re.split(r"[\s;&|]+", stripped)[-1]
    if (stripped and stripped[-1] in syntax.indenters) or last_word in syntax.indent_words:
        indent += _INDENT
    return indent
