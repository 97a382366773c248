"""The conversation the golden files are made of: code, output, an image and an error."""

from __future__ import annotations

from lmc_runtime.messages import Message

PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
T0 = 1_700_000_000.25
CONV = "thread-golden"


def _m(**fields: object) -> Message:
    return Message.model_validate({"conversation_id": CONV, **fields})


CONVERSATION: list[Message] = [
    _m(
        role="user",
        type="message",
        content="Plot a red dot, then divide by zero.",
        id="u1",
        created_at=T0,
    ),
    _m(
        role="assistant",
        type="message",
        content="Sure.",
        id="a1",
        in_reply_to="u1",
        created_at=T0 + 1,
    ),
    _m(
        role="assistant",
        type="code",
        format="python",
        id="c1",
        in_reply_to="u1",
        created_at=T0 + 2,
        content="import matplotlib.pyplot as plt\nplt.plot([0], [0], 'ro')\nprint('plotted')\n1 / 0",
    ),
    _m(
        role="computer",
        type="console",
        format="active_line",
        content=2,
        id="o1",
        in_reply_to="c1",
        created_at=T0 + 3,
    ),
    _m(
        role="computer",
        type="console",
        format="output",
        content="plotted\n",
        id="o2",
        in_reply_to="c1",
        created_at=T0 + 4,
    ),
    _m(
        role="computer",
        type="image",
        format="base64.png",
        content=PNG_1PX,
        id="o3",
        in_reply_to="c1",
        created_at=T0 + 5,
    ),
    _m(
        role="computer",
        type="console",
        format="output",
        id="o4",
        in_reply_to="c1",
        created_at=T0 + 6,
        content="Traceback (most recent call last):\n  Cell In[1], line 4\nZeroDivisionError: division by zero\n",
        extras={"error": "ZeroDivisionError", "stream": "stderr"},
    ),
    _m(
        role="computer",
        type="console",
        format="active_line",
        content=None,
        id="o5",
        in_reply_to="c1",
        created_at=T0 + 7,
        extras={"status": "error", "execution_count": 1, "state_lost": False},
    ),
    _m(
        role="assistant",
        type="message",
        content="The dot is drawn; 1 / 0 raised ZeroDivisionError.",
        id="a2",
        created_at=T0 + 8,
    ),
]
