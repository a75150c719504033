"""Model fallback and per-turn control: a night batch that finishes although its model is down.

Three tasks run on ``gemini-3.1-pro-preview`` with ``gemini-3-flash-preview`` standing by.
Pro answers the first task's first turn, then becomes overloaded: that turn's next step goes
to flash with pro's thought signature replaced by the documented placeholder (Gemini would
refuse pro's signature from flash); while pro cools down the next tasks go to flash at once.
Each task ends at its ``submit`` tool (no turn spent to comment on it), and a ``prepare_turn``
hook keeps thinking low once the research is done.

Run it from the repository root (offline: a scripted fake Gemini plays both models)::

    python examples/routing.py
"""

from __future__ import annotations

import asyncio
from typing import Any

import toolnexus as tn
from agent import Agent, ClientSettings, Hooks, RetryPolicy, RunLimits, TurnSettings, TurnState
from agent.events import DoneEvent, FallbackEvent
from agent.testing import FakeGemini, function_call

PRO = "gemini-3.1-pro-preview"
FLASH = "gemini-3-flash-preview"


@tn.define_tool
def lookup(topic: str) -> str:
    """Look a topic up in the team's notes."""
    if topic == "billing":
        FAKE.overloaded.add(PRO)  # pro goes down while the first task works
    return f"notes on {topic}: ok"


@tn.define_tool
def submit(report: str) -> str:
    """Hand in the task's report (the run ends here)."""
    return f"filed: {report}"


def model(body: dict[str, Any]) -> Any:
    """Plays both models: look the topic up, then submit a report on it."""
    last = body["contents"][-1]["parts"][-1]
    if "functionResponse" in last:
        return function_call("submit", {"report": last["functionResponse"]["response"]["output"]})
    return function_call("lookup", {"topic": last["text"].split()[-1]})


FAKE = FakeGemini(model)


def prepare(state: TurnState) -> TurnSettings | None:
    """Think hard while researching, little once the notes are in."""
    return TurnSettings(thinking="low") if state.tool_calls else None


async def main() -> None:
    agent = Agent(
        [PRO, FLASH],
        tn.toolkit([lookup, submit]),
        capabilities=[Hooks(prepare_turn=prepare)],
        limits=RunLimits(
            stop_at_tools=["submit"],
            retry=RetryPolicy(attempts=2, initial_backoff=0.01, jitter=0.0),
        ),
        client=ClientSettings(api_key="offline", http_client=FAKE.http_client()),
    )
    for topic in ("billing", "security", "hiring"):
        async for event in agent.stream(f"Write a report on {topic}"):
            if isinstance(event, FallbackEvent):
                failed = f"{event.model} failed ({event.status})"
                print(f"  {failed}; turn {event.turn} -> {event.fallback}")
            elif isinstance(event, DoneEvent):
                result = event.result
                print(f"{topic}: {result.text} | turns on {', '.join(result.turn_models)}")
    placeholder = FAKE.requests[3].contents[1]["parts"][0]["thoughtSignature"]
    print(f"flash got pro's call with the signature {placeholder!r}")
    print(f"requests: {len(FAKE.requests)}, refused for a signature: ", end="")
    print(sum(1 for r in FAKE.requests if r.status == 400))


if __name__ == "__main__":
    asyncio.run(main())
