"""The error codes of ``lmc serve``: written once, known to both ends."""

from __future__ import annotations

from enum import StrEnum

from lmc_runtime.error_codes import ErrorCode
from lmc_runtime.remote import problems as client
from lmc_runtime.service import problems as server


def _server_codes() -> set[str]:
    mapped = {code for code, _ in server._MAPPED.values()}
    by_errno = {code for code, _ in server._ERRNO_MAPPED.values()}
    return mapped | by_errno | set(server._CODES.values())


def test_error_code_is_one_str_enum() -> None:
    """The codes are one StrEnum whose values are the wire strings."""
    assert issubclass(ErrorCode, StrEnum)
    assert ErrorCode.BAD_REQUEST == "bad_request"
    assert all(code.value == code.name.lower() for code in ErrorCode)


def test_server_writes_every_code_from_the_enum() -> None:
    """No code of the server's tables is a bare string outside ErrorCode."""
    tables = [code for code, _ in server._MAPPED.values()]
    tables += [code for code, _ in server._ERRNO_MAPPED.values()]
    tables += list(server._STATUS)
    tables += list(server._CODES.values())
    assert all(isinstance(code, ErrorCode) for code in tables), tables


def test_every_server_code_is_known_to_the_client() -> None:
    """Each code the server can answer is in the client's table, answered as a
    user's error, or deliberately left to its HTTP status."""
    known = set(client._BY_CODE) | set(client.USER_ERRORS) | set(client.BY_STATUS)
    assert _server_codes() <= known, _server_codes() - known
    answered = {ErrorCode.REQUEST_TIMEOUT, ErrorCode.TOO_MANY_CONNECTIONS, ErrorCode.INTERNAL}
    assert answered <= known


def test_codes_left_to_status_are_not_also_in_the_table() -> None:
    """A code is either mapped by name or by status, never both."""
    assert not set(client._BY_CODE) & set(client.BY_STATUS)


def test_wire_values_are_unchanged() -> None:
    """A code's string on the wire is the one clients already compare."""
    error = client.error_from(404, ErrorCode.SESSION_ENDED, "gone")
    assert error.code == "session_ended"
    assert server.problem_for(ValueError("x")) == (400, "bad_request", "invalid value: x")


def test_every_code_the_server_maps_has_its_one_status() -> None:
    """A code answers with one HTTP status, whichever exception raised it."""
    mapped = {code for code, _ in server._MAPPED.values()}
    mapped |= {code for code, _ in server._ERRNO_MAPPED.values()}
    assert mapped <= set(server._STATUS), mapped - set(server._STATUS)
    assert all(400 <= status < 600 for status in server._STATUS.values())
    assert server.problem_for(FileNotFoundError(2, "gone")) == (
        404,
        "file_not_found",
        "no such file: gone",
    )
