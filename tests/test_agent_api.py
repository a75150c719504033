"""Pin the public surface of the agent package."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import pytest

import agent
import agent.capabilities
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


_OPTIONAL = (
    "agent._batch",
    "agent._builtin_tools",
    "agent._caches",
    "agent._caching",
    "agent._compaction",
    "agent._hooked",
    "agent._limits",
    "agent._output",
    "agent._token_rate",
    "agent._tracing",
    "agent.batch",
    "agent.cli",
    "agent.dbos",
    "agent.mcp_server",
    "agent.recording",
    "agent.testing",
    "agent.web",
    "dbos",
    "mcp",
    "opentelemetry",
    "toolnexus._mcp",
    "toolnexus._skills",
)
"""Subsystems a plain run never needs: each loads with the feature that uses it."""


def test_import_agent_loads_no_optional_subsystem():
    code = (
        "import sys, agent\n"
        "agent.Agent\n"
        f"optional = {_OPTIONAL!r}\n"
        "print(sorted(m for m in optional if any(k == m or k.startswith(m + '.') "
        "for k in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"


_PLAIN_RUN = """
import sys

import httpx

from agent import Agent, ClientSettings
from toolnexus import define_tool, toolkit

OPTIONAL = {optional!r}


def loaded():
    return sorted(m for m in OPTIONAL if any(k == m or k.startswith(m + ".") for k in sys.modules))


def reply(request):
    text = {{"candidates": [{{"content": {{"role": "model", "parts": [{{"text": "hi"}}]}}}}]}}
    return httpx.Response(200, json=text)


@define_tool
def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b


http = httpx.AsyncClient(transport=httpx.MockTransport(reply))
agent = Agent(toolkit=toolkit([add]), client=ClientSettings(api_key="k", http_client=http))
print("agent", loaded())
print("run", agent.run_sync("go").text, loaded())
{feature}
print("feature", loaded())
"""


@pytest.mark.parametrize(
    ("feature", "loads"),
    [
        ("agent.run_sync('x', session='s')", "agent._compaction"),
        ("Agent(output_type=int, client=ClientSettings(api_key='k'))", "agent._output"),
        (
            "Agent(builtin_tools=['google_search'], client=ClientSettings(api_key='k'))",
            "agent._builtin_tools",
        ),
        ("import opentelemetry.trace; agent.run_sync('x')", "agent._tracing"),
        (
            "from agent import Hooks\n"
            "Agent(capabilities=[Hooks()], client=ClientSettings(api_key='k'))",
            "agent._hooked",
        ),
        (
            "from agent.capabilities import TokenRate\n"
            "Agent(capabilities=[TokenRate(10**6)], client=ClientSettings(api_key='k'))",
            "agent._token_rate",
        ),
        (
            "from agent import UsageLimits\n"
            "assert agent.run_sync('x', usage_limits=UsageLimits(requests=0)).limit == "
            "'usage:requests'",
            "agent._limits",
        ),
        (
            "from agent.recording import record\n"
            "with record() as rec: agent.run_sync('x')\n"
            "assert rec.runs",
            "agent.recording",
        ),
    ],
    ids=[
        "compaction",
        "typed-output",
        "builtin-tools",
        "tracing-api",
        "hooks",
        "token-rate",
        "usage-limits",
        "recording",
    ],
)
def test_a_plain_run_loads_no_optional_subsystem_until_a_feature_needs_it(
    feature: str, loads: str
) -> None:
    code = _PLAIN_RUN.format(optional=_OPTIONAL, feature=feature)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["agent []", "run hi []"]
    assert loads in lines[2], lines[2]


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
    assert sorted(agent.capabilities.__all__) == agent.capabilities.__all__
    assert agent.capabilities.Hooks is agent.Hooks
    assert sorted(agent.hooks.__all__) == agent.hooks.__all__
    assert "DoneEvent" in agent.events.__all__


WEB = [
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


def test_the_recording_and_the_web_page_modules_are_pinned():
    import agent.recording
    import agent.web

    assert agent.recording.__all__ == ["Recording", "TraceNode", "record"]
    assert agent.web.__all__ == WEB
    for name in WEB:
        assert getattr(agent.web, name) is not None
    assert issubclass(agent.web.Refused, Exception)


def test_hook_errors_are_run_errors():
    assert issubclass(agent.HookError, agent.RunError)
    assert issubclass(agent.RunError, agent.AgentError)


def test_the_batch_module_is_pinned():
    import agent.batch

    assert agent.batch.__all__ == ["INLINE_LIMIT", "GeminiBatch", "JobNote", "Task"]
