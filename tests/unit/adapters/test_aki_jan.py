"""lmc_runtime.adapters.aki and .jan: the shapes each format requires."""

from __future__ import annotations

from lmc_runtime.adapters.aki import from_aki, to_aki
from lmc_runtime.adapters.jan import from_jan, to_jan
from lmc_runtime.messages import Message

from .conversation import CONVERSATION, PNG_1PX


def test_aki_roles_and_content_items() -> None:
    context = to_aki(CONVERSATION)
    assert {m["role"] for m in context} <= {"system", "user", "assistant"}
    items = [item for m in context for item in m["content"]]
    keys = [next(k for k in item if k != "lmc") for item in items]
    assert keys.count("image") == 1 and set(keys) <= {"text", "image", "audio", "video"}
    image = next(item for item in items if "image" in item)
    assert image["image"] == "data:image/png;base64," + PNG_1PX


def test_foreign_aki_context_reads_back() -> None:
    context = [
        {"role": "system", "content": [{"text": "be brief"}]},
        {
            "role": "user",
            "content": [
                {"text": "look"},
                {"image": "data:image/png;base64," + PNG_1PX},
                {"video": "clip.mp4"},
            ],
        },
        {"role": "assistant", "content": [{"text": "a dot"}]},
    ]
    got = from_aki(context)
    assert got[0] == Message(
        role="user", type="message", content="be brief", extras={"aki_role": "system"}
    )
    assert got[2] == Message(role="user", type="image", format="base64.png", content=PNG_1PX)
    assert got[3].extras == {"aki_item": {"video": "clip.mp4"}}
    assert got[4] == Message(role="assistant", type="message", content="a dot")
    assert to_aki(got[:1])[0]["role"] == "system"


def test_jan_thread_messages_have_jans_fields() -> None:
    records = to_jan(CONVERSATION, thread_id="t1")
    for record in records:
        assert record["object"] == "thread.message"
        assert record["thread_id"] == "t1" and record["assistant_id"] == "lmc-runtime"
        assert isinstance(record["created_at"], int) and record["role"] in ("user", "assistant")
        text = record["content"][0]
        assert text["type"] == "text" and set(text["text"]) == {"value", "annotations"}
    code = records[2]["content"][0]["text"]["value"]
    assert code.startswith("```python\n") and code.endswith("\n```")
    assert records[5]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_messages_written_by_jan_itself_read_back() -> None:
    record = {
        "id": "01HX",
        "object": "thread.message",
        "thread_id": "jan_1",
        "assistant_id": "jan",
        "role": "user",
        "created_at": 1698983503,
        "metadata": {},
        "content": [{"type": "text", "text": {"value": "Hi!?", "annotations": []}}],
    }
    assert from_jan([record]) == [
        Message(
            role="user",
            type="message",
            content="Hi!?",
            id="01HX",
            conversation_id="jan_1",
            created_at=1698983503.0,
        )
    ]
