"""The logs' redaction of E2B sandbox ids and tokens (bearer capabilities): in a
message, in its arguments and in its traceback, in text and in JSON."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from lmc_runtime.e2b.ids import new_sandbox_id, new_token, shown
from lmc_runtime.service.logs import configure_logging, hide, hide_sandbox_ids, unhide


@pytest.fixture
def secrets() -> Iterator[tuple[str, str]]:
    sandbox_id, token = new_sandbox_id(), new_token()
    hide(sandbox_id, shown(sandbox_id))
    hide(token)
    yield sandbox_id, token
    unhide(sandbox_id)
    unhide(token)


def _logged(form: str, emit: object) -> str:
    stream = io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    handler = configure_logging("info", form, stream=stream)
    try:
        assert callable(emit)
        emit(logging.getLogger("lmc_runtime.test"))
    finally:
        root.removeHandler(handler)
        for old in handlers:
            root.addHandler(old)
        root.setLevel(level)
    return stream.getvalue()


@pytest.mark.parametrize("form", ["text", "json"])
def test_a_live_id_and_token_never_show_whole(form: str, secrets: tuple[str, str]) -> None:
    sandbox_id, token = secrets

    def emit(logger: logging.Logger) -> None:
        logger.info("sandbox %s has token %s", sandbox_id, token)
        try:
            raise KeyError(f"no sandbox {sandbox_id} with {token}")
        except KeyError:
            logger.exception("failed on /sandboxes/%s", sandbox_id)

    text = _logged(form, emit)
    if form == "json":
        lines = [json.loads(line) for line in text.splitlines()]
        assert "KeyError" in lines[-1]["exception"]
        text = "\n".join(f"{line['message']}\n{line.get('exception', '')}" for line in lines)
    assert sandbox_id not in text and token not in text, text
    assert shown(sandbox_id) in text and "[redacted]" in text


def test_a_forgotten_id_shows_again_but_never_in_a_path() -> None:
    sandbox_id = new_sandbox_id()
    hide(sandbox_id, shown(sandbox_id))
    unhide(sandbox_id)

    def emit(logger: logging.Logger) -> None:
        logger.info("ended %s", sandbox_id)
        logger.info("GET /v2/sandboxes/%s/logs", sandbox_id)

    first, second = _logged("text", emit).splitlines()
    assert sandbox_id in first
    assert sandbox_id not in second and f"/v2/sandboxes/{sandbox_id[:6]}…/logs" in second


def test_only_a_sandbox_path_is_shortened() -> None:
    sandbox_id = new_sandbox_id()
    assert hide_sandbox_ids(f"/sandboxes/{sandbox_id}x") == f"/sandboxes/{sandbox_id[:6]}…x"
    untouched = f"/v1/sessions/abc/files/{sandbox_id}"
    assert hide_sandbox_ids(untouched) == untouched
