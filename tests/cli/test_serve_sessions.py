"""``toolnexus-agent serve``: each connection's conversations are its own; ``--store`` keeps them.

The served agent's model is a function of the request: it answers with the user messages
of the conversation it was sent, so each answer shows which conversation the call ran in.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent.testing import FakeGemini
from tests.cli.conftest import cli_env
from tests.cli.serve_support import all_text, connect, http_server, stdio_params, text_of

pytest.importorskip("mcp")

HELPER = """\
---
name: helper
description: Remembers what it was told.
tools: []
---
You remember.
"""


def _echo(body: dict[str, Any]) -> str:
    said = [
        part["text"]
        for content in body["contents"]
        if content["role"] == "user"
        for part in content["parts"]
        if "text" in part
    ]
    return "seen: " + " | ".join(said)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "helper.md").write_text(HELPER, encoding="utf-8")
    return tmp_path


def _session(result: Any) -> str:
    session: str = result.meta["toolnexus/session_id"]
    assert f"session_id: {session} " in all_text(result)
    return session


async def test_two_concurrent_connections_keep_their_own_conversations(workspace: Path) -> None:
    fake = FakeGemini(_echo)
    with (
        fake.serve() as gemini,
        http_server(workspace, "--agents", "agents", env=cli_env(gemini)) as url,
    ):

        async def talk(who: str, started: asyncio.Event, ids: dict[str, str]) -> list[Any]:
            async with connect(url) as client:
                first = await client.call_tool("helper", {"task": f"{who} one"})
                ids[who] = _session(first)
                started.set()
                await started_both.wait()
                again = await client.call_tool(
                    "helper", {"task": f"{who} two", "session_id": _session(first)}
                )
                other = ids["B" if who == "A" else "A"]
                theirs = await client.call_tool("helper", {"task": "peek", "session_id": other})
                made_up = await client.call_tool(
                    "helper", {"task": "peek", "session_id": "helper-guessed"}
                )
                return [first, again, theirs, made_up]

        started_a, started_b = asyncio.Event(), asyncio.Event()
        started_both = asyncio.Event()
        ids: dict[str, str] = {}

        async def both_started() -> None:
            await started_a.wait()
            await started_b.wait()
            started_both.set()

        a, b, _ = await asyncio.gather(
            talk("A", started_a, ids), talk("B", started_b, ids), both_started()
        )
    for who, (first, again, theirs, made_up) in (("A", a), ("B", b)):
        assert text_of(first) == f"seen: {who} one"
        assert text_of(again) == f"seen: {who} one | {who} two"
        assert _session(again) == _session(first)
        for refused in (theirs, made_up):
            assert refused.is_error
            assert "has no conversation" in text_of(refused)
    assert _session(a[0]) != _session(b[0])
    assert "peek" not in str(fake.requests[-1].contents)  # the refused calls sent nothing


async def test_with_a_store_a_conversation_continues_in_a_new_server(workspace: Path) -> None:
    fake = FakeGemini(_echo)
    flags = ("--agents", "agents", "--store", "chats.db", "--root", str(workspace))
    with fake.serve() as gemini:
        params = stdio_params(workspace, *flags, env=cli_env(gemini))
        async with connect(params) as client:
            first = await client.call_tool("helper", {"task": "remember the kettle"})
            named = await client.call_tool("helper", {"task": "hello", "session_id": "notes"})
        async with connect(params) as client:  # a new server process, a new connection
            again = await client.call_tool(
                "helper", {"task": "what was it?", "session_id": _session(first)}
            )
            notes = await client.call_tool("helper", {"task": "again", "session_id": "notes"})
    assert text_of(again) == "seen: remember the kettle | what was it?"
    assert (text_of(named), _session(named)) == ("seen: hello", "notes")
    assert text_of(notes) == "seen: hello | again"
    assert (workspace / "chats.db").exists()
