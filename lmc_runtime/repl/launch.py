"""Starting the REPL: the display and the input its options and terminal call for."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

import anyio
from rich.console import Console

from .app import Repl
from .display import RichView
from .images import ImageStore, choose_preview
from .lines import LineReader
from .options import ReplOptions
from .plain import JsonlView, PlainView
from .prompt import ReplPrompt, open_history
from .view import View

__all__ = ["make_view", "run_repl"]


def make_view(options: ReplOptions, env: Mapping[str, str]) -> View:
    """The display ``options.mode`` asks for, on this process's stdout."""
    images = ImageStore(options.image_dir)
    if options.mode == "jsonl":
        return JsonlView(sys.stdout, sys.stderr)
    if options.mode == "plain":
        return PlainView(sys.stdout, images)
    console = Console(highlight=False)
    return RichView(console, images, choose_preview(env, console, enabled=options.preview))


async def _main(options: ReplOptions) -> int:
    view = make_view(options, os.environ)
    if sys.stdin.isatty():
        prompt = ReplPrompt(open_history(options.history_path), colour=options.mode == "rich")
        return await Repl(options, view, prompt, sys.stdin.fileno()).serve()
    return await Repl(options, view, LineReader(sys.stdin)).serve()


def run_repl(options: ReplOptions) -> int:
    """Run the REPL in its own event loop; return the exit status."""
    return anyio.run(_main, options, backend="asyncio")
