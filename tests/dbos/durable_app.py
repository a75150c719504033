"""A durable agent app that the crash tests run as a separate process and kill.

``python durable_app.py start RUN_ID PROMPT`` runs a durable run and prints its result as
JSON; ``resume RUN_ID`` launches DBOS (which recovers the killed run) and prints the
result once it finishes. The fake Gemini's URL, the database URL and a work directory come
from the environment (``FAKE_URL``, ``DB_URL``, ``WORK``). Each tool appends ``start`` and
``end`` lines to ``WORK/ran.log``; ``slow`` (idempotent) and ``charge`` (not) wait for
the file ``WORK/gate`` to exist. With ``CACHE=1`` in the environment the agent has a long
system prompt kept in a context cache.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from dbos import DBOS

import toolnexus as tn
from agent import Agent, ClientSettings
from agent.capabilities import ContextCache
from agent.dbos import DurableAgent

WORK = Path(os.environ["WORK"])


def _log(line: str) -> None:
    with (WORK / "ran.log").open("a", encoding="utf-8") as file:
        file.write(line + "\n")


@tn.define_tool
def note(text: str) -> str:
    """Write a note."""
    _log(f"start note {text}")
    _log(f"end note {text}")
    return f"noted {text}"


async def _gate() -> None:
    while not (WORK / "gate").exists():
        await asyncio.sleep(0.02)


@tn.define_tool(idempotent=True)
async def slow(text: str) -> str:
    """Take a while (until the gate file exists); running it twice does no harm."""
    _log(f"start slow {text}")
    await _gate()
    _log(f"end slow {text}")
    return f"slow {text} done"


@tn.define_tool
async def charge(amount: int) -> str:
    """Charge the card (until the gate file exists); running it twice charges twice."""
    _log(f"start charge {amount}")
    await _gate()
    _log(f"end charge {amount}")
    return f"charged {amount}"


CACHED = os.environ.get("CACHE") == "1"
agent = Agent(
    toolkit=tn.build(root=WORK, tools=[note, slow, charge]),
    client=ClientSettings(api_key="test-key-not-a-secret", base_url=os.environ["FAKE_URL"]),
    system_prompt="Keep to the house rules. " * 400 if CACHED else None,
    capabilities=[ContextCache(ttl=600, mode="always")] if CACHED else [],
)
durable = DurableAgent(agent, name="crash_app")


async def main(mode: str, run_id: str, prompt: str | None) -> None:
    DBOS(config={"name": "crash-app", "system_database_url": os.environ["DB_URL"]})
    DBOS.launch()
    try:
        if mode == "start":
            result = await durable.run(prompt, run_id=run_id)
        else:
            handle = await DBOS.retrieve_workflow_async(run_id)
            result = await handle.get_result()
        print(json.dumps({"status": result.status, "text": result.text, "turns": result.turns}))
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
