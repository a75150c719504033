"""Conversation stores: transcripts, atomic saves, durability and session locking."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent import (
    MemoryStore,
    SessionBusyError,
    SessionError,
    SqliteStore,
    Store,
    Transcript,
    TranscriptVersionError,
)
from agent._session_lock import session_lock
from agent._store import LockingStore
from agent._transcript import CURRENT_TRANSCRIPT_VERSION
from agent.errors import TranscriptError

ROOT = Path(__file__).resolve().parents[2]

# A model turn as Gemini 3 sends it: a thought part and a function call carrying a signature.
SIGNATURE = "CiQBcsjafE3+/Zq9u8Y0bQ1o2Ww=" + "Ab" * 40 + "=="
MODEL_TURN: dict[str, Any] = {
    "role": "model",
    "parts": [
        {"text": "Let me look.", "thought": True},
        {
            "functionCall": {"id": "call-1", "name": "read", "args": {"path": "README.md"}},
            "thoughtSignature": SIGNATURE,
        },
    ],
}
USER_TURN: dict[str, Any] = {"role": "user", "parts": [{"text": "Résumé ✓ \U0001f600 of README"}]}
RESULT_TURN: dict[str, Any] = {
    "role": "user",
    "parts": [
        {
            "functionResponse": {
                "id": "call-1",
                "name": "read",
                "response": {"output": "# Title\n", "isError": False},
            }
        }
    ],
}


def transcript(*contents: dict[str, Any], **kwargs: Any) -> Transcript:
    return Transcript(contents=[json.loads(json.dumps(c)) for c in contents], **kwargs)


def run_child(code: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=check,
    )


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        async with SqliteStore(tmp_path / "sessions.db") as s:
            yield s


# -- Transcript ------------------------------------------------------------------------------


def test_transcript_json_round_trip_keeps_contents_exactly() -> None:
    t = transcript(USER_TURN, MODEL_TURN, RESULT_TURN, pending={"request": {"id": "q1"}})
    t.metadata["model"] = "gemini-3-pro"
    back = Transcript.from_json(t.to_json())
    assert back == t
    assert json.dumps(back.contents) == json.dumps([USER_TURN, MODEL_TURN, RESULT_TURN])
    assert back.contents[1]["parts"][1]["thoughtSignature"] == SIGNATURE
    assert json.loads(t.to_json())["version"] == CURRENT_TRANSCRIPT_VERSION == 1


def test_transcript_layout_is_documented_v1() -> None:
    data = json.loads(transcript(USER_TURN).to_json())
    assert data == {
        "version": 1,
        "contents": [USER_TURN],
        "pending": None,
        "metadata": {},
        "updated_at": None,
    }


def test_unknown_future_version_is_refused_by_name() -> None:
    raw = json.dumps({"version": 7, "contents": []})
    with pytest.raises(TranscriptVersionError, match=r"schema version 7 is not supported") as e:
        Transcript.from_json(raw)
    assert e.value.version == 7
    assert "upgrade toolnexus-gemini" in str(e.value)


@pytest.mark.parametrize("bad", [None, "1", 0, True])
def test_missing_or_invalid_version_is_refused(bad: object) -> None:
    data: dict[str, Any] = {"contents": []}
    if bad is not None:
        data["version"] = bad
    with pytest.raises(TranscriptVersionError, match="no valid schema version"):
        Transcript.from_dict(data)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"version": 1, "contents": "hi"}, "contents"),
        ({"version": 1, "contents": ["hi"]}, "contents"),
        ({"version": 1, "contents": [], "pending": "q"}, "pending"),
        ({"version": 1, "contents": [], "metadata": [1]}, "metadata"),
    ],
)
def test_malformed_layout_names_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Transcript.from_dict(data)


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("{not json", "the transcript is not JSON"),
        (b"\xff\xfe{}", "the transcript is not JSON"),
        ('{"version": 1, "contents": ' + DEEP + "}", "nested too deeply to read"),
        (  # deep enough for the SDK to fail serialising it, not for json to fail reading it
            json.dumps(
                {
                    "version": 1,
                    "contents": [{"role": "user", "x": json.loads("[" * 400 + "]" * 400)}],
                }
            ),
            "nested more than 200 deep",
        ),
    ],
)
def test_an_unreadable_transcript_is_a_transcript_error(raw: str | bytes, problem: str) -> None:
    with pytest.raises(TranscriptError, match=problem) as info:
        Transcript.from_json(raw)
    assert isinstance(info.value, SessionError) and isinstance(info.value, ValueError)
    assert issubclass(TranscriptVersionError, TranscriptError)


# -- both stores -----------------------------------------------------------------------------


async def test_round_trip_preserves_contents_and_signature(store: Store) -> None:
    assert await store.get("s1") is None
    t = transcript(USER_TURN, MODEL_TURN, RESULT_TURN, metadata={"model": "m"})
    await store.save("s1", t)
    assert t.updated_at is not None
    got = await store.get("s1")
    assert got is not None
    assert json.dumps(got.contents) == json.dumps([USER_TURN, MODEL_TURN, RESULT_TURN])
    assert got.contents[1]["parts"][1]["thoughtSignature"] == SIGNATURE
    assert got.metadata == {"model": "m"}
    assert got.updated_at == t.updated_at


async def test_stored_state_is_isolated_from_callers(store: Store) -> None:
    t = transcript(USER_TURN)
    await store.save("s1", t)
    t.contents.append(MODEL_TURN)
    t.contents[0]["parts"][0]["text"] = "changed"
    got = await store.get("s1")
    assert got is not None
    assert got.contents == [USER_TURN]
    got.contents.clear()
    again = await store.get("s1")
    assert again is not None and again.contents == [USER_TURN]


async def test_failed_save_leaves_previous_version(store: Store) -> None:
    await store.save("s1", transcript(USER_TURN))
    bad = transcript(USER_TURN, MODEL_TURN)
    bad.contents.append({"role": "user", "parts": [{"text": object()}]})
    with pytest.raises(TypeError):
        await store.save("s1", bad)
    with pytest.raises(ValueError, match="JSON"):
        await store.save("s1", transcript(USER_TURN, metadata={"x": float("nan")}))
    got = await store.get("s1")
    assert got is not None and got.contents == [USER_TURN]


async def test_delete_and_list(store: MemoryStore | SqliteStore) -> None:
    await store.save("b", transcript(USER_TURN))
    await store.save("a", transcript(USER_TURN))
    assert await store.session_ids() == ["a", "b"]
    assert await store.delete("a") is True
    assert await store.delete("a") is False
    assert await store.session_ids() == ["b"]
    assert await store.get("a") is None


async def test_concurrent_sessions_do_not_interfere(store: Store) -> None:
    async def converse(n: int) -> None:
        sid = f"session-{n}"
        async with session_lock(store, sid):
            for turn in range(4):
                t = await store.get(sid) or Transcript()
                t.contents.append({"role": "user", "parts": [{"text": f"{sid} turn {turn}"}]})
                await store.save(sid, t)

    await asyncio.gather(*(converse(n) for n in range(16)))
    for n in range(16):
        got = await store.get(f"session-{n}")
        assert got is not None
        assert [c["parts"][0]["text"] for c in got.contents] == [
            f"session-{n} turn {turn}" for turn in range(4)
        ]


async def test_same_session_second_holder_is_refused(store: Store) -> None:
    async with session_lock(store, "s1"):
        with pytest.raises(SessionBusyError, match=r"session 's1' is in use by another run") as e:
            async with session_lock(store, "s1"):
                pass
        assert e.value.session_id == "s1"
        assert e.value.holder == "this process"
        async with session_lock(store, "s2"):  # other sessions are free
            pass
    async with session_lock(store, "s1"):  # released on exit
        pass


async def test_lock_is_released_when_the_run_fails(store: Store) -> None:
    with pytest.raises(KeyError):
        async with session_lock(store, "s1"):
            raise KeyError("boom")
    async with session_lock(store, "s1"):
        pass


async def test_same_session_refused_across_threads(store: Store) -> None:
    entered = asyncio.Event()
    release = asyncio.Event()

    async def hold() -> None:
        async with session_lock(store, "s1"):
            entered.set()
            await release.wait()

    holder = asyncio.create_task(hold())
    await entered.wait()

    async def other_loop() -> str:
        try:
            async with session_lock(store, "s1"):
                return "entered"
        except SessionBusyError:
            return "refused"

    # asyncio.run in a worker thread: a different event loop in the same process.
    assert await asyncio.to_thread(asyncio.run, other_loop()) == "refused"
    release.set()
    await holder


# -- custom stores ---------------------------------------------------------------------------


class DictStore:
    """The two-method store from the module docstring."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    async def get(self, session_id: str) -> Transcript | None:
        raw = self.data.get(session_id)
        return None if raw is None else Transcript.from_json(raw)

    async def save(self, session_id: str, transcript: Transcript) -> None:
        self.data[session_id] = transcript.to_json()


