"""Compaction's archive: kept apart from the transcript, append-only, nothing lost."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, ClientSettings, Compaction, MemoryStore, SqliteStore, Transcript
from agent._store import ArchivingStore
from agent.events import Compacted
from agent.testing import FakeGemini
from tests.agent._loop_support import KEY
from tests.agent.test_compaction import BIG, ChatModel, fetch
from toolnexus import toolkit

POLICY = Compaction(trigger_tokens=6_000, keep_recent_turns=3)
PROMPTS = ["Remember: the code word is PAPAYA."] + [f"turn {i}" for i in range(2, 30)]


class DictStore:
    """A third-party store with only get and save."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    async def get(self, session_id: str) -> Transcript | None:
        raw = self.data.get(session_id)
        return None if raw is None else Transcript.from_json(raw)

    async def save(self, session_id: str, transcript: Transcript) -> None:
        self.data[session_id] = transcript.to_json()


def agent_for(store: Any) -> Agent:
    fake = FakeGemini(ChatModel(), api_key=KEY, sign_text=True)
    return Agent(
        toolkit=toolkit([fetch]),
        compaction=POLICY,
        store=store,
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )


def rows(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        return [(int(r[0]), str(r[1])) for r in conn.execute("SELECT seq, data FROM archive")]


def assert_nothing_lost(kept: list[dict[str, Any]], archived: list[dict[str, Any]]) -> None:
    kept_text, archived_text = json.dumps(kept), json.dumps(archived)
    for prompt in PROMPTS:
        assert json.dumps(prompt) in archived_text or json.dumps(prompt) in kept_text, prompt
    assert f"page 1: {BIG}" in archived_text  # the full result, from before it was pruned


async def test_sqlite_archive_gets_one_new_row_per_compaction_and_keeps_old_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        assert isinstance(store, ArchivingStore)
        agent = agent_for(store)
        compactions = 0
        before: list[tuple[int, str]] = []
        for prompt in PROMPTS:
            async for event in agent.stream(prompt, session="chat"):
                compactions += isinstance(event, Compacted)
            now = rows(path)
            assert now[: len(before)] == before  # a save never rewrites an archived batch
            assert len(now) == compactions  # one row per compaction, appended
            before = now
        assert compactions >= 3
        saved = await store.get("chat")
        assert saved is not None and "archive" not in saved.metadata
        assert_nothing_lost(saved.contents, await store.archive("chat"))
    async with SqliteStore(path) as reopened:  # and it survives the process
        assert len(await reopened.archive("chat")) > 0
        assert await reopened.delete("chat")
        assert await reopened.archive("chat") == []
    assert rows(path) == []


def without_signatures(contents: list[dict[str, Any]]) -> list[Any]:
    return [
        [{k: v for k, v in part.items() if k != "thoughtSignature"} for part in c["parts"]]
        for c in contents
    ]


async def test_archive_holds_every_replaced_turn_across_saves_as_metadata_did() -> None:
    store, plain = MemoryStore(), DictStore()
    for each in (store, plain):
        agent = agent_for(each)
        for prompt in PROMPTS:
            await agent.run(prompt, session="chat")
    saved, old_way = await store.get("chat"), await plain.get("chat")
    assert saved is not None and old_way is not None
    assert "archive" not in saved.metadata
    archived = await store.archive("chat")
    assert_nothing_lost(saved.contents, archived)
    # The same Contents, in the same order, as the archive in the metadata of a plain store
    # (signatures are random per fake, so compared without them).
    assert without_signatures(archived) == without_signatures(old_way.metadata["archive"])


async def test_an_archive_in_old_metadata_moves_to_the_store_on_the_next_save() -> None:
    store = MemoryStore()
    old = [{"role": "user", "parts": [{"text": "from an older version"}]}]
    contents = [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "hello"}]},
    ]
    await store.save("chat", Transcript(contents, metadata={"archive": old}))
    await agent_for(store).compact(session="chat")
    saved = await store.get("chat")
    assert saved is not None and "archive" not in saved.metadata
    assert (await store.archive("chat"))[:1] == old


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_store_archive_appends_copies_in_order(kind: str, tmp_path: Path) -> None:
    store: Any = MemoryStore() if kind == "memory" else SqliteStore(tmp_path / "a.db")
    part: dict[str, Any] = {"text": "one"}
    await store.append_archive("s", [{"role": "user", "parts": [part]}])
    part["text"] = "changed"  # the store kept a copy
    await store.append_archive("s", [{"role": "model", "parts": [{"text": "two"}]}])
    got = await store.archive("s")
    assert [c["parts"][0]["text"] for c in got] == ["one", "two"]
    got.clear()
    assert len(await store.archive("s")) == 2  # and hands out a copy
    assert await store.archive("other") == []
    with pytest.raises(ValueError):
        await store.append_archive("s", [{"role": "user", "parts": [{"x": math.nan}]}])
    with pytest.raises(ValueError):
        await store.append_archive("", [])
    assert len(await store.archive("s")) == 2  # a refused batch adds nothing
    if kind == "sqlite":
        await store.close()
