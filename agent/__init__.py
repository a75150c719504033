"""agent: the Gemini agent loop on the official ``google-genai`` SDK.

Send a toolkit's tools to Gemini, run every function call the model asks for, send the
results back, repeat until the model answers::

    import toolnexus as tn
    from agent import Agent

    agent = Agent(model="gemini-2.5-flash", toolkit=tn.build(), system_prompt="Be brief.")
    result = agent.run_sync("How many Python files are in this folder?")
    print(result.status, result.text)

Events of a run (`agent.events`), hooks (`agent.hooks`) and the fake Gemini for tests
(`agent.testing`) live in their own modules. The session stores (`MemoryStore`,
`SqliteStore`) load on first use, so ``import agent`` does not pay for SQLite.
"""

from typing import TYPE_CHECKING, Any

from agent._agent import DEFAULT_MODEL, Agent, ToolDeclarationWarning
from agent._request import DeclarationProblem
from agent._result import RunResult, ToolCallRecord, Usage
from agent._retry import RetryPolicy
from agent.errors import (
    AgentError,
    ConfigurationError,
    DeadlineExceededError,
    ModelError,
    RunError,
)
from agent.hooks import Hooks, ModelRequest, Veto

if TYPE_CHECKING:
    from agent._store import MemoryStore, SessionBusyError, SqliteStore, Store, Transcript

_LAZY = {"MemoryStore", "SessionBusyError", "SqliteStore", "Store", "Transcript"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from agent import _store

        return getattr(_store, name)
    raise AttributeError(f"module 'agent' has no attribute {name!r}")


__all__ = [
    "DEFAULT_MODEL",
    "Agent",
    "AgentError",
    "ConfigurationError",
    "DeadlineExceededError",
    "DeclarationProblem",
    "Hooks",
    "MemoryStore",
    "ModelError",
    "ModelRequest",
    "RetryPolicy",
    "RunError",
    "RunResult",
    "SessionBusyError",
    "SqliteStore",
    "Store",
    "ToolCallRecord",
    "ToolDeclarationWarning",
    "Transcript",
    "Usage",
    "Veto",
]
