"""The page's API in process (httpx's ASGI transport), on agents talking to a FakeGemini.

The event stream is the same as `Agent.stream`'s; a decision runs a gated tool exactly
once and a repeated or stale one is refused with 409; a run can be stopped; a replay
through the fake gives the identical trajectory; a fork keeps its first turns byte for
byte.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from agent import Transcript
from agent.testing import FakeGemini, function_call, reply, thought
from agent.web import event_json
from tests.web._support import Page, agent_events, follow, roundtrip
from toolnexus import Tool, Toolkit


class Deploys:
    """A gated ``deploy`` tool that counts its runs, and an ungated ``echo``."""

    def __init__(self) -> None:
        self.ran: list[dict[str, Any]] = []

    def toolkit(self) -> Toolkit:
        def deploy(args: dict[str, Any], ctx: Any) -> str:
            self.ran.append(args)
            return f"deployed {args['target']}"

        def echo(args: dict[str, Any], ctx: Any) -> str:
            return "echo:" + str(args.get("text", ""))

        schema = {
            "type": "object",
            "properties": {"target": {"type": "string", "enum": ["staging", "prod"]}},
            "required": ["target"],
            "additionalProperties": False,
        }
        text = {"type": "object", "properties": {"text": {"type": "string"}}}
        return tn.toolkit(
            [
                Tool("deploy", deploy, "Deploy.", schema, requires_approval=True),
                Tool("echo", echo, "Echo.", text),
            ]
        )


def deploy_script() -> list[Any]:
    return [
        reply(thought("Deploy it."), function_call("deploy", {"target": "staging"})),
        "Deployed to staging.",
    ]


async def start(client: Any, text: str = "Ship it", **extra: Any) -> dict[str, Any]:
    response = await client.post("/api/runs", json={"text": text, **extra})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def pending_of(client: Any, run: str) -> dict[str, Any]:
    state = (await client.get(f"/api/runs/{run}")).json()
    assert state["status"] == "pending", state
    pending: dict[str, Any] = state["pending"]
    return pending


# ------------------------------------------------------------------ the event stream


async def test_the_event_stream_is_agent_stream_s_events_for_the_same_scenario() -> None:
    script = [
        reply(
            thought("Both at once."),
            function_call("echo", {"text": "a"}),
            function_call("echo", {"text": "b"}),
        ),
        reply("Both echoed: the answer is here, in several words."),
    ]
    page = Page(script, Deploys().toolkit())
    async with page.client() as client:
        run = (await start(client, "Echo a and b"))["id"]
        entries = await follow(client, run)
    streamed = agent_events(entries)
    # The same agent, scenario and session, driven by Agent.stream directly.
    fake = FakeGemini(script)
    direct = [
        roundtrip(event_json(event))
        async for event in page.agent(fake).stream("Echo a and b", session="direct")
    ]
    assert streamed == direct
    types = [event["type"] for event in streamed]
    assert types.count("TextEvent") > 1, "the answer arrives in pieces, as streamed"
    assert types[-1] == "DoneEvent" and streamed[-1]["result"]["status"] == "completed"
    assert entries[0][1:] == ("note", {"note": "prompt", "text": "Echo a and b", "files": []})
    assert entries[-1][2] == {"note": "idle", "status": "completed"}
    assert [seq for seq, _, _ in entries] == list(range(1, len(entries) + 1))
    assert page.fakes[0].requests[1].contents == fake.requests[1].contents


async def test_following_from_an_entry_gives_only_the_later_ones() -> None:
    page = Page(["Hello."], Deploys().toolkit())
    async with page.client() as client:
        run = (await start(client))["id"]
        everything = await follow(client, run)
        later = await follow(client, run, after=2)
    assert later == everything[2:]


# ------------------------------------------------------------------ steering


async def test_an_approval_runs_the_tool_once_and_a_second_one_gets_409() -> None:
    deploys = Deploys()
    page = Page(deploy_script(), deploys.toolkit())
    async with page.client() as client:
        run = (await start(client))["id"]
        first = await follow(client, run)
        assert agent_events(first)[-1]["result"]["status"] == "pending"
        request = await pending_of(client, run)
        assert request["kind"] == "approval" and request["data"]["tool"] == "deploy"
        assert deploys.ran == []
        decision = {"request_id": request["id"], "action": "approve"}
        answered = await client.post(f"/api/runs/{run}/decision", json=decision)
        assert answered.status_code == 202, answered.text
        again = await client.post(f"/api/runs/{run}/decision", json=decision)
        assert again.status_code == 409
        assert "nothing was changed" in again.json()["error"]
        rest = await follow(client, run, after=len(first))
        events = agent_events(rest)
        done = events[-1]["result"]
        assert done["status"] == "completed" and done["text"] == "Deployed to staging."
        # The approved call's result is in the stream of the resumed run.
        results = [e for e in events if e["type"] == "ToolResultEvent"]
        assert [r["result"]["output"] for r in results] == ["deployed staging"]
        late = await client.post(f"/api/runs/{run}/decision", json=decision)
        assert late.status_code == 409
        state = (await client.get(f"/api/runs/{run}")).json()
    assert deploys.ran == [{"target": "staging"}], "the tool ran exactly once"
    assert state["status"] == "completed" and state["pending"] is None
    notes = [data for _, kind, data in rest if kind == "note"]
    assert notes[0]["note"] == "decision" and notes[0]["answer"]["data"] == {"approved": True}


async def test_two_decisions_at_once_run_the_tool_once() -> None:
    deploys = Deploys()
    page = Page(deploy_script(), deploys.toolkit())
    async with page.client() as client:
        run = (await start(client))["id"]
        await follow(client, run)
        request = await pending_of(client, run)
        decision = {"request_id": request["id"], "action": "approve"}
        deny = {"request_id": request["id"], "action": "deny"}
        answers = await asyncio.gather(
            client.post(f"/api/runs/{run}/decision", json=decision),
            client.post(f"/api/runs/{run}/decision", json=deny),
            client.post(f"/api/runs/{run}/decision", json=decision),
        )
        await follow(client, run)
    assert sorted(answer.status_code for answer in answers) == [202, 409, 409]
    assert deploys.ran in ([], [{"target": "staging"}])
    assert len(deploys.ran) == (1 if answers[1].status_code == 409 else 0)


async def test_a_denial_with_its_reason_reaches_the_model_and_nothing_runs() -> None:
    deploys = Deploys()
    page = Page(deploy_script(), deploys.toolkit())
    async with page.client() as client:
        run = (await start(client))["id"]
        await follow(client, run)
        request = await pending_of(client, run)
        denied = await client.post(
            f"/api/runs/{run}/decision",
            json={"request_id": request["id"], "action": "deny", "reason": "not on a Friday"},
        )
        assert denied.status_code == 202
        await follow(client, run)
    assert deploys.ran == []
    sent = page.fakes[0].requests[-1].function_responses[0]["response"]
    assert sent["isError"] is True and "not on a Friday" in sent["output"]


async def test_edited_arguments_are_checked_against_the_schema_first() -> None:
    deploys = Deploys()
    page = Page(deploy_script(), deploys.toolkit())
    async with page.client() as client:
        run = (await start(client))["id"]
        await follow(client, run)
        request = await pending_of(client, run)
        bad = await client.post(
            f"/api/runs/{run}/decision",
            json={"request_id": request["id"], "action": "edit", "args": {"target": "moon"}},
        )
        assert bad.status_code == 422 and "moon" in bad.json()["error"]
        assert (await pending_of(client, run))["id"] == request["id"], "it still waits"
        good = await client.post(
            f"/api/runs/{run}/decision",
            json={"request_id": request["id"], "action": "edit", "args": {"target": "prod"}},
        )
        assert good.status_code == 202
        await follow(client, run)
    assert deploys.ran == [{"target": "prod"}]


@pytest.mark.parametrize(
    "decision",
    [
        {"action": "yes"},
        {"action": "APPROVE"},
        {},
        {"action": "deny", "reason": 7},
        {"action": "edit", "args": "target=prod"},
        {"action": "answer", "answers": "yes"},
    ],
)
async def test_a_decision_in_no_known_shape_runs_nothing_and_the_call_still_waits(
    decision: dict[str, Any],
) -> None:
    deploys = Deploys()
    page = Page(deploy_script(), deploys.toolkit())
    async with page.client() as client:
        run = (await start(client))["id"]
        await follow(client, run)
        request = await pending_of(client, run)
        refused = await client.post(
            f"/api/runs/{run}/decision", json={"request_id": request["id"], **decision}
        )
        assert refused.status_code in (400, 422), refused.text
        assert (await pending_of(client, run))["id"] == request["id"]
        stale = await client.post(
            f"/api/runs/{run}/decision", json={"request_id": "approval-other", "action": "approve"}
        )
        assert stale.status_code == 409
        assert (
            await client.post(f"/api/runs/{run}/decision", content=b"not json")
        ).status_code == 400
    assert deploys.ran == []
    assert len(page.fakes[0].requests) == 1, "no request was sent after the refusals"


async def test_a_question_is_answered_from_the_page() -> None:
    questions = {"questions": [{"question": "Which city?", "options": ["Paris", "Rome"]}]}
    script = [function_call("question", questions), "Paris it is."]
    page = Page(script, tn.build(builtins={"tools": {"bash": False}}))
    async with page.client() as client:
        run = (await start(client, "Plan a trip"))["id"]
        await follow(client, run)
        request = await pending_of(client, run)
        assert request["kind"] == "question"
        answered = await client.post(
            f"/api/runs/{run}/decision",
            json={"request_id": request["id"], "action": "answer", "answers": "Paris"},
        )
        assert answered.status_code == 202
        events = agent_events(await follow(client, run))
    assert events[-1]["result"]["status"] == "completed"
    assert (
        json.loads(page.fakes[0].requests[-1].function_responses[0]["response"]["output"])
        == "Paris"
    )


async def test_a_running_run_can_be_stopped_and_keeps_its_completed_turns() -> None:
    started = asyncio.Event()

    async def slow(args: dict[str, Any], ctx: Any) -> str:
        started.set()
        await asyncio.Event().wait()  # until cancelled
        return "never"

    script = [function_call("echo", {"text": "x"}), function_call("slow", {}), "unreached"]
    page = Page(script, tn.toolkit([*Deploys().toolkit(), Tool("slow", slow, "Waits.")]))
    async with page.client() as client:
        run = (await start(client))["id"]
        await asyncio.wait_for(started.wait(), 30)
        state = (await client.get(f"/api/runs/{run}")).json()
        assert state["status"] == "running"
        busy = await client.post(f"/api/runs/{run}/messages", json={"text": "more"})
        assert busy.status_code == 409
        stopped = await client.post(f"/api/runs/{run}/stop")
        assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
        entries = await follow(client, run)
        assert (await client.post(f"/api/runs/{run}/stop")).status_code == 409
    assert {"note": "stopped"} in [data for _, kind, data in entries if kind == "note"]
    saved = await page.store.get(run)
    # The first turn (echo) was saved; the turn in flight is not.
    assert saved is not None and [c["role"] for c in saved.contents] == ["user", "model", "user"]


# ------------------------------------------------------------------ replay and fork


def three_turns() -> list[Any]:
    return [
        reply(thought("First the notes."), function_call("echo", {"text": "notes"})),
        reply(function_call("echo", {"text": "a"}), function_call("echo", {"text": "b"})),
        "All three echoed.",
        "Second answer.",
        "Forked answer.",
    ]


async def test_a_replay_through_the_fake_gives_the_identical_trajectory() -> None:
    page = Page(three_turns(), Deploys().toolkit())
    async with page.client() as client:
        run = (await start(client, "Echo things"))["id"]
        await follow(client, run)
        await client.post(f"/api/runs/{run}/messages", json={"text": "And again?"})
        await follow(client, run)
        report = (await client.post(f"/api/runs/{run}/replay")).json()
    assert report["identical"] is True, report
    assert report["recorded"] == report["replayed"] == 8
    assert report["requests"] == 4
    assert [turn["calls"] for turn in report["turns"]] == [["echo"], ["echo", "echo"], [], []]
    assert all(turn["identical"] for turn in report["turns"])


async def test_a_replay_finds_a_transcript_the_loop_would_not_have_made() -> None:
    from agent.web import replay

    page = Page(three_turns(), Deploys().toolkit())
    async with page.client() as client:
        run = (await start(client, "Echo things"))["id"]
        await follow(client, run)
    saved = await page.store.get(run)
    assert saved is not None
    swapped = json.loads(json.dumps(saved.contents))
    swapped[4]["parts"].reverse()  # the answers of a parallel turn, out of call order
    report = await replay(swapped, "gemini-3-flash-preview")
    assert report.identical is False
    assert report.difference == "Content 5 differs"
    assert (await replay(saved.contents, "gemini-3-flash-preview")).identical


async def test_a_fork_keeps_the_first_turns_byte_for_byte_and_goes_on() -> None:
    page = Page(three_turns(), Deploys().toolkit())
    async with page.client() as client:
        run = (await start(client, "Echo things"))["id"]
        await follow(client, run)
        original = await page.store.get(run)
        assert original is not None
        forked = await client.post(
            f"/api/runs/{run}/fork",
            json={"turn": 1, "text": "Now only echo z.", "model": "gemini-2.5-flash"},
        )
        assert forked.status_code == 201, forked.text
        fork = forked.json()
        entries = await follow(client, fork["id"])
        no_turn = await client.post(f"/api/runs/{run}/fork", json={"turn": 9})
        no_prompt = await client.post(f"/api/runs/{run}/fork", json={"turn": 3})
    assert no_turn.status_code == 422 and no_prompt.status_code == 422
    assert fork["forked_from"] == [run, 1]
    kept = 3  # the prompt, turn 1 and its function responses
    copy = await page.store.get(fork["id"])
    assert copy is not None
    as_bytes = [json.dumps(c, separators=(",", ":")).encode() for c in copy.contents[:kept]]
    assert as_bytes == [
        json.dumps(c, separators=(",", ":")).encode() for c in original.contents[:kept]
    ]
    signature = original.contents[1]["parts"][1]["thoughtSignature"]
    assert copy.contents[1]["parts"][1]["thoughtSignature"] == signature
    # The fork's model got those turns as sent the first time, then the new prompt.
    fork_fake = page.fakes[-1]
    sent = fork_fake.requests[0]
    assert sent.contents[:kept] == original.contents[:kept]
    assert sent.contents[kept] == {"role": "user", "parts": [{"text": "Now only echo z."}]}
    assert page.made[-1].model == "gemini-2.5-flash" and page.made[-1].turns_kept == 1
    assert agent_events(entries)[-1]["result"]["status"] == "completed"
    assert entries[0][2]["note"] == "fork"


# ------------------------------------------------------------------ files, trace, list


async def test_files_go_with_the_prompt() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n fake image").decode()
    page = Page(["A picture."], Deploys().toolkit())
    async with page.client() as client:
        run = (
            await start(
                client,
                "What is this?",
                files=[{"name": "a.png", "mime_type": "image/png", "data": png}],
            )
        )["id"]
        entries = await follow(client, run)
        bad = await client.post(
            "/api/runs",
            json={"text": "x", "files": [{"name": "a", "mime_type": "image/png", "data": "@@"}]},
        )
    assert bad.status_code == 422
    parts = page.fakes[0].requests[0].contents[0]["parts"]
    assert parts[0] == {"text": "What is this?"}
    assert parts[1]["inlineData"] == {"mimeType": "image/png", "data": png}
    assert entries[0][2]["files"][0]["name"] == "a.png"


async def test_the_trace_and_each_model_call_s_request_and_response() -> None:
    page = Page(three_turns(), Deploys().toolkit())
    async with page.client() as client:
        run = (await start(client, "Echo things"))["id"]
        await follow(client, run)
        trace = (await client.get(f"/api/runs/{run}/trace")).json()
        (root,) = trace["runs"]
        turns = root["children"]
        assert [t["name"] for t in turns] == ["turn 1", "turn 2", "turn 3"]
        second = [(c["kind"], c["name"]) for c in turns[1]["children"]]
        assert second == [
            ("model_call", "generate_content gemini-3-flash-preview"),
            ("tool_call", "execute_tool echo"),
            ("tool_call", "execute_tool echo"),
        ]
        call = turns[0]["children"][0]
        assert call["usage"]["total"] > 0 and call["cost_usd"] > 0
        assert root["usage"]["total"] == sum(t["usage"]["total"] for t in turns)
        exchange = (await client.get(f"/api/runs/{run}/trace/{call['id']}")).json()
        missing = await client.get(f"/api/runs/{run}/trace/n999")
    assert exchange["request"]["contents"] == page.fakes[0].requests[0].contents
    assert exchange["response"]["candidates"][0]["content"]["parts"][0]["thought"] is True
    assert missing.status_code == 404


async def test_the_list_holds_the_store_s_sessions_and_they_open() -> None:
    page = Page(["Hi again."], Deploys().toolkit())
    contents = [
        {"role": "user", "parts": [{"text": "An older chat"}]},
        {"role": "model", "parts": [{"text": "Yes?"}]},
    ]
    await page.store.save("older", Transcript(contents, metadata={"model": "gemini-2.5-flash"}))
    async with page.client() as client:
        listed = (await client.get("/api/runs")).json()["runs"]
        assert [(r["id"], r["title"], r["live"]) for r in listed] == [
            ("older", "An older chat", False)
        ]
        opened = (await client.get("/api/runs/older")).json()
        assert opened["contents"] == contents and opened["entries"] == 0
        more = await client.post("/api/runs/older/messages", json={"text": "Still there?"})
        assert more.status_code == 202
        events = agent_events(await follow(client, "older"))
        assert (await client.get("/api/runs/nope")).status_code == 404
    assert events[-1]["result"]["text"] == "Hi again."
    assert page.made[0].model == "gemini-2.5-flash"
    assert page.fakes[0].requests[0].contents[:2] == contents


async def test_info_names_the_model_the_tools_and_the_prompt() -> None:
    page = Page([], Deploys().toolkit())
    async with page.client(prompt="Try me", demo=True, tools=("deploy", "echo")) as client:
        info = (await client.get("/api/info")).json()
    assert info["model"] == "gemini-3-flash-preview"
    assert info["tools"] == ["deploy", "echo"] and info["prompt"] == "Try me"
    assert info["demo"] is True and info["evals"] is False


# ------------------------------------------------------------------ evals


EVALS = """\
cases:
  - id: greets
    prompt: Say hi
    scenario: [{text: "hi there"}]
    expect: {text_contains: [hi]}
  - id: reads
    prompt: Read the notes
    files: {notes.txt: "hello"}
    scenario:
      - calls: [{name: read, args: {path: notes.txt}}]
      - text: It says hello.
    expect:
      tools:
        in_order: [{name: read, args: {path: notes.txt}}, glob]
