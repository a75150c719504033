"""Issue 5 acceptance, durable sessions: `SqliteStore` conversations end to end.

Every test drives the real `Agent` and google-genai client against the strict `FakeGemini`
(in process, or over real HTTP for the subprocess tests). A resumed conversation is only
accepted when its history, call ids and thought signatures are echoed exactly.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from agent import (
    DEFAULT_MODEL,
    Agent,
    ClientSettings,
    Hooks,
    ModelError,
    RetryPolicy,
    RunResult,
    SessionBusyError,
    SqliteStore,
)
from agent.errors import HookError
from agent.events import DoneEvent
from agent.testing import FakeGemini, error, function_call
from agent.testing._signatures import SignatureBook, decode_signature
from tests.agent._loop_support import with_retry
from toolnexus import Tool, Toolkit, toolkit

REPO = Path(__file__).resolve().parents[2]


async def _no_wait(seconds: float) -> None:
    """Retry sleep that returns at once."""


def echo_toolkit(*extra: Tool) -> Toolkit:
    def echo(args: dict[str, Any], ctx: Any) -> str:
        return "echo:" + str(args.get("text", ""))

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return toolkit([Tool("echo", echo, "Echo the text.", schema), *extra])


def make_agent(fake: FakeGemini, store: SqliteStore, tk: Toolkit | None = None, **kw: Any) -> Agent:
    return Agent(
        toolkit=tk if tk is not None else echo_toolkit(),
        client=ClientSettings(api_key="fake-key", http_client=fake.http_client()),
        limits=with_retry(kw.pop("limits", None), RetryPolicy(sleep=_no_wait, jitter=0.0)),
        store=store,
        **kw,
    )


async def stored(path: Path, session: str) -> list[dict[str, Any]]:
    """The session's contents as a brand-new store on ``path`` reads them."""
    async with SqliteStore(path) as store:
        transcript = await store.get(session)
    assert transcript is not None, f"session {session!r} was not saved"
    return transcript.contents


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def roles(contents: list[dict[str, Any]]) -> list[str]:
    return [c["role"] for c in contents]


def signatures(contents: list[dict[str, Any]]) -> list[bytes | None]:
    """The decoded thought signatures of every part of every model content, in order."""
    return [
        decode_signature(part["thoughtSignature"])
        for content in contents
        if content["role"] == "model"
        for part in content["parts"]
        if "thoughtSignature" in part
    ]


def all_keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            if key not in ("args", "response"):  # user data keeps its own spelling
                yield from all_keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from all_keys(item)


# -- 3. three runs, three agents, three store instances ------------------------------------


async def test_a_session_continues_over_three_agents_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    scripts: list[list[Any]] = [
        [function_call("echo", {"text": "one"}), "First done."],
        [function_call("echo", {"text": "two"}), function_call("echo", {"text": "2b"}), "Second."],
        ["Third."],
    ]
    prompts = ["Start.", "Go on.", "Finish."]
    book = SignatureBook()
    before: list[dict[str, Any]] = []
    for n, (script, prompt) in enumerate(zip(scripts, prompts, strict=True)):
        # A new fake each time: it accepts earlier signatures by their HMAC. Run 2 streams,
        # with Gemini 3 style signed text (a signature on an empty final text part).
        fake = FakeGemini(script, sign_text=n == 1)
        async with SqliteStore(path) as store:
            agent = make_agent(fake, store)
            if n == 1:
                events = [e async for e in agent.stream(prompt, session="conv")]
                last = events[-1]
                assert isinstance(last, DoneEvent)
                result = last.result
            else:
                result = await agent.run(prompt, session="conv")
        fake.assert_consumed()
        assert result.status == "completed", [r.error for r in fake.requests]
        assert [r.status for r in fake.requests] == [200] * len(script)
        # The first request of each run is the whole saved conversation plus the new prompt.
        assert fake.requests[0].contents == [*before, user(prompt)], f"run {n + 1}"
        after = await stored(path, "conv")
        assert after == result.contents
        assert after[: len(before) + 1] == [*before, user(prompt)]
        # Signatures: the bytes stored are the bytes Gemini issued for that very call, and
        # the bytes sent back on later requests.
        sent_last = fake.requests[-1].contents
        assert signatures(sent_last) == signatures(after[: len(sent_last)])
        for content in after:
            first_call = next((p for p in content["parts"] if "functionCall" in p), None)
            if content["role"] == "model" and first_call is not None:
                raw = decode_signature(first_call["thoughtSignature"])
                assert raw == book.sign({"functionCall": first_call["functionCall"]}, DEFAULT_MODEL)
        before = after
    assert roles(before) == ["user", "model"] * 6
    assert len(signatures(before)) == 4  # three signed calls and run 2's signed answer
    assert [r.kind for r in fake.requests] == ["unary"]


