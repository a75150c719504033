"""Sub-agents: Markdown-defined agents as tools, nested events, usage, suspension, depth."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from agent import Agent, ClientSettings, ConfigurationError, load_agents
from agent.events import DoneEvent, Event, SubAgentEvent, ToolCallEvent, ToolResultEvent
from agent.testing import FakeGemini, function_call, reply

RESEARCHER = """\
---
name: researcher
description: Looks facts up.
tools: [lookup]
max_turns: 4
---
You are the researcher.
"""

WRITER = """\
---
name: writer
description: Writes one sentence.
model: gemini-writer
tools: []
---
You are the writer.
"""


@tn.define_tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic} is 42"


def usage(total: int) -> dict[str, int]:
    return {"promptTokenCount": total - 1, "candidatesTokenCount": 1, "totalTokenCount": total}


def last_part(body: dict[str, Any]) -> dict[str, Any]:
    return body["contents"][-1]["parts"][0]  # type: ignore[no-any-return]


def system_of(body: dict[str, Any]) -> str:
    return str(body.get("systemInstruction", {}).get("parts", [{}])[0].get("text", ""))


def play(body: dict[str, Any]) -> Any:
    """The model of all three agents, told apart by their system prompts."""
    system = system_of(body)
    part = last_part(body)
    answered = "functionResponse" in part
    if system == "You are the researcher.":
        if not answered:
            return reply(function_call("lookup", {"topic": "life"}), usage=usage(10))
        return reply(f"found: {part['functionResponse']['response']['output']}", usage=usage(20))
    if system == "You are the writer.":
        return reply("A fine sentence.", usage=usage(30))
    if not answered:
        calls = (
            function_call("researcher", {"task": "look up life"}),
            function_call("writer", {"task": "write a sentence"}),
        )
        return reply(*calls, usage=usage(100))
    outputs = [p["functionResponse"]["response"]["output"] for p in body["contents"][-1]["parts"]]
    return reply(" | ".join(outputs), usage=usage(200))


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    (tmp_path / "researcher.md").write_text(RESEARCHER, encoding="utf-8")
    (tmp_path / "writer.md").write_text(WRITER, encoding="utf-8")
    return tmp_path


@pytest.mark.filterwarnings("ignore::agent.UnknownModelWarning")  # a made-up model name
async def test_two_markdown_subagents_in_parallel(agents_dir: Path) -> None:
    fake = FakeGemini(play, extra_models=["gemini-writer"])
    http = fake.http_client()
    main_tools = tn.toolkit([lookup])
    helpers = load_agents(
        agents_dir, toolkit=main_tools, client=ClientSettings(api_key="test", http_client=http)
    )
    assert [(t.name, t.source, t.description) for t in helpers] == [
        ("researcher", "agent", "Looks facts up."),
        ("writer", "agent", "Writes one sentence."),
    ]
    parent = Agent(
        toolkit=tn.toolkit(helpers), client=ClientSettings(api_key="test", http_client=http)
    )
    events = [event async for event in parent.stream("Research and write")]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.status == "completed"
    assert result.text == "found: life is 42 | A fine sentence."
    assert result.usage.total == 100 + 10 + 20 + 30 + 200  # the sub-agents' usage rolls up
    assert [u.total for u in result.turn_usage] == [100, 200]

    nested: dict[str, list[Event]] = {"researcher": [], "writer": []}
    for event in events:
        if isinstance(event, SubAgentEvent):
            assert event.depth == 1
            nested[event.agent].append(event.event)
    kinds = [type(e).__name__ for e in nested["researcher"]]
    kinds = [k for i, k in enumerate(kinds) if k != "TextEvent" or kinds[i - 1] != k]
    assert kinds == [
        "UsageEvent",
        "ToolCallEvent",
        "ToolResultEvent",
        "TextEvent",
        "UsageEvent",
        "DoneEvent",
    ]
    done = nested["researcher"][-1]
    assert isinstance(done, DoneEvent) and done.result.text == "found: life is 42"
    assert isinstance(nested["writer"][-1], DoneEvent)
    # Each sub-agent's events come before the parent's result for its call.
    position = {id(e): i for i, e in enumerate(events)}
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    for event in events:
        if isinstance(event, SubAgentEvent) and isinstance(event.event, DoneEvent):
            mine = next(r for r in results if r.call.name == event.agent)
            assert position[id(event)] < position[id(mine)]
    models = {r.model for r in fake.requests}
    assert models == {"gemini-2.5-flash", "gemini-writer"}
    writer_request = next(r for r in fake.requests if r.model == "gemini-writer")
    assert "tools" not in writer_request.body  # an empty allow-list: no tools
    researcher_request = next(r for r in fake.requests if "researcher" in r.system_text)
    assert researcher_request.declared_functions == ["lookup"]
    assert researcher_request.contents[0]["parts"][0]["text"] == "look up life"


ASKER = """\
---
name: planner
description: Plans a trip, asking the user when it must.
tools: [question]
---
You are the planner.
"""


def ask_then_answer(body: dict[str, Any]) -> Any:
    system = system_of(body)
    part = last_part(body)
    if "You are the planner." in system:
        if "functionResponse" not in part:
            return function_call("question", {"questions": [{"question": "Which city?"}]})
        return f"Plan for {part['functionResponse']['response']['output']}"
    if "functionResponse" not in part:
        return function_call("planner", {"task": "plan a trip"})
    return f"Done: {part['functionResponse']['response']['output']}"


def test_a_question_inside_a_subagent_suspends_the_parent_and_resumes_inside(
    tmp_path: Path,
) -> None:
    (tmp_path / "planner.md").write_text(ASKER, encoding="utf-8")
    fake = FakeGemini(ask_then_answer)

    def make_parent() -> Agent:
        http = fake.http_client()
        tools = load_agents(
            tmp_path, toolkit=tn.build(), client=ClientSettings(api_key="test", http_client=http)
        )
        return Agent(
            toolkit=tn.toolkit(tools), client=ClientSettings(api_key="test", http_client=http)
        )

    first = make_parent().run_sync("Plan my trip")
    assert first.status == "pending"
    assert first.pending is not None and first.pending["kind"] == "question"
    assert "Which city?" in first.pending["prompt"]
    saved = json.dumps(first.contents)  # plain JSON: the sub-agent's state travels inside

    answer = {"id": first.pending["id"], "ok": True, "data": "Lisbon"}
    resumed = make_parent().run_sync(history=json.loads(saved), answer=answer)  # type: ignore[arg-type]
    assert resumed.status == "completed"
    assert resumed.text == 'Done: Plan for "Lisbon"'
    planner_last = [r for r in fake.requests if "planner" in r.system_text][-1]
    assert planner_last.function_responses[0]["response"]["output"] == '"Lisbon"'


def test_inline_answers_reach_a_subagent_through_the_parents_wait_for(tmp_path: Path) -> None:
    (tmp_path / "planner.md").write_text(ASKER, encoding="utf-8")
    fake = FakeGemini(ask_then_answer)
    http = fake.http_client()
    tools = load_agents(
        tmp_path, toolkit=tn.build(), client=ClientSettings(api_key="test", http_client=http)
    )
    parent = Agent(
        toolkit=tn.toolkit(tools),
        wait_for=lambda request: {"id": request["id"], "ok": True, "data": "Oslo"},
        client=ClientSettings(api_key="test", http_client=http),
    )
    result = parent.run_sync("Plan my trip")
    assert result.text == 'Done: Plan for "Oslo"'


def test_the_depth_limit_stops_recursion() -> None:
    def chain(body: dict[str, Any]) -> Any:
        system = system_of(body)
        part = last_part(body)
        if "functionResponse" in part:
            return f"{system} got: {part['functionResponse']['response']['output']}"
        if system == "c":
            return "bottom"
        return function_call("down", {"task": "go deeper"})

    fake = FakeGemini(chain)
    http = fake.http_client()

    def agent(system: str, tools: list[tn.Tool]) -> Agent:
        return Agent(
            toolkit=tn.toolkit(tools),
            system_prompt=system,
            client=ClientSettings(api_key="t", http_client=http),
        )

    c = agent("c", [])
    b = agent("b", [c.as_tool(name="down", description="deeper", max_depth=1)])
    a = agent("a", [b.as_tool(name="down", description="deeper", max_depth=1)])
    result = a.run_sync("start")
    assert result.status == "completed"
    assert result.text.startswith("a got: b got: Sub-agent 'down' was not started")
    assert not any(r.system_text == "c" for r in fake.requests)

    b2 = agent("b", [c.as_tool(name="down", description="deeper", max_depth=2)])
    a2 = agent("a", [b2.as_tool(name="down", description="deeper", max_depth=2)])
    events: list[Event] = []

    async def collect() -> None:
        events.extend([event async for event in a2.stream("start")])

    asyncio.run(collect())
    assert events[-1].result.text == "a got: b got: bottom"  # type: ignore[union-attr]
    depths = {
        (e.agent, e.depth)
        for e in events
        if isinstance(e, SubAgentEvent) and isinstance(e.event, ToolCallEvent | DoneEvent)
    }
    assert depths == {("down", 1), ("down", 2)}
    with pytest.raises(ConfigurationError):
        c.as_tool(name="x", description="", max_depth=0)


def test_a_named_bad_agent_file_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("no frontmatter", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="frontmatter"):
        load_agents(tmp_path / "a.md", client=ClientSettings(api_key="t"))
    (tmp_path / "a.md").write_text("---\nname: a\ntemperature: hot\n---\nhi", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"a\.md: `temperature` must be a number"):
        load_agents(tmp_path / "a.md", client=ClientSettings(api_key="t"))


def test_tools_and_fields_the_agent_cannot_have_are_left_out_with_a_note(tmp_path: Path) -> None:
    from agent._agent_files import AgentFileWarning

    (tmp_path / "a.md").write_text("---\nname: a\ntools: [nope]\n---\nhi", encoding="utf-8")
    with pytest.warns(AgentFileWarning, match=r"tools the toolkit lacks were left out: nope"):
        load_agents(tmp_path, toolkit=tn.toolkit([lookup]), client=ClientSettings(api_key="t"))
    (tmp_path / "a.md").write_text("---\nname: a\ncolour: red\n---\nhi", encoding="utf-8")
    with pytest.warns(AgentFileWarning, match="unknown fields were ignored: colour"):
        load_agents(tmp_path, client=ClientSettings(api_key="t"))


def test_hostile_agent_files_are_one_line_configuration_errors(tmp_path: Path) -> None:
    anchors = ['  - &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    anchors += [f"  - &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, 9)]
    hostile = {
        "tools": "tools:\n" + "\n".join(anchors),  # 9**9 values behind a few lines
        "description": "description:\n" + "\n".join(anchors),
    }
    # Too deep for YAML: read line by line, as Claude Code reads such files; the unknown
    # field is left out and cannot leak into the name.
    deep = "extra: " + "[" * 20_000 + "]" * 20_000
    (tmp_path / "a.md").write_text(f"---\nname: a\n{deep}\n---\nhi", encoding="utf-8")
    (tool,) = load_agents(tmp_path, strict=True, client=ClientSettings(api_key="t"))
    assert tool.name == "a"
    for field, yaml_text in hostile.items():
        (tmp_path / "a.md").write_text(f"---\nname: a\n{yaml_text}\n---\nhi", encoding="utf-8")
        with pytest.raises(ConfigurationError) as info:  # strict: refused, not skipped
            load_agents(tmp_path, strict=True, client=ClientSettings(api_key="t"))
        assert len(str(info.value).splitlines()) == 1, field


WRITER_WITH_TOOLS = """\
---
name: scribe
description: Writes files.
tools: [write]
---
You are the scribe.
"""


def scribe_play(body: dict[str, Any]) -> Any:
    system = system_of(body)
    part = last_part(body)
    if "You are the scribe." in system:
        if "functionResponse" not in part:
            return function_call("write", {"path": "n.txt", "content": "hi"})
        return f"scribe: {part['functionResponse']['response']['output']}"
    if "functionResponse" not in part:
        return function_call("scribe", {"task": "write n.txt"})
    return f"lead: {part['functionResponse']['response']['output']}"


def test_an_approval_inside_a_subagent_is_answered_on_resume(tmp_path: Path) -> None:
    from agent import ApprovalPolicy

    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "scribe.md").write_text(WRITER_WITH_TOOLS, encoding="utf-8")
    root = tmp_path / "ws"
    root.mkdir()
    fake = FakeGemini(scribe_play)

    def make_lead() -> Agent:
        http = fake.http_client()
        tk = tn.build(root=root)
        policy = ApprovalPolicy(tools={"write": "ask"})
        tools = load_agents(
            tmp_path / "agents",
            toolkit=tk,
            approval=policy,
            client=ClientSettings(api_key="t", http_client=http),
        )
        return Agent(
            toolkit=tn.toolkit(tools),
            approval=policy,
            client=ClientSettings(api_key="t", http_client=http),
        )

    first = make_lead().run_sync("Write it")
    assert first.status == "pending" and first.pending is not None
    assert first.pending["kind"] == "approval"
    assert first.pending["data"] == {"tool": "write", "args": {"path": "n.txt", "content": "hi"}}
    assert not (root / "n.txt").exists()
    answer = {"id": first.pending["id"], "ok": True, "data": {"approved": True}}
    done = make_lead().run_sync(history=json.loads(json.dumps(first.contents)), answer=answer)  # type: ignore[arg-type]
    assert done.status == "completed", done
    assert (root / "n.txt").read_text() == "hi"
    assert done.text.startswith("lead: scribe: Wrote 2 bytes")
    assert sum(1 for r in fake.requests if "scribe" in r.system_text) == 2  # not restarted
