"""agent: the Gemini agent loop on the official ``google-genai`` SDK.

Send a toolkit's tools to Gemini, run every function call the model asks for, send the
results back, repeat until the model answers::

    import toolnexus as tn
    from agent import Agent

    agent = Agent(model="gemini-2.5-flash", toolkit=tn.build(), system_prompt="Be brief.")
    result = agent.run_sync("How many Python files are in this folder?")
    print(result.status, result.text)

Events of a run (`agent.events`), hooks (`agent.hooks`) and the fake Gemini for tests
(`agent.testing`) live in their own modules.

``import agent`` itself is cheap: each name below loads its module (and the Gemini SDK,
SQLite, ...) on first use, so ``toolnexus-agent --help`` starts without loading the SDK.
The exceptions (`agent.errors`) are light and load at once.
"""

import importlib
from typing import TYPE_CHECKING, Any

from agent.errors import (
    AgentError,
    ConfigurationError,
    DeadlineExceededError,
    HookError,
    ModelError,
    RunError,
    SessionBusyError,
    SessionError,
    TranscriptError,
    TranscriptVersionError,
)

if TYPE_CHECKING:
    from agent._agent import DEFAULT_MODEL, Agent, ToolDeclarationWarning
    from agent._agent_files import (
        AgentFileWarning,
        list_agent_files,
        load_agents,
        load_agents_async,
        load_named_agents_async,
    )
    from agent._approval import ApprovalPolicy, Deny
    from agent._client import ClientSettings
    from agent._compaction import Compaction
    from agent._cost import Cost
    from agent._declarations import DeclarationProblem
    from agent._known_models import UnknownModelWarning
    from agent._limits import UsageLimits
    from agent._media import Prompt
    from agent._options import ModelSettings, RunLimits
    from agent._plan import RunPlan
    from agent._redact import scrub
    from agent._result import RunResult, ToolCallRecord, Usage
    from agent._retry import RetryPolicy
    from agent._store import MemoryStore, Store
    from agent._store_sqlite import SqliteStore
    from agent._transcript import Transcript
    from agent.hooks import Hooks, ModelRequest, TurnSettings, TurnState, Veto
    from agent.steps import Steps

_LAZY = {
    "DEFAULT_MODEL": "agent._agent",
    "Agent": "agent._agent",
    "ToolDeclarationWarning": "agent._agent",
    "ApprovalPolicy": "agent._approval",
    "Deny": "agent._approval",
    "DeclarationProblem": "agent._declarations",
    "RunResult": "agent._result",
    "ToolCallRecord": "agent._result",
    "Usage": "agent._result",
    "RetryPolicy": "agent._retry",
    "MemoryStore": "agent._store",
    "SqliteStore": "agent._store_sqlite",
    "Store": "agent._store",
    "Transcript": "agent._transcript",
    "Hooks": "agent.hooks",
    "ModelRequest": "agent.hooks",
    "TurnSettings": "agent.hooks",
    "TurnState": "agent.hooks",
    "Veto": "agent.hooks",
    "load_agents": "agent._agent_files",
    "load_agents_async": "agent._agent_files",
    "load_named_agents_async": "agent._agent_files",
    "list_agent_files": "agent._agent_files",
    "AgentFileWarning": "agent._agent_files",
    "Cost": "agent._cost",
    "UsageLimits": "agent._limits",
    "Compaction": "agent._compaction",
    "ClientSettings": "agent._client",
    "ModelSettings": "agent._options",
    "RunLimits": "agent._options",
    "RunPlan": "agent._plan",
    "scrub": "agent._redact",
    "Prompt": "agent._media",
    "UnknownModelWarning": "agent._known_models",
    "Steps": "agent.steps",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "DEFAULT_MODEL",
    "Agent",
    "AgentError",
    "AgentFileWarning",
    "ApprovalPolicy",
    "ClientSettings",
    "Compaction",
    "ConfigurationError",
    "Cost",
    "DeadlineExceededError",
    "DeclarationProblem",
    "Deny",
    "HookError",
    "Hooks",
    "MemoryStore",
    "ModelError",
    "ModelRequest",
    "ModelSettings",
    "Prompt",
    "RetryPolicy",
    "RunError",
    "RunLimits",
    "RunPlan",
    "RunResult",
    "SessionBusyError",
    "SessionError",
    "SqliteStore",
    "Steps",
    "Store",
    "ToolCallRecord",
    "ToolDeclarationWarning",
    "Transcript",
    "TranscriptError",
    "TranscriptVersionError",
    "TurnSettings",
    "TurnState",
    "UnknownModelWarning",
    "Usage",
    "UsageLimits",
    "Veto",
    "list_agent_files",
    "load_agents",
    "load_agents_async",
    "load_named_agents_async",
    "scrub",
]
