"""``lmc serve``'s configuration: flags over environment over TOML over defaults,
one clear error per bad value, sizes with units, the defaults in --help; its
logs (JSON lines, redacted tokens) and its access log."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from lmc_runtime.service.access import AccessLog
from lmc_runtime.service.command import configure_parser
from lmc_runtime.service.config import ConfigError, ServeConfig, load
from lmc_runtime.service.logs import configure_logging
from lmc_runtime.service.options import OPTIONS
from lmc_runtime.service.values import size

#: Never created: loading only checks that sockets inside it stay short enough.
DATA = "/tmp/lmc-cfg"
LONG_TOKEN = "sixteen-or-more-chars"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lmc serve")
    configure_parser(parser)
    return parser


def _load(
    argv: list[str], env: dict[str, str] | None = None, tmp: Path | None = None
) -> ServeConfig:
    data = ["--data-dir", DATA]
    return load(
        _parser().parse_args([*data, *argv]), {"LMC_TOKEN": "t0ken-value-0123456789", **(env or {})}
    )


def test_sizes_take_binary_units() -> None:
    assert size("512M") == 512 << 20
    assert size("2G") == 2 << 30
    assert size("1.5GiB") == 3 << 29
    assert size(4096) == 4096
    assert size("100") == 100
    with pytest.raises(ValueError, match="not a size"):
        size("12X")


def test_flag_beats_env_beats_file_beats_default(tmp_path: Path) -> None:
    file = tmp_path / "serve.toml"
    file.write_text('memory = "300M"\nprocesses = 100\nwall_seconds = 30\ncpu_seconds = 7\n')
    env = {"LMC_SERVE_MEMORY": "400M", "LMC_SERVE_PROCESSES": "200"}
    config = load(
        _parser().parse_args(["--config", str(file), "--memory", "500M", "--data-dir", DATA]),
        {"LMC_TOKEN": LONG_TOKEN, **env},
    )
    limits = config.settings.limits
    assert limits.memory_bytes == 500 << 20  # flag
    assert limits.processes == 200  # environment
    assert limits.wall_seconds == 30  # file
    assert limits.cpu_seconds == 7  # file
    assert limits.disk_bytes == 512 << 20  # built-in default
    assert config.settings.token == LONG_TOKEN


def test_every_option_has_an_env_name_a_flag_and_a_default_in_help() -> None:
    text = _parser().format_help()
    for option in OPTIONS:
        assert option.flag in text
        assert option.env_names[0] in " ".join(text.split()).replace("- ", "-")
    assert text.count("(default:") >= len(OPTIONS)
    assert "(default: 1G" in " ".join(text.split())


def test_the_config_file_is_found_through_the_environment(tmp_path: Path) -> None:
    file = tmp_path / "serve.toml"
    file.write_text('allowed_origins = ["https://a.example"]\nmetrics_public = true\n')
    config = _load([], {"LMC_SERVE_CONFIG": str(file)}, tmp_path)
    assert config.settings.allowed_origins == ("https://a.example",)
    assert config.settings.metrics_public


@pytest.mark.parametrize(
    ("argv", "env", "toml", "named"),
    [
        (["--memory", "lots"], {}, "", "--memory"),
        (["--port", "70000"], {}, "", "--port"),
        (["--log-level", "loud"], {}, "", "--log-level"),
        ([], {"LMC_SERVE_DISK": "-5M"}, "", "LMC_SERVE_DISK"),
        ([], {"LMC_SERVE_METRICS_PUBLIC": "perhaps"}, "", "LMC_SERVE_METRICS_PUBLIC"),
        ([], {}, "memory = true\n", "serve.toml: memory"),
        ([], {}, "processes = 2\n", "serve.toml: processes"),
        ([], {}, "colour = 'blue'\n", "unknown key 'colour'"),
        ([], {}, "memory = \n", "not valid TOML"),
    ],
)
def test_a_bad_value_is_one_error_naming_its_source(
    tmp_path: Path, argv: list[str], env: dict[str, str], toml: str, named: str
) -> None:
    if toml:
        (tmp_path / "serve.toml").write_text(toml)
        argv = [*argv, "--config", str(tmp_path / "serve.toml")]
    with pytest.raises(ConfigError) as caught:
        _load(argv, env, tmp_path)
    assert named in str(caught.value)
    assert "\n" not in str(caught.value)


def test_limits_can_be_turned_off_and_idle_timeout_zero_means_never(tmp_path: Path) -> None:
    config = _load(["--memory", "none", "--idle-timeout", "0"], {}, tmp_path)
    assert config.settings.limits.memory_bytes is None
    assert config.settings.idle_timeout is None


def test_transcript_sync_is_group_unless_asked_to_fsync_each_run(tmp_path: Path) -> None:
    assert _load([], {}, tmp_path).settings.transcript_sync == "group"
    assert _load(["--transcript-sync", "run"], {}, tmp_path).settings.transcript_sync == "run"
    assert (
        _load([], {"LMC_SERVE_TRANSCRIPT_SYNC": "run"}, tmp_path).settings.transcript_sync == "run"
    )
    with pytest.raises(ConfigError, match="TRANSCRIPT_SYNC"):
        _load([], {"LMC_SERVE_TRANSCRIPT_SYNC": "never"}, tmp_path)


def test_network_default_implies_allow_network_and_v_means_debug(tmp_path: Path) -> None:
    config = load(
        _parser().parse_args(["--network-default", "-v", "--data-dir", DATA]),
        {"LMC_TOKEN": LONG_TOKEN},
    )
    assert config.settings.allow_network and config.settings.network_default
    assert config.log_level == "debug"


def test_a_token_is_made_up_when_none_is_given(tmp_path: Path) -> None:
    config = load(_parser().parse_args(["--data-dir", DATA]), {})
    assert config.token_generated and config.settings.token
    assert not load(_parser().parse_args(["--no-auth", "--data-dir", DATA]), {}).settings.token


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    with _logging_to("json", ["s3cret-token"]) as stream:
        yield stream


@contextlib.contextmanager
def _logging_to(form: str, secrets: list[str]) -> Iterator[io.StringIO]:
    """The service's logging, in ``form``, into a string; the root logger's own after."""
    stream = io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure_logging("info", form, secrets, stream)
    try:
        yield stream
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_log_lines_parse_and_tokens_are_redacted(captured: io.StringIO) -> None:
    logging.getLogger("lmc_runtime.test").warning(
        "token is %s; url /x?token=abc&y=1", "s3cret-token"
    )
    (line,) = _lines(captured)
    assert {"time", "level", "logger", "message"} <= set(line)
    assert line["level"] == "warning" and line["logger"] == "lmc_runtime.test"
    assert "s3cret-token" not in captured.getvalue() and "abc" not in str(line["message"])
    assert "token=[redacted]&y=1" in str(line["message"])


@pytest.mark.anyio
async def test_access_log_has_one_line_per_request_without_the_token(
    captured: io.StringIO,
) -> None:
    async def hello(request: object) -> PlainTextResponse:
        return PlainTextResponse("hi", status_code=202)

    app = AccessLog(Starlette(routes=[Route("/hello", hello)]))
    transport = httpx.ASGITransport(app=app, client=("10.1.2.3", 4567))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.get("/hello", params={"token": "s3cret-token", "page": "2"})
    assert response.status_code == 202
    (line,) = [x for x in _lines(captured) if x["logger"] == "lmc_runtime.access"]
    assert line["method"] == "GET" and line["status"] == 202
    assert line["path"] == "/hello?token=[redacted]&page=2"
    assert line["client"] == "10.1.2.3:4567"
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert "s3cret-token" not in captured.getvalue()


@pytest.mark.anyio
async def test_a_path_with_an_encoded_newline_cannot_forge_a_text_log_line() -> None:
    """Regression: a request for ``/x%0a<time> ERROR ...`` (no token needed) wrote a
    second, fake ERROR line into the text log; an ESC reached the operator's terminal."""
    with _logging_to("text", []) as stream:
        app = AccessLog(Starlette(routes=[]))
        transport = httpx.ASGITransport(app=app)
        forged = "/v1/x%0a2026-11-24 05:41:20,549 ERROR lmc_runtime.service: FORGED%1b[2J"
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            assert (await client.get(forged.replace(" ", "%20"))).status_code == 404
        logging.getLogger("lmc_runtime.test").error("tail:\nline two")
    lines = stream.getvalue().splitlines()
    records = [line for line in lines if re.match(r"\d{4}-\S+ \S+ [A-Z]+ lmc_runtime\.", line)]
    assert len(records) == 2 and "lmc_runtime.access" in records[0], lines
    assert "FORGED" not in records[1] and lines[-1] == "  line two"
    assert "\x1b" not in stream.getvalue() and "FORGED\\x1b[2J" in stream.getvalue()


