"""The control plane through E2B's Python SDK, beyond create and kill: listing
with metadata and state filters a page at a time, metrics, the features this
server does not have (501, never a 404 or a 500), and secure sandboxes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from e2b import Sandbox, SandboxException, SandboxQuery, SandboxState

from tests.integration.e2b.conftest import E2B_TOKEN
from tests.integration.service.server import Server

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def three(e2b_env: Server) -> Iterator[list[Sandbox]]:
    """Three sandboxes with metadata (one with a space and an ampersand in it)."""
    made = [
        Sandbox.create(timeout=120, metadata={"team": "a b&c", "n": "1"}),
        Sandbox.create(timeout=120, metadata={"team": "other", "n": "2"}),
        Sandbox.create(timeout=120, metadata={"team": "a b&c", "n": "3"}),
    ]
    try:
        yield made
    finally:
        for sbx in made:
            sbx.kill()


def test_the_list_filters_by_metadata_as_the_sdk_encodes_it(three: list[Sandbox]) -> None:
    found = Sandbox.list(query=SandboxQuery(metadata={"team": "a b&c"})).next_items()
    assert sorted(s.metadata["n"] for s in found) == ["1", "3"]
    both = SandboxQuery(metadata={"team": "a b&c", "n": "3"})
    assert [s.sandbox_id for s in Sandbox.list(query=both).next_items()] == [three[2].sandbox_id]
    none = SandboxQuery(metadata={"team": "nobody"})
    assert Sandbox.list(query=none).next_items() == []


def test_the_list_comes_a_page_at_a_time_with_next_tokens(three: list[Sandbox]) -> None:
    mine = {s.sandbox_id for s in three}
    paginator = Sandbox.list(limit=2)
    pages = []
    while paginator.has_next:
        pages.append([s.sandbox_id for s in paginator.next_items()])
        assert len(pages) < 10, "the pages never end"
    assert all(len(page) <= 2 for page in pages)
    seen = [i for page in pages for i in page]
    assert len(seen) == len(set(seen)), "a sandbox came twice"
    assert mine <= set(seen)
    assert len(pages) >= 2


def test_the_list_filters_by_state(three: list[Sandbox]) -> None:
    three[0].pause()
    paused = Sandbox.list(query=SandboxQuery(state=[SandboxState.PAUSED])).next_items()
    assert [s.sandbox_id for s in paused] == [three[0].sandbox_id]
    assert paused[0].state == SandboxState.PAUSED
    running = Sandbox.list(query=SandboxQuery(state=[SandboxState.RUNNING])).next_items()
    assert three[0].sandbox_id not in {s.sandbox_id for s in running}
    assert {three[1].sandbox_id, three[2].sandbox_id} <= {s.sandbox_id for s in running}


def test_metrics_come_right_after_creation(e2b_env: Server) -> None:
    sbx = Sandbox.create(timeout=60)
    try:
        metrics = sbx.get_metrics()
        assert len(metrics) >= 1
        first = metrics[0]
        assert first.cpu_count >= 1
        assert 0 <= first.cpu_used_pct <= 100
        assert 0 < first.mem_used < first.mem_total
        assert 0 <= first.disk_used <= first.disk_total and first.disk_total > 0
        assert abs(first.timestamp.timestamp() - time.time()) < 60
        # Another interval's sample comes while it runs (every 5 s).
        deadline = time.monotonic() + 30
        while len(sbx.get_metrics()) < 2:
            assert time.monotonic() < deadline, "no second sample in 30 s"
            time.sleep(0.5)
    finally:
        sbx.kill()


def test_metrics_follow_what_the_code_does(e2b_env: Server) -> None:
    from e2b_code_interpreter import Sandbox as CodeSandbox

    sbx = CodeSandbox.create(timeout=120)
    try:
        before = sbx.get_metrics()[-1].mem_used
        code = (
            "import threading, time\n"
            "held = bytearray(200 << 20)\n"
            "def spin():\n"
            "    end = time.time() + 20\n"
            "    while time.time() < end: pass\n"
            "threading.Thread(target=spin, daemon=True).start()\n"
        )
        assert sbx.run_code(code).error is None
        deadline = time.monotonic() + 40
        while True:
            last = sbx.get_metrics()[-1]
            if last.cpu_used_pct > 20 and last.mem_used > before + (150 << 20):
                break
            assert time.monotonic() < deadline, f"the metrics did not show the work: {last}"
            time.sleep(0.5)
    finally:
        sbx.kill()


def test_the_metrics_of_several_sandboxes_at_once(three: list[Sandbox], e2b_env: Server) -> None:
    ids = ",".join([three[0].sandbox_id, three[1].sandbox_id, "z" * 32])
    with httpx.Client(base_url=e2b_env.url, headers={"X-API-Key": E2B_TOKEN}) as client:
        answer = client.get("/sandboxes/metrics", params={"sandbox_ids": ids})
    assert answer.status_code == 200, answer.text
    latest = answer.json()["sandboxes"]
    assert set(latest) == {three[0].sandbox_id, three[1].sandbox_id}
    assert latest[three[0].sandbox_id]["memTotal"] > 0


@pytest.mark.parametrize(
    ("method", "path", "named"),
    [
        ("POST", "/sandboxes/{id}/snapshots", "snapshots"),
        ("GET", "/snapshots", "snapshots"),
        ("PUT", "/sandboxes/{id}/network", "network"),
        ("GET", "/sandboxes/{id}/logs", "logs"),
        ("GET", "/v2/sandboxes/{id}/logs", "logs"),
        ("GET", "/templates", "templates"),
        ("POST", "/v3/templates", "templates"),
        ("DELETE", "/templates/base", "templates"),
        ("GET", "/volumes", "volumes"),
        ("POST", "/secrets", "secrets"),
        ("GET", "/teams", "teams"),
        ("PATCH", "/sandboxes/{id}", "PATCH"),
    ],
)
def test_what_is_not_here_is_a_501_in_e2b_shape(
    e2b_env: Server, method: str, path: str, named: str
) -> None:
    sbx = Sandbox.create(timeout=60)
    try:
        with httpx.Client(base_url=e2b_env.url, headers={"X-API-Key": E2B_TOKEN}) as client:
            answer = client.request(method, path.format(id=sbx.sandbox_id), json={})
        assert answer.status_code == 501, answer.text
        body = answer.json()
        assert body["code"] == 501 and named in body["message"]
        assert "lmc-runtime" in body["message"]
    finally:
        sbx.kill()


def test_a_snapshot_through_the_sdk_says_why(e2b_env: Server) -> None:
    sbx = Sandbox.create(timeout=60)
    try:
        with pytest.raises(SandboxException, match="snapshots"):
            sbx.create_snapshot()
    finally:
        sbx.kill()


def test_fork_through_the_sdk_copies_the_files_into_sandboxes_of_their_own(
    e2b_env: Server,
) -> None:
    """E2B's fork is the lmc API's: a new session each, the working directory copied."""
    sbx = Sandbox.create(timeout=60)
    forks: list[Sandbox] = []
    try:
        sbx.files.write("note.txt", "from the parent")
        made = sbx.fork(timeout=60, count=2)
        forks = [each for each in made if isinstance(each, Sandbox)]
        assert len(forks) == 2, made
        ids = {sbx.sandbox_id, *(each.sandbox_id for each in forks)}
        assert len(ids) == 3
        assert forks[0].files.read("note.txt") == "from the parent"
        forks[0].files.write("note.txt", "changed in the fork")
        assert sbx.files.read("note.txt") == "from the parent"
        assert forks[1].files.read("note.txt") == "from the parent"
    finally:
        for each in forks:
            each.kill()
        sbx.kill()


def test_a_501_for_an_unknown_sandbox_is_still_its_404(e2b_env: Server) -> None:
    with httpx.Client(base_url=e2b_env.url, headers={"X-API-Key": E2B_TOKEN}) as client:
        answer = client.post(f"/sandboxes/{'a' * 32}/fork", json={})
    assert answer.status_code == 404
    assert answer.json()["code"] == 404


def test_a_timeout_past_the_maximum_is_cut_to_it(e2b_env: Server) -> None:
    sbx = Sandbox.create(timeout=10 * 24 * 3600)
    try:
        left = sbx.get_info().end_at.timestamp() - time.time()
        assert 23 * 3600 < left <= 24 * 3600 + 5
    finally:
        sbx.kill()


def test_mcp_and_volumes_are_refused_clearly(e2b_env: Server) -> None:
    with httpx.Client(base_url=e2b_env.url, headers={"X-API-Key": E2B_TOKEN}) as client:
        for extra in ({"mcp": {"github": {}}}, {"volumeMounts": [{"name": "v", "path": "/d"}]}):
            answer = client.post("/v2/sandboxes", json={"templateID": "base", **extra})
            assert answer.status_code == 501, answer.text
        answer = client.post(
            "/v2/sandboxes", json={"templateID": "base", "autoResume": {"enabled": True}}
        )
        assert answer.status_code == 400 and "autoPause" in answer.json()["message"]


def test_the_list_filters_by_start_time_at_or_after(three: list[Sandbox]) -> None:
    """Guards startedAfter's "at or after": the sandbox's own start time lists it."""
    info = three[0].get_info()
    at = Sandbox.list(query=SandboxQuery(started_after=info.started_at)).next_items()
    assert three[0].sandbox_id in [s.sandbox_id for s in at]
    later = info.started_at + timedelta(seconds=60)
    after = Sandbox.list(query=SandboxQuery(started_after=later)).next_items()
    assert three[0].sandbox_id not in [s.sandbox_id for s in after]