"""


async def test_an_eval_file_runs_offline_and_shows_pass_rates_and_the_trajectory(
    tmp_path: Path,
) -> None:
    path = tmp_path / "evals.yaml"
    path.write_text(EVALS, encoding="utf-8")
    command = (sys.executable, "-m", "agent", "eval")
    page = Page([], Deploys().toolkit())
    async with page.client(eval_command=command) as client:
        view = (await client.post("/api/evals/run", json={"path": str(path)})).json()
        missing = await client.post("/api/evals/run", json={"path": str(tmp_path / "no.yaml")})
        junk = await client.post("/api/evals/report", json={"not": "a report"})
    assert missing.status_code == 422 and "no.yaml" in missing.json()["error"]
    assert junk.status_code == 422
    assert view["samples"] == 2 and view["passed_samples"] == 1 and view["pass_rate"] == 0.5
    greets, reads = view["cases"]
    assert (greets["id"], greets["pass_rate"], greets["failures"]) == ("greets", 1.0, [])
    (failure,) = reads["failures"]
    assert failure["mode"] == "in_order"
    assert failure["trajectory"] == [
        {
            "expected": 'read({"path": "notes.txt"})',
            "made": 'read({"path": "notes.txt"})',
            "same": True,
        },
        {"expected": "glob", "made": None, "same": False},
    ]
    assert failure["failed"][0]["name"].startswith("tools in_order")


async def test_an_agent_that_cannot_be_made_is_a_clear_error_and_nothing_runs() -> None:
    page = Page(["unused"], Deploys().toolkit())

    async def broken(options: Any) -> Any:
        raise ValueError("the scenario file is gone")

    page.make = broken  # type: ignore[method-assign]
    async with page.client() as client:
        response = await client.post("/api/runs", json={"text": "hi"})
        listed = (await client.get("/api/runs")).json()["runs"]
    assert listed == []
    assert response.status_code == 500
    assert response.json() == {"error": "could not make the agent: the scenario file is gone"}
