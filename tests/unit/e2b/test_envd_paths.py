"""Which paths envd's files serve: the sandbox's home, by absolute path or
relative to it; '..' and paths elsewhere are refused; and who asks."""

from __future__ import annotations

import base64

import pytest
from starlette.requests import Request

from lmc_runtime.e2b.envd.paths import BadSandboxPath, OutsideHome, inside, relpath_of, user_of


@pytest.mark.parametrize(
    ("path", "relpath"),
    [
        ("/home/user", ""),
        ("/home/user/", ""),
        ("/home/user/a/b.txt", "a/b.txt"),
        ("a/b.txt", "a/b.txt"),
        ("./a//b.txt", "a/b.txt"),
        ("/home/user/./a", "a"),
    ],
)
def test_home_paths(path: str, relpath: str) -> None:
    assert relpath_of(path) == relpath
    assert inside(relpath) == ("/home/user/" + relpath if relpath else "/home/user")


@pytest.mark.parametrize("path", ["/", "/etc/passwd", "/tmp", "/home", "/home/userx/a", "/root"])
def test_paths_outside_the_home_are_403(path: str) -> None:
    with pytest.raises(OutsideHome) as caught:
        relpath_of(path)
    assert caught.value.status == 403


@pytest.mark.parametrize(
    "path", ["", "..", "a/../b", "/home/user/../user/x", "a\x00b", "a/" * 3000]
)
def test_bad_paths_are_400(path: str) -> None:
    with pytest.raises(BadSandboxPath):
        relpath_of(path)


def test_the_home_itself_is_refused_where_it_cannot_change() -> None:
    with pytest.raises(BadSandboxPath):
        relpath_of("/home/user", allow_home=False)


def _request(query: str = "", authorization: str | None = None) -> Request:
    headers = [] if authorization is None else [(b"authorization", authorization.encode())]
    return Request({"type": "http", "query_string": query.encode(), "headers": headers})


def _basic(user: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:".encode()).decode()


def test_users() -> None:
    assert user_of(_request()) == "user"
    assert user_of(_request("username=user")) == "user"
    assert user_of(_request(authorization=_basic("user"))) == "user"
    assert user_of(_request(authorization="Bearer something")) == "user"
    for bad in (
        _request("username=root"),
        _request("user=admin"),
        _request(authorization=_basic("root")),
    ):
        with pytest.raises(BadSandboxPath):
            user_of(bad)
    with pytest.raises(BadSandboxPath):
        user_of(_request(authorization="Basic ***"))
