"""The secrets of ``lmc serve --secret``: their syntax, values and placeholders."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmc_runtime.egress.secret_specs import (
    HostRule,
    SecretError,
    load_values,
    parse_secret,
    parse_secrets,
)
from lmc_runtime.egress.secrets import SecretBroker, UnknownSecret, placeholder

VALUE = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def test_a_secret_names_its_hosts_and_where_its_value_is(tmp_path: Path) -> None:
    spec = parse_secret("OPENAI_KEY:api.openai.com,*.example.org:8443")
    assert spec.name == "OPENAI_KEY" and spec.file is None
    assert spec.hosts == (HostRule("api.openai.com"), HostRule("*.example.org", 8443))
    assert spec.goes_to("api.openai.com", 443) and spec.goes_to("API.openai.com.", 80)
    assert not spec.goes_to("api.openai.com", 8443)
    assert spec.goes_to("a.b.example.org", 8443) and not spec.goes_to("example.org", 8443)
    assert not spec.goes_to("evilexample.org", 8443)
    assert parse_secret(f"KEY:h.test@{tmp_path}/key").file == tmp_path / "key"


@pytest.mark.parametrize(
    "text",
    ["KEY", "1KEY:h.test", "KEY:", "KEY:bad host", "KEY:h.test:99999", "KEY:h.test@", "KEY:*"],
)
def test_a_malformed_secret_is_refused(text: str) -> None:
    with pytest.raises(SecretError):
        parse_secret(text)


def test_several_secrets_and_no_name_twice() -> None:
    assert [s.name for s in parse_secrets("A:a.test; B:b.test")] == ["A", "B"]
    assert [s.name for s in parse_secrets(["A:a.test", "B:b.test"])] == ["A", "B"]
    with pytest.raises(SecretError, match="more than once"):
        parse_secrets(["A:a.test", "A:b.test"])


def test_values_come_from_the_environment_or_a_file(tmp_path: Path) -> None:
    file = tmp_path / "key"
    file.write_text(VALUE + "\n")
    specs = parse_secrets([f"FROM_FILE:a.test@{file}", "FROM_ENV:b.test"])
    values = load_values(specs, {"FROM_ENV": VALUE})
    assert values == {"FROM_FILE": VALUE.encode(), "FROM_ENV": VALUE.encode()}


def test_a_missing_or_unusable_value_is_named_never_shown(tmp_path: Path) -> None:
    with pytest.raises(SecretError, match="no variable KEY"):
        load_values(parse_secrets(["KEY:a.test"]), {})
    with pytest.raises(SecretError, match="cannot read"):
        load_values(parse_secrets([f"KEY:a.test@{tmp_path}/absent"]), {})
    for bad in (VALUE + "\r\nX-Injected: 1", VALUE + "\0"):
        with pytest.raises(SecretError, match="control character") as caught:
            load_values(parse_secrets(["KEY:a.test"]), {"KEY": bad})
        assert VALUE not in str(caught.value)


def test_placeholders_are_random_and_say_which_secret() -> None:
    first, second = placeholder("OPENAI_KEY"), placeholder("OPENAI_KEY")
    assert first != second
    assert first.startswith("lmc-secret-openai-key-") and len(first.rsplit("-", 1)[1]) == 32


def test_the_broker_gives_each_session_its_own_placeholders() -> None:
    broker = SecretBroker(
        [parse_secret("KEY:a.test"), parse_secret("OTHER:b.test")],
        {"KEY": VALUE.encode(), "OTHER": b"other"},
    )
    one, two = broker.open("s1", ["KEY"]), broker.open("s2", ["KEY", "OTHER"])
    assert one["KEY"] != two["KEY"] and VALUE not in repr(broker)
    assert broker.replacements("s1", "a.test", 443) == {one["KEY"].encode(): VALUE.encode()}
    assert broker.replacements("s1", "b.test", 443) == {}
    assert broker.replacements("s2", "b.test", 443) == {two["OTHER"].encode(): b"other"}
    assert broker.wants("s2", "a.test", 80) and not broker.wants("s3", "a.test", 443)
    assert broker.wants("s2/1", "b.test", 443)  # a namespace of the session, as the gateway keys it
    assert not broker.wants("s", "a.test", 443) and not broker.wants("s2x/1", "a.test", 443)
    with pytest.raises(UnknownSecret, match="KEY, OTHER"):
        broker.open("s4", ["NOPE"])
    with pytest.raises(ValueError, match="no value"):
        SecretBroker([parse_secret("KEY:a.test")], {})