async def test_custom_store_satisfies_the_protocol_and_can_be_locked() -> None:
    s = DictStore()
    assert isinstance(s, Store)
    assert not isinstance(s, LockingStore)
    async with session_lock(s, "x"):
        await s.save("x", transcript(USER_TURN))
        with pytest.raises(SessionBusyError):
            async with session_lock(s, "x"):
                pass
    got = await s.get("x")
    assert got is not None and got.contents == [USER_TURN]
    assert isinstance(MemoryStore(), Store) and not isinstance(MemoryStore(), LockingStore)


# -- SqliteStore -----------------------------------------------------------------------------


async def test_sqlite_constructor_touches_nothing(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "none.db")
    assert isinstance(s, LockingStore)
    assert not (tmp_path / "none.db").exists()
    await s.close()


async def test_sqlite_durable_across_instances(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    for turn, content in enumerate([USER_TURN, MODEL_TURN, RESULT_TURN]):
        async with SqliteStore(db) as s:  # a new instance, as a new Agent would make
            t = await s.get("chat") or Transcript()
            assert len(t.contents) == turn
            t.contents.append(content)
            await s.save("chat", t)
    async with SqliteStore(db) as s:
        got = await s.get("chat")
    assert got is not None
    assert json.dumps(got.contents) == json.dumps([USER_TURN, MODEL_TURN, RESULT_TURN])
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


async def test_sqlite_failure_inside_the_transaction_keeps_previous(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with SqliteStore(db) as s:
        await s.save("s1", transcript(USER_TURN))
        # A write that fails inside the database transaction (as a full disk would).
        conn = sqlite3.connect(db)
        conn.execute(
            "CREATE TRIGGER fail BEFORE INSERT ON contents WHEN NEW.data LIKE '%boom%'"
            " BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
        conn.commit()
        conn.close()
        with pytest.raises(SessionError, match=r"s\.db: cannot be used \(disk full\)") as info:
            await s.save(
                "s1", transcript(USER_TURN, {"role": "model", "parts": [{"text": "boom"}]})
            )
        assert isinstance(info.value.__cause__, sqlite3.DatabaseError)
        got = await s.get("s1")
        assert got is not None and got.contents == [USER_TURN]
        await s.save("s1", transcript(USER_TURN, MODEL_TURN))  # the store is still usable
        got = await s.get("s1")
        assert got is not None and got.contents == [USER_TURN, MODEL_TURN]


async def test_sqlite_future_version_row_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with SqliteStore(db) as s:
        await s.save("s1", transcript(USER_TURN))
        conn = sqlite3.connect(db)
        conn.execute(
            "UPDATE sessions SET version = 2, data = ? WHERE session_id = 's1'",
            (json.dumps({"version": 2, "contents": []}),),
        )
        conn.commit()
        conn.close()
        with pytest.raises(TranscriptVersionError, match="version 2"):
            await s.get("s1")


CHILD_READ_AND_ANSWER = """
    import asyncio, json, sys
    from agent import SqliteStore, Transcript
    from agent._session_lock import session_lock

    async def main():
        async with SqliteStore(sys.argv[1]) as store:
            async with session_lock(store, "chat"):
                t = await store.get("chat")
                print(json.dumps({"contents": t.contents, "pending": t.pending}))
                t.contents.append({"role": "user", "parts": [{"text": "answered"}]})
                t.pending = None
                await store.save("chat", t)

    asyncio.run(main())
"""


async def test_sqlite_second_process_sees_and_continues_a_pending_session(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    pending = {"request": {"id": "q1", "kind": "question", "prompt": "Which?"}, "call_id": "c1"}
    async with SqliteStore(db) as s:
        await s.save("chat", transcript(USER_TURN, MODEL_TURN, pending=pending))
        out = run_child(CHILD_READ_AND_ANSWER, str(db))
        seen = json.loads(out.stdout)
        assert seen["pending"] == pending
        assert json.dumps(seen["contents"]) == json.dumps([USER_TURN, MODEL_TURN])
        got = await s.get("chat")
    assert got is not None
    assert got.pending is None
    assert got.contents[-1] == {"role": "user", "parts": [{"text": "answered"}]}


CHILD_HOLD = """
    import asyncio, sys
    from agent import SqliteStore
    from agent._session_lock import session_lock

    async def main():
        async with SqliteStore(sys.argv[1]) as store:
            async with session_lock(store, "chat"):
                print("held", flush=True)
                await asyncio.to_thread(sys.stdin.readline)

    asyncio.run(main())
"""


async def test_sqlite_same_session_refused_across_processes(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CHILD_HOLD), str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        line = await asyncio.to_thread(child.stdout.readline)
        assert line == "held\n"
        async with SqliteStore(db) as s:
            with pytest.raises(SessionBusyError, match=rf"process {child.pid} on host") as e:
                async with session_lock(s, "chat"):
                    pass
            assert e.value.session_id == "chat"
            async with session_lock(s, "other"):
                pass
            child.stdin.write("done\n")
            child.stdin.flush()
            assert await asyncio.to_thread(child.wait, 30) == 0
            async with session_lock(s, "chat"):  # released by the child
                pass
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()


CHILD_CRASH = """
    import asyncio, os, signal, sys
    from agent import SqliteStore, Transcript
    from agent._session_lock import session_lock

    async def main():
        store = SqliteStore(sys.argv[1])
        async with session_lock(store, "chat"):
            t = Transcript()
            for turn in range(1, 5):
                t.contents.append({"role": "user", "parts": [{"text": f"turn {turn}"}]})
                if turn == 3:
                    # killed in the middle of writing turn 3
                    conn = store._conn
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute("UPDATE sessions SET data = 'partial' WHERE session_id = 'chat'")
                    os.kill(os.getpid(), signal.SIGKILL)
                await store.save("chat", t)

    asyncio.run(main())
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL and pid probing are POSIX")
async def test_sqlite_process_killed_after_turn_2_keeps_turns_1_and_2(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    out = run_child(CHILD_CRASH, str(db), check=False)
    assert out.returncode == -signal.SIGKILL, out.stderr
    async with SqliteStore(db) as s:
        got = await s.get("chat")
        assert got is not None
        assert [c["parts"][0]["text"] for c in got.contents] == ["turn 1", "turn 2"]
        # The dead process's lease does not block the session.
        async with session_lock(s, "chat"):
            pass


async def test_sqlite_lease_from_another_host(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with SqliteStore(db) as s:
        await s.session_ids()  # creates the schema
        conn = sqlite3.connect(db)
        conn.execute(
            "INSERT INTO leases VALUES ('chat', 'x', 'elsewhere', 1, ?)", (time.time() + 3600,)
        )
        conn.commit()
        with pytest.raises(SessionBusyError, match="process 1 on host 'elsewhere'"):
            async with session_lock(s, "chat"):
                pass
        conn.execute("UPDATE leases SET expires_at = ?", (time.time() - 1,))
        conn.commit()
        conn.close()
        async with session_lock(s, "chat"):  # an expired lease is taken over
            pass


async def test_sqlite_two_instances_in_one_process_exclude_each_other(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with SqliteStore(db) as a, SqliteStore(db) as b, session_lock(a, "chat"):
        with pytest.raises(SessionBusyError, match="this process"):
            async with session_lock(b, "chat"):
                pass


async def test_sqlite_lease_is_renewed_while_held(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with (
        SqliteStore(db, lease_seconds=0.3) as a,
        SqliteStore(db) as b,
        session_lock(a, "chat"),
    ):

        def expiry() -> float:
            with sqlite3.connect(db) as conn:
                row = conn.execute("SELECT expires_at FROM leases").fetchone()
            conn.close()
            return float(row[0])

        first = expiry()
        while expiry() == first:  # wait for the renewal, not for a fixed time
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.4)  # longer than the lease: still held thanks to renewal
        with pytest.raises(SessionBusyError):
            async with session_lock(b, "chat"):
                pass


@pytest.mark.parametrize("bad", ["", None, 3])
async def test_session_id_must_be_a_non_empty_string(store: Store, bad: Any) -> None:
    with pytest.raises(ValueError, match="non-empty string"):
        await store.get(bad)
    with pytest.raises(ValueError, match="non-empty string"):
        await store.save(bad, transcript(USER_TURN))
    with pytest.raises(ValueError, match="non-empty string"):
        async with session_lock(store, bad):
            pass


async def test_sqlite_cancelled_while_acquiring_leaves_no_lease(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with SqliteStore(db) as s:
        await s.session_ids()  # creates the schema
        blocker = sqlite3.connect(db, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another writer: the lease insert has to wait

        async def run() -> None:
            async with session_lock(s, "chat"):
                pytest.fail("the run should have been cancelled before it started")

        task = asyncio.create_task(run())
        while not s._mutex.locked():  # the worker thread is inside the lease transaction
            await asyncio.sleep(0.005)
        task.cancel()
        blocker.execute("COMMIT")
        blocker.close()
        with pytest.raises(asyncio.CancelledError):
            await task
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0
        conn.close()
        async with session_lock(s, "chat"):
            pass


async def test_a_file_that_is_not_a_session_store_is_a_session_error_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    garbage = tmp_path / "notes.db"
    garbage.write_text("my notes, not a database\n" * 100)
    before = garbage.read_bytes()
    async with SqliteStore(garbage) as store:
        with pytest.raises(SessionError, match=r"notes.db: is not a session store, or is damaged"):
            await store.get("s")
        with pytest.raises(SessionError, match="left untouched"):
            await store.save("s", transcript(USER_TURN))
    assert garbage.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_a_read_only_store_says_so() -> None:
    from agent._store_sqlite import _unusable

    error = _unusable(
        Path("s.db"), sqlite3.OperationalError("attempt to write a readonly database")
    )
    assert str(error) == (
        "session store s.db: is read-only; make it (and its folder) writable, or choose "
        "another path"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
async def test_a_read_only_store_file_is_a_session_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore(path) as store:
        await store.save("s", transcript(USER_TURN))
    path.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        async with SqliteStore(path) as store:
            with pytest.raises(SessionError, match="is read-only"):
                await store.save("s", transcript(USER_TURN, MODEL_TURN))
    finally:
        tmp_path.chmod(0o755)


def _rows(db: Path) -> list[list[Any]]:
    with sqlite3.connect(db) as conn:
        rows = [
            conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            for table in ("sessions", "leases", "archive")
        ]
    conn.close()
    return rows


def _damage(db: Path, sql: str, *params: Any) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(sql, params)
    conn.close()


@pytest.mark.parametrize(
    ("sql", "params", "problem"),
    [
        (
            "UPDATE sessions SET data = ?",
            ("{not json",),
            "session 's1': the transcript is not JSON",
        ),
        (
            "UPDATE sessions SET data = ?",
            ('{"version": 1, "contents": ' + DEEP + "}",),
            "session 's1': the transcript is nested too deeply to read",
        ),
        (
            "INSERT INTO archive (session_id, data, added_at) VALUES ('s1', ?, 0)",
            ("[" * 100_000,),
            "session 's1': its archive is not readable JSON",
        ),
        (
            "INSERT INTO archive (session_id, data, added_at) VALUES ('s1', ?, 0)",
            ('{"a": 1}',),
            "session 's1': its archive holds a batch that is not a list",
        ),
    ],
)
async def test_a_damaged_row_is_a_one_line_transcript_error_and_left_as_it_was(
    tmp_path: Path, sql: str, params: tuple[Any, ...], problem: str
) -> None:
    db = tmp_path / "s.db"
    async with SqliteStore(db) as s:
        await s.save("s1", transcript(USER_TURN))
    _damage(db, sql, *params)
    before = _rows(db)
    async with SqliteStore(db) as s:
        with pytest.raises(TranscriptError) as info:
            await s.get("s1")
            await s.archive("s1")
    message = str(info.value)
    assert message.startswith(f"session store {db}: {problem}"), message[:300]
    assert message.endswith("it was left untouched: delete the session or choose another store")
    assert len(message) < 600 and "\n" not in message
    assert _rows(db) == before


@pytest.mark.parametrize(
    ("pid", "expires_at"), [("not-a-pid", 1e12), (12, "soon"), (b"\x00", 1e12), (1.5, 1e12)]
)
async def test_a_lease_row_holding_the_wrong_types_is_a_session_error_and_left_as_it_was(
    tmp_path: Path, pid: Any, expires_at: Any
) -> None:
    db = tmp_path / "s.db"
    async with SqliteStore(db) as s:
        await s.save("s1", transcript(USER_TURN))
    _damage(db, "INSERT INTO leases VALUES ('s1', 'o', 'h', ?, ?)", pid, expires_at)
    before = _rows(db)
    async with SqliteStore(db) as s:
        with pytest.raises(SessionError, match=r"the lease of session 's1' is damaged") as info:
            async with session_lock(s, "s1"):
                pytest.fail("the session must not be taken")
    assert "delete its row from the leases table" in str(info.value)
    assert _rows(db) == before


def _immutable(path: Path) -> bool:
    """Make ``path`` immutable with ``chattr +i`` (as root, on a file system that has it)."""
    try:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, timeout=30)
    except OSError:
        return False
    return done.returncode == 0


async def test_a_store_file_that_cannot_be_written_is_a_session_error(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    async with SqliteStore(db) as s:
        await s.save("s1", transcript(USER_TURN))
    before = db.read_bytes()
    if not _immutable(db):
        pytest.skip("chattr +i is not available here (needs root and a file system with it)")
    try:
        async with SqliteStore(db) as s:
            assert (await s.get("s1")) is not None  # reading still works
            with pytest.raises(SessionError, match=r"s\.db: is read-only; make it"):
                async with session_lock(s, "s1"):
                    pytest.fail("the session must not be taken")
            with pytest.raises(SessionError, match="is read-only"):
                await s.save("s1", transcript(USER_TURN, MODEL_TURN))
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True, timeout=30)
    assert db.read_bytes() == before