def test_the_example_file_loads_and_states_the_built_in_defaults() -> None:
    example = Path(__file__).parents[3] / "examples" / "serve.toml"
    from_file = _load(["--config", str(example)])
    built_in = _load([])
    assert from_file.settings.limits == built_in.settings.limits
    assert from_file.settings.max_sessions == built_in.settings.max_sessions
    assert from_file.settings.max_request_bytes == built_in.settings.max_request_bytes


@pytest.mark.parametrize("where", ["--token", "LMC_TOKEN", "LMC_SERVE_TOKEN", "file"])
def test_a_token_shorter_than_16_characters_is_refused(tmp_path: Path, where: str) -> None:
    """Regression: a short token (--token t) was accepted, and redacting it from
    the logs replaced every "t" in them with [redacted]; it is now refused, with
    where it came from and never its value."""
    short = "s3cr3t-15-chars"
    assert len(short) == 15
    argv, env = ["--data-dir", DATA], {}
    if where == "--token":
        argv += ["--token", short]
    elif where == "file":
        (tmp_path / "serve.toml").write_text(f'token = "{short}"\n')
        argv += ["--config", str(tmp_path / "serve.toml")]
    else:
        env[where] = short
    with pytest.raises(ConfigError) as refused:
        load(_parser().parse_args(argv), env)
    message = str(refused.value)
    named = f"{tmp_path / 'serve.toml'}: token" if where == "file" else where
    assert "at least 16 characters" in message and message.startswith(named), message
    assert short not in message
    assert load(_parser().parse_args(["--data-dir", DATA]), {"LMC_TOKEN": short + "!"})


def test_lmc_serve_with_a_short_token_exits_2_with_one_line() -> None:
    """Regression: ``lmc serve --token t`` started (and garbled its logs). The
    address cannot be listened on, so a start that got past the token ends too."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="lmc-") as tmp:
        argv = [sys.executable, "-m", "lmc_runtime", "serve", "--token", "t", "--no-sandbox"]
        argv += ["--data-dir", f"{tmp}/data", "--host", "256.0.0.1", "--port", "0"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and "at least 16 characters" in lines[0], done.stderr
        assert not Path(tmp, "data").exists()
