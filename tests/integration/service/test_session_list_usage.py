"""``GET /v1/sessions?usage=true``: every session's usage in one request."""

from __future__ import annotations

from .server import Server


def test_the_list_carries_usage_only_when_asked(server: Server) -> None:
    session_id = server.create(languages=["python"])
    try:
        server.execute(session_id, "block = bytearray(64 << 20)")
        with server.client() as client:
            plain = client.get("/v1/sessions").json()["sessions"]
            listed = client.get("/v1/sessions", params={"usage": "true"}).json()["sessions"]
            single = client.get(f"/v1/sessions/{session_id}").json()
        assert all(s["usage"] is None for s in plain)
        mine = next(s for s in listed if s["id"] == session_id)
        assert mine["usage"]["memory_bytes"] >= 64 << 20
        assert set(mine["usage"]) == set(single["usage"])
    finally:
        server.delete(session_id)