async def test_the_stored_transcript_is_versioned_wire_json(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    fake = FakeGemini([function_call("echo", {"text": "x", "some_arg": 1}), "ok"])
    async with SqliteStore(path) as store:
        await make_agent(fake, store).run("hi", session="schema")
    with sqlite3.connect(path) as conn:
        (raw,) = conn.execute("SELECT data FROM sessions WHERE session_id = 'schema'").fetchone()
        rows = conn.execute(
            "SELECT seq, data FROM contents WHERE session_id = 'schema' ORDER BY seq"
        ).fetchall()
    conn.close()
    # The session's row holds the transcript's JSON but its Contents, one row each.
    data = json.loads(raw)
    assert data["version"] == 1 and "contents" not in data
    assert [seq for seq, _ in rows] == list(range(len(rows)))
    data["contents"] = [json.loads(row) for _, row in rows]
    keys = set(all_keys(data["contents"]))
    assert {"functionCall", "functionResponse", "thoughtSignature"} <= keys
    assert not {k for k in keys if "_" in k}, "wire keys must be camelCase"
    # What is stored is exactly what went over the wire.
    assert data["contents"][:3] == fake.requests[1].contents
    assert data["contents"][1]["parts"][0]["functionCall"]["args"] == {"text": "x", "some_arg": 1}


async def test_each_save_writes_the_turn_it_adds_not_the_whole_conversation(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    script = [function_call("echo", {"text": "1"}), "One."]
    async with SqliteStore(path) as store:
        await make_agent(FakeGemini(script), store).run("Hi.", session="chat")
        # From here on, log the Content rows each save writes.
        with sqlite3.connect(path) as conn:
            conn.executescript(
                "CREATE TABLE written (seq INTEGER);"
                "CREATE TRIGGER log AFTER INSERT ON contents"
                " BEGIN INSERT INTO written VALUES (NEW.seq); END;"
            )
        conn.close()
        for n in range(2, 5):
            fake = FakeGemini([function_call("echo", {"text": str(n)}), f"Done {n}."])
            result = await make_agent(fake, store).run(f"Turn {n}.", session="chat")
    with sqlite3.connect(path) as conn:
        written = [seq for (seq,) in conn.execute("SELECT seq FROM written ORDER BY rowid")]
    conn.close()
    # Four Contents a run (prompt, call, result, answer), each written once, in order:
    # no save wrote an earlier turn again.
    assert written == list(range(4, 16))
    assert await stored(path, "chat") == result.contents
    assert fake.requests[-1].contents == result.contents[:-1]


async def test_a_session_saved_by_an_earlier_release_is_read_and_then_kept_in_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    earlier = [user("Hi."), {"role": "model", "parts": [{"text": "Hello."}]}]
    with sqlite3.connect(path) as conn:  # the layout of earlier releases: Contents inline
        conn.execute(
            "CREATE TABLE sessions (session_id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
            " data TEXT NOT NULL, updated_at REAL NOT NULL)"
        )
        data = {"version": 1, "contents": earlier, "pending": None, "metadata": {}}
        conn.execute("INSERT INTO sessions VALUES ('old', 1, ?, 0)", (json.dumps(data),))
    conn.close()
    fake = FakeGemini(["Again."])
    async with SqliteStore(path) as store:
        result = await make_agent(fake, store).run("Once more.", session="old")
    assert fake.requests[0].contents == [*earlier, user("Once more.")]
    assert await stored(path, "old") == result.contents
    with sqlite3.connect(path) as conn:
        (raw,) = conn.execute("SELECT data FROM sessions WHERE session_id = 'old'").fetchone()
        rows = conn.execute("SELECT seq FROM contents WHERE session_id = 'old'").fetchall()
    conn.close()
    assert "contents" not in json.loads(raw) and sorted(rows) == [(0,), (1,), (2,), (3,)]


# -- 4. a failure on turn 3 of 4 keeps turns 1-2 -----------------------------------------


@pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("failure", ["hook", "model-400"])
async def test_a_failure_on_turn_3_keeps_turns_1_and_2(
    tmp_path: Path, failure: str, streaming: bool
) -> None:
    path = tmp_path / "sessions.db"
    script: list[Any] = [
        function_call("echo", {"text": "1"}),
        function_call("echo", {"text": "2"}),
        function_call("echo", {"text": "3"}),
        "four",
    ]
    hooks = None
    if failure == "hook":

        def after_tool(call: Any, result: Any) -> None:
            if call.turn == 3:
                raise RuntimeError("audit log unreachable")

        hooks = Hooks(after_tool=after_tool)
        expected: type[Exception] = HookError
    else:
        script[2] = error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
        expected = ModelError
    fake = FakeGemini(script)
    async with SqliteStore(path) as store:
        with pytest.raises(expected) as info:
            agent = make_agent(fake, store, capabilities=[hooks] if hooks else [])
            if streaming:
                async for _ in agent.stream("Count to four.", session="crash"):
                    pass
            else:
                await agent.run("Count to four.", session="crash")
    assert [r.status for r in fake.requests][:2] == [200, 200]
    contents = await stored(path, "crash")
    # Exactly turns 1-2: what the third request carried.
    assert contents == fake.requests[2].contents
    assert roles(contents) == ["user", "model", "user", "model", "user"]
    assert contents[0] == user("Count to four.")
    for turn, at in ((1, 1), (2, 3)):
        call = contents[at]["parts"][0]["functionCall"]
        assert (call["name"], call["args"]) == ("echo", {"text": str(turn)})
        response = contents[at + 1]["parts"][0]["functionResponse"]
        assert (response["id"], response["response"]["output"]) == (call["id"], f"echo:{turn}")
    assert info.value.result.turns == (3 if failure == "hook" else 2)  # type: ignore[attr-defined]
    # A new agent (and fake) carries the session on; the strict fake accepts the history.
    again = FakeGemini(["Picking up from two."])
    async with SqliteStore(path) as store:
        result = await make_agent(again, store).run("Where were we?", session="crash")
    again.assert_consumed()
    assert result.text == "Picking up from two."
    assert again.requests[0].contents == [*contents, user("Where were we?")]


# -- 5. a real process kill ----------------------------------------------------------------

_CHILD_RUN = """
import asyncio, pathlib, sys
import toolnexus as tn
from agent import Agent, ClientSettings, RetryPolicy, RunLimits, SqliteStore

db, marker, base_url = sys.argv[1:4]
calls = []

async def step(args, ctx):
    calls.append(args)
    if len(calls) == 3:
        pathlib.Path(marker).write_text("turn 3 running")
        await asyncio.sleep(120)  # killed here
    return f"step {len(calls)} done"

async def main():
    tk = tn.toolkit([tn.Tool("step", step, "One step.", {"type": "object"})])
    async with SqliteStore(db) as store:
        agent = Agent(toolkit=tk, client=ClientSettings(api_key="fake-key", base_url=base_url),
                      store=store, limits=RunLimits(retry=RetryPolicy(attempts=1)))
        await agent.run("Do four steps.", session="killed")

asyncio.run(main())
"""


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def wait_for_file(path: Path, child: subprocess.Popen[str], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if child.poll() is not None:
            _, err = child.communicate()
            raise AssertionError(f"the child exited early ({child.returncode}): {err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {path.name} after {seconds} s")
        time.sleep(0.02)


async def test_a_killed_process_keeps_its_completed_turns(tmp_path: Path) -> None:
    path, marker = tmp_path / "sessions.db", tmp_path / "turn3"
    fake = FakeGemini([function_call("step", {"n": n}) for n in (1, 2, 3)] + ["never sent"])
    with fake.serve() as server:
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD_RUN, str(path), str(marker), server.base_url],
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            await asyncio.to_thread(wait_for_file, marker, child)
            # While the child lives, its lease refuses the session to this process too.
            async with SqliteStore(path) as store:
                busy = make_agent(FakeGemini(["never"]), store)
                with pytest.raises(SessionBusyError, match=f"process {child.pid} on host"):
                    await busy.run("Me too.", session="killed")
            child.send_signal(signal.SIGKILL)
        finally:
            if child.poll() is None:
                child.kill()
            child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert [r.status for r in fake.requests] == [200, 200, 200]
    contents = await stored(path, "killed")
    assert contents == fake.requests[2].contents  # turns 1-2, nothing of turn 3
    assert roles(contents) == ["user", "model", "user", "model", "user"]
    outputs = [c["parts"][0]["functionResponse"]["response"]["output"] for c in contents[2::2]]
    assert outputs == ["step 1 done", "step 2 done"]
    # The dead process's lease does not block the session; the strict fake accepts it.
    resumed = FakeGemini(["Resumed after the crash."])
    tk = toolkit([Tool("step", lambda args, ctx: "again", "One step.", {"type": "object"})])
    async with SqliteStore(path) as store:
        result = await make_agent(resumed, store, tk).run("Carry on.", session="killed")
    resumed.assert_consumed()
    assert result.text == "Resumed after the crash."
    assert resumed.requests[0].contents == [*contents, user("Carry on.")]


# -- 8. a pending session resumed in a new process -----------------------------------------

_CHILD_RESUME = """
import asyncio, json, sys
import toolnexus as tn
from agent import Agent, ClientSettings, SqliteStore

db, root, base_url = sys.argv[1:4]

async def main():
    async with SqliteStore(db) as store:
        saved = await store.get("ask")
        request = saved.pending["request"]
        agent = Agent(toolkit=tn.build(root=root), store=store,
                      client=ClientSettings(api_key="fake-key", base_url=base_url))
        answer = {"id": request["id"], "ok": True, "data": "Yes, ship it."}
        result = await agent.run(session="ask", answer=answer)
    print(json.dumps({"status": result.status, "text": result.text}))

asyncio.run(main())
"""


async def test_a_pending_session_resumes_in_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    question = {"questions": [{"question": "Ship the release?"}]}
    asking = FakeGemini([function_call("question", question)])
    async with SqliteStore(path) as store:
        first = await make_agent(asking, store, tn.build(root=tmp_path)).run(
            "Release v2.", session="ask"
        )
    assert first.status == "pending"
    assert first.pending is not None
    before = await stored(path, "ask")
    answering = FakeGemini(["Shipped v2."])
    with answering.serve() as server:
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", _CHILD_RESUME, str(path), str(tmp_path), server.base_url],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"status": "completed", "text": "Shipped v2."}
    answering.assert_consumed()
    sent = answering.requests[0]
    assert sent.status == 200
    # Saved while pending: prompt, the model's call, and the placeholder response that the
    # answer replaces; the model turn goes back byte for byte (signature included).
    assert roles(before) == ["user", "model", "user"]
    assert (
        before[2]["parts"][0]["functionResponse"]["response"]["pending"]["id"]
        == (first.pending["id"])
    )
    call = before[1]["parts"][0]["functionCall"]
    assert sent.contents[:2] == before[:2]
    assert len(sent.contents) == 3
    (response,) = sent.function_responses
    assert (response["id"], response["name"]) == (call["id"], "question")
    assert "Yes, ship it." in json.dumps(response["response"])
    assert response["response"]["isError"] is False
    assert "pending" not in response["response"]
    async with SqliteStore(path) as store:
        transcript = await store.get("ask")
    assert transcript is not None and transcript.pending is None
    assert transcript.contents[-1] == {"role": "model", "parts": [{"text": "Shipped v2."}]}


# -- 6. concurrent runs on different sessions ----------------------------------------------

TOKEN = re.compile(r"tok-\d+")


def per_session_model(body: dict[str, Any]) -> Any:
    """Echo the session's own token twice through the tool, then answer with it."""
    contents = body["contents"]
    token = TOKEN.findall(contents[0]["parts"][0]["text"])[0]
    since_prompt = 0
    for content in reversed(contents):
        if content["role"] == "user" and "text" in content["parts"][0]:
            break
        since_prompt += content["role"] == "model"
    if since_prompt < 2:
        return function_call("echo", {"text": f"{token}/{since_prompt}"})
    return f"Finished {token}."


async def test_concurrent_sessions_do_not_interfere(tmp_path: Path) -> None:
    fake = FakeGemini(per_session_model)
    sessions = [f"s{n}" for n in range(8)]
    async with SqliteStore(tmp_path / "sessions.db") as store:
        agent = make_agent(fake, store)

        async def streamed(prompt: str, session: str) -> RunResult:
            events = [event async for event in agent.stream(prompt, session=session)]
            last = events[-1]
            assert isinstance(last, DoneEvent)
            return last.result

        # First round with run, second with stream: both interleave freely on one loop.
        for prompt, way in (("Begin {token}.", agent.run), ("Again {token}.", streamed)):
            results = await asyncio.gather(
                *(way(prompt.format(token=f"tok-{n}"), session=s) for n, s in enumerate(sessions))
            )
            assert [r.text for r in results] == [f"Finished tok-{n}." for n in range(8)]
            assert all(r.turns == 3 for r in results)
        assert fake.failures == []
        assert all(r.status == 200 for r in fake.requests)
        assert len(fake.requests) == 8 * 3 * 2
        for n, session in enumerate(sessions):
            transcript = await store.get(session)
            assert transcript is not None
            assert set(TOKEN.findall(json.dumps(transcript.contents))) == {f"tok-{n}"}
            assert len(transcript.contents) == 12
            assert transcript.contents[6] == user(f"Again tok-{n}.")


# -- 7. two concurrent runs on the same session --------------------------------------------


async def test_a_second_run_on_a_busy_session_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    entered, gate = asyncio.Event(), asyncio.Event()

    async def hold(args: dict[str, Any], ctx: Any) -> str:
        entered.set()
        await gate.wait()
        return "held"

    tk = toolkit([Tool("hold", hold, "Hold on.", {"type": "object"})])
    fake = FakeGemini([function_call("hold", {}), "First run done."])
    async with SqliteStore(path) as store, SqliteStore(path) as other_store:
        first = asyncio.ensure_future(make_agent(fake, store, tk).run("first", session="one"))
        async with asyncio.timeout(10):
            await entered.wait()
        # Same store, another agent; and another store instance on the same file.
        for refused_store in (store, other_store):
            second = make_agent(FakeGemini(["never"]), refused_store, tk)
            with pytest.raises(SessionBusyError, match="session 'one' is in use") as info:
                await second.run("second", session="one")
            assert info.value.session_id == "one"
            with pytest.raises(SessionBusyError):
                async for _ in second.stream("second", session="one"):
                    pass
        gate.set()
        result = await first
    fake.assert_consumed()
    assert result.text == "First run done."
    contents = await stored(path, "one")
    assert contents == result.contents
    assert "second" not in json.dumps(contents)
    assert not any("second" in json.dumps(r.contents) for r in fake.requests)
