"""Whole outputs cut by the budget, as a remote client reaches them."""

from __future__ import annotations

from .server import Server, final_status


def test_truncated_output_names_its_route_and_the_route_returns_it_whole(server: Server) -> None:
    """Guards the truncation note through lmc serve: it names a route the client
    can fetch (never the server's own path), and that route returns every byte."""
    session_id = server.create(limits={"output_bytes": 1000})
    try:
        code = "for i in range(2000):\n    print(f'line {i:05d}')"
        messages = server.execute(session_id, code)
        assert final_status(messages) == "ok", messages
        cut = [m for m in messages if (m.get("extras") or {}).get("status") == "truncated"]
        assert len(cut) == 1, messages
        route = cut[0]["extras"]["output_path"]
        assert route.startswith(f"/v1/sessions/{session_id}/outputs/"), route
        assert route in cut[0]["content"]
        everything = "".join(str(m.get("content") or "") for m in messages)
        assert str(server.data_dir) not in everything and "sessions/" + session_id + "/" not in (
            everything.replace(route, "")
        )
        with server.client() as client:
            whole = client.get(route)
            assert whole.status_code == 200, whole.text
            assert whole.text == "".join(f"line {i:05d}\n" for i in range(2000))
            base = f"/v1/sessions/{session_id}/outputs"
            for bad in ("missing.txt", "..%2Fdisk.img", "x%2Fy.txt"):
                refused = client.get(f"{base}/{bad}")
                assert refused.status_code in (400, 404), (bad, refused.text)
    finally:
        server.delete(session_id)
