"""Converters between LMC messages and other message formats.

One module per format, each with ``to_<format>(messages)`` and
``from_<format>(...)``: :mod:`.openai` (Chat Completions), :mod:`.langchain`
(LangChain v1 standard content blocks), :mod:`.aki` (the AKI chat context) and
:mod:`.jan` (Jan's thread messages); :mod:`.chunks` frames a stream as Open
Interpreter does (``to_chunks``, ``from_chunks``). They are pure functions. Whatever a format
cannot carry travels in its metadata or extras, so ``from_x(to_x(messages))``
gives back the same messages for every format.
"""

from __future__ import annotations

from . import aki, chunks, jan, langchain, openai

__all__ = ["aki", "chunks", "jan", "langchain", "openai"]
