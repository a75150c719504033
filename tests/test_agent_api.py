"""Pin the public surface of the agent package."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import pytest

import agent
import agent.events
import agent.hooks
import agent.testing

EXPECTED = [
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


def test_agent_all_is_pinned_and_sorted():
    assert agent.__all__ == EXPECTED
    assert agent.__all__ == sorted(agent.__all__, key=lambda n: (not n.isupper(), n))
    for name in agent.__all__:
        assert getattr(agent, name) is not None


def test_import_agent_does_not_load_the_sdk():
    code = (
        "import sys, agent\n"
        "assert 'google.genai' not in sys.modules\n"
        "assert 'Agent' in dir(agent)\n"
        "agent.Agent\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("module", [agent, agent.testing], ids=lambda m: m.__name__)
def test_every_exported_exception_is_an_agent_error(module: ModuleType) -> None:
    exported = [getattr(module, name) for name in module.__all__]
    exceptions = [
        value for value in exported if isinstance(value, type) and issubclass(value, BaseException)
    ]
    assert exceptions
    for exc in exceptions:
        assert issubclass(exc, agent.AgentError), exc


def test_exception_tree():
    assert issubclass(agent.ConfigurationError, agent.AgentError)
    assert issubclass(agent.RunError, agent.AgentError)
    assert issubclass(agent.ModelError, agent.RunError)
    assert issubclass(agent.DeadlineExceededError, agent.RunError)
    assert not issubclass(agent.ConfigurationError, agent.RunError)
    assert issubclass(agent.SessionBusyError, agent.SessionError)
    assert issubclass(agent.TranscriptVersionError, agent.SessionError)
    assert issubclass(agent.TranscriptVersionError, ValueError)
    assert issubclass(agent.SessionError, agent.AgentError)
    assert not issubclass(agent.SessionError, agent.RunError | agent.ConfigurationError)
    assert issubclass(agent.testing.FakeGeminiError, AssertionError)


def test_session_errors_carry_their_data_and_name_the_fix():
    busy = agent.SessionBusyError("alice", "this process")
    assert (busy.session_id, busy.holder) == ("alice", "this process")
    assert "wait for that run to finish" in str(busy)
    newer = agent.TranscriptVersionError(7, 1)
    assert (newer.version, newer.supported) == (7, 1)
    assert "upgrade toolnexus-gemini" in str(newer)


def test_event_and_hook_modules():
    assert sorted(agent.events.__all__) == agent.events.__all__
    assert sorted(agent.hooks.__all__) == agent.hooks.__all__
    assert "DoneEvent" in agent.events.__all__


def test_hook_errors_are_run_errors():
    assert issubclass(agent.HookError, agent.RunError)
    assert issubclass(agent.RunError, agent.AgentError)
