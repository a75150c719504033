"""Sub-agents: a lead agent hands tasks to two Markdown-defined agents, in parallel.

Run it from the repository root (offline: a scripted fake Gemini plays all three models)::

    python examples/subagents.py

The agents are ``examples/subagents/*.md``: YAML frontmatter (name, description, model, tools,
max_turns) and the system prompt as the body. ``toolnexus-agent run --agents examples/subagents``
does the same on the command line.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import toolnexus as tn
from agent import Agent, ClientSettings, load_agents
from agent.events import DoneEvent, SubAgentEvent, ToolCallEvent
from agent.testing import FakeGemini, function_call, reply

HERE = Path(__file__).resolve().parent


def play(body: dict[str, Any]) -> Any:
    """The three models, told apart by their system prompts."""
    system = body.get("systemInstruction", {}).get("parts", [{}])[0].get("text", "")
    last = body["contents"][-1]["parts"][0]
    answered = "functionResponse" in last
    if system.startswith("You are a researcher"):
        if not answered:
            return function_call("grep", {"pattern": "^name:", "path": "examples/skills"})
        return "The skill is called hello-world (examples/skills/hello-world/SKILL.md)."
    if system.startswith("You are a critic"):
        return "It never says what the skill is for."
    if not answered:
        return reply(
            function_call("researcher", {"task": "What is the example skill called?"}),
            function_call("critic", {"task": "Review: 'We ship one skill.'"}),
        )
    found = [p["functionResponse"]["response"]["output"] for p in body["contents"][-1]["parts"]]
    return "Research: " + found[0] + "\nCritique: " + found[1]


async def main() -> None:
    fake = FakeGemini(play)
    http = fake.http_client()
    tools = tn.build(builtins={"tools": {"bash": False, "write": False, "webfetch": False}})
    helpers = load_agents(
        HERE / "subagents",
        toolkit=tools,
        client=ClientSettings(api_key="offline", http_client=http),
    )
    lead = Agent(
        toolkit=tn.toolkit(helpers), client=ClientSettings(api_key="offline", http_client=http)
    )
    async for event in lead.stream("Find the example skill's name and critique our pitch."):
        if isinstance(event, ToolCallEvent):
            print(f"lead -> {event.call.name}")
        elif isinstance(event, SubAgentEvent) and isinstance(event.event, ToolCallEvent):
            print(f"  {event.agent} (depth {event.depth}) -> {event.event.call.name}")
        elif isinstance(event, SubAgentEvent) and isinstance(event.event, DoneEvent):
            print(f"  {event.agent} done: {event.event.result.usage.total} tokens")
        elif isinstance(event, DoneEvent):
            print(event.result.text)
            print(f"total tokens, sub-agents included: {event.result.usage.total}")


if __name__ == "__main__":
    asyncio.run(main())
