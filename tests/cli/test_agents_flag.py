"""``--agents DIR``: Markdown agent files become sub-agents of the command's agent."""

from __future__ import annotations

from pathlib import Path

from agent.testing import FakeGemini, function_call
from tests.cli.conftest import Cli

HELPER = """\
---
name: helper
description: Answers small questions.
tools: [get_weather]
---
You are the helper.
"""


def test_run_with_agents_shows_the_subagents_activity(cli: Cli, workdir: Path) -> None:
    (workdir / "agents").mkdir()
    (workdir / "agents" / "helper.md").write_text(HELPER, encoding="utf-8")
    fake = FakeGemini(
        [
            function_call("helper", {"task": "weather in Rome"}),
            function_call("get_weather", {"city": "Rome"}),
            "Rome: sunny.",
            "The helper says: Rome: sunny.",
        ]
    )
    tools = ("--no-builtins", "--tools", "clitools:TOOLS", "--agents", "agents")
    with fake.serve() as server:
        code, out, err = cli("run", *tools, "Weather?", server=server)
    assert code == 0, err
    assert out == "The helper says: Rome: sunny.\n"
    assert [line for line in err.splitlines() if not line.startswith("cost:")] == [
        '-> helper {"task": "weather in Rome"}',
        '  [helper] -> get_weather {"city": "Rome"}',
        "  [helper] <- get_weather: sunny in Rome",
        "  [helper] done (completed)",
        "<- helper: Rome: sunny.",
    ]
    assert fake.requests[0].declared_functions == ["get_weather", "helper"]
    assert fake.requests[1].system_text == "You are the helper."
    assert fake.requests[1].declared_functions == ["get_weather"]


def test_a_bad_agents_dir_is_a_usage_error(cli: Cli, workdir: Path) -> None:
    fake = FakeGemini(["unused"])
    with fake.serve() as server:
        code, _, err = cli("run", "--no-builtins", "--agents", "missing", "Hi", server=server)
    assert code == 2
    assert "--agents: no agent file or directory at missing" in err
