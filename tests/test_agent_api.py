"""Pin the public surface of the agent package."""

from __future__ import annotations

import agent
import agent.events
import agent.hooks

EXPECTED = [
    "DEFAULT_MODEL",
    "Agent",
    "AgentError",
    "ConfigurationError",
    "DeadlineExceededError",
    "DeclarationProblem",
    "HookError",
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


def test_agent_all_is_pinned_and_sorted():
    assert agent.__all__ == EXPECTED
    assert agent.__all__ == sorted(agent.__all__, key=lambda n: (not n.isupper(), n))
    for name in agent.__all__:
        assert getattr(agent, name) is not None


def test_import_agent_is_lazy():
    import subprocess
    import sys

    code = (
        "import sys, agent\n"
        "assert 'google.genai' not in sys.modules and 'sqlite3' not in sys.modules\n"
        "agent.Agent\n"
        "assert 'google.genai' in sys.modules and 'sqlite3' not in sys.modules\n"
        "agent.SqliteStore\n"
        "assert 'sqlite3' in sys.modules\n"
        "assert 'Agent' in dir(agent)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_exception_tree():
    assert issubclass(agent.ConfigurationError, agent.AgentError)
    assert issubclass(agent.RunError, agent.AgentError)
    assert issubclass(agent.ModelError, agent.RunError)
    assert issubclass(agent.DeadlineExceededError, agent.RunError)
    assert not issubclass(agent.ConfigurationError, agent.RunError)


def test_event_and_hook_modules():
    assert sorted(agent.events.__all__) == agent.events.__all__
    assert sorted(agent.hooks.__all__) == agent.hooks.__all__
    assert "DoneEvent" in agent.events.__all__


def test_hook_errors_are_run_errors():
    assert issubclass(agent.HookError, agent.RunError)
    assert issubclass(agent.RunError, agent.AgentError)
