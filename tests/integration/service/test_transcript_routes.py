"""``GET /v1/transcripts``: a session's runs read back from the store."""

from __future__ import annotations

from .server import Server


def test_the_routes_need_the_token(server: Server) -> None:
    with server.client(None) as client:
        assert client.get("/v1/transcripts").status_code == 401
        assert client.get("/v1/transcripts/anything").status_code == 401


def test_a_sessions_runs_come_back_in_order_with_their_statuses(server: Server) -> None:
    session_id = server.create(languages=["python"], title="read back")
    server.execute(session_id, "print('first')")
    server.execute(session_id, "1 / 0")
    server.delete(session_id)  # its transcript outlives it
    with server.client() as client:
        listing = client.get("/v1/transcripts").json()
        found = [t for t in listing["transcripts"] if t["id"] == session_id]
        assert found and found[0]["title"] == "read back"
        assert found[0]["metadata"]["languages"] == ["python"]
        transcript = client.get(f"/v1/transcripts/{session_id}").json()
    messages = transcript["messages"]
    codes = [m["content"] for m in messages if m["role"] == "assistant"]
    assert codes == ["print('first')", "1 / 0"]
    statuses = [
        m["extras"]["status"]
        for m in messages
        if m["format"] == "active_line" and m["content"] is None
    ]
    assert statuses == ["ok", "error"]
    assert any(m.get("content") == "first\n" for m in messages)


def test_an_unknown_or_malformed_id_is_a_404(server: Server) -> None:
    with server.client() as client:
        for bad in ("nosuchsession", "..", "a%2F..%2Fb", "%00"):
            response = client.get(f"/v1/transcripts/{bad}")
            assert response.status_code == 404, (bad, response.text)
            assert response.json()["error"]["code"]
