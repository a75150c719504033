"""agent.web: the local page of ``toolnexus-agent web`` — watch, steer, replay and fork runs.

An ASGI app (Starlette; run it with uvicorn) over the conversations of one store. Each
conversation is a session driven through the public run plan (``agent.plan(...,
streaming=True).events()``); the page receives the same typed events as `Agent.stream`
(`event_json`), answers approvals and questions, stops runs, shows the recorded trace
(`agent.recording`), replays a stored conversation through the fake Gemini (`replay`) and
forks one at a turn. Needs the ``web`` extra. See ``docs/web.md``.

Example::

    from agent import MemoryStore
    from agent.web import Conversations, PageSettings, create_app

    store = MemoryStore()

    async def make(options):
        return Agent("gemini-2.5-flash", toolkit, store=store)

    settings = PageSettings(token=secrets.token_urlsafe(24), model="gemini-2.5-flash")
    app = create_app(Conversations(store, make), settings)   # serve it with uvicorn
"""

from agent.web._app import PageSettings, answer_for, create_app
from agent.web._evals import eval_view, trajectory_rows
from agent.web._events import event_json, json_ready
from agent.web._replay import ReplayReport, fork_point, model_turns, replay
from agent.web._runs import (
    AgentMaker,
    AgentOptions,
    Conversation,
    Conversations,
    Entry,
    Refused,
)
from agent.web._security import LOOPBACK, Guard, host_name

__all__ = [
    "LOOPBACK",
    "AgentMaker",
    "AgentOptions",
    "Conversation",
    "Conversations",
    "Entry",
    "Guard",
    "PageSettings",
    "Refused",
    "ReplayReport",
    "answer_for",
    "create_app",
    "eval_view",
    "event_json",
    "fork_point",
    "host_name",
    "json_ready",
    "model_turns",
    "replay",
    "trajectory_rows",
]
