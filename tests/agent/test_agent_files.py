"""Agent files of gemini-cli and Claude Code load unchanged; a folder survives a bad file.

The files under tests/fixtures/agent_files are published examples, copied byte for byte
(their sources are in the README.txt beside them).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from agent import Agent, ClientSettings, ConfigurationError, load_agents
from agent._agent_files import (
    AgentFileWarning,
    build_agent,
    fit_descriptions,
    load_agents_async,
    read_agent_file,
)
from agent._agent_vocabulary import is_gemini_model, resolve_tool
from agent.testing import FakeGemini, function_call
from toolnexus import Tool, ToolResult

FIXTURES = Path(__file__).parent.parent / "fixtures" / "agent_files"
GEMINI_CLI = FIXTURES / "security-auditor.md"
CLAUDE = FIXTURES / "team-reviewer.md"
CLAUDE_LOOSE_YAML = FIXTURES / "assumption-mapping.md"


def part_of(body: dict[str, Any]) -> dict[str, Any]:
    return body["contents"][-1]["parts"][0]  # type: ignore[no-any-return]


def system_of(body: dict[str, Any]) -> str:
    return str(body.get("systemInstruction", {}).get("parts", [{}])[0].get("text", ""))


def messages(record: pytest.WarningsRecorder) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, AgentFileWarning)]


def test_the_gemini_cli_example_runs_with_its_model_tools_temperature_and_turns(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("password = 'hunter2'\n", encoding="utf-8")

    def model(body: dict[str, Any]) -> Any:
        if system_of(body).startswith("You are a ruthless Security Auditor."):
            turn = sum(1 for c in body["contents"] if c["role"] == "model")
            # A new search every turn, so only the turn limit stops it.
            return function_call("grep", {"pattern": f"password{turn}"})
        if "functionResponse" not in part_of(body):
            return function_call("security-auditor", {"task": "Audit app.py"})
        return "audited"

    fake = FakeGemini(model)
    http = fake.http_client()
    tk = tn.build(root=tmp_path)
    helpers = load_agents(
        GEMINI_CLI, toolkit=tk, client=ClientSettings(api_key="t", http_client=http)
    )
    assert [(t.name, t.description) for t in helpers] == [
        ("security-auditor", "Specialized in finding security vulnerabilities in code.")
    ]
    lead = Agent(toolkit=tn.toolkit(helpers), client=ClientSettings(api_key="t", http_client=http))
    result = lead.run_sync("Is app.py safe?")

    assert result.text == "audited"
    audits = [r for r in fake.requests if r.system_text.startswith("You are a ruthless")]
    assert len(audits) == 10  # max_turns: 10
    assert {r.model for r in audits} == {"gemini-3-flash-preview"}
    assert {r.body["generationConfig"]["temperature"] for r in audits} == {0.2}
    assert {tuple(r.declared_functions) for r in audits} == {("grep", "read")}
    assert audits[0].system_text.endswith("Do not fix\nit yourself; just report it.")
    assert "max_turns" in result.tool_calls[0].result.output
    assert fake.requests[0].model == "gemini-2.5-flash"


def test_claude_code_files_load_unchanged_with_mapped_tools_and_the_leads_model(
    tmp_path: Path,
) -> None:
    def model(body: dict[str, Any]) -> Any:
        system = system_of(body)
        if system.startswith("You are a specialized code reviewer"):
            return "no findings"
        if system.startswith("You are an expert product strategist"):
            return "three assumptions"
        if "functionResponse" not in part_of(body):
            return (
                function_call("team-reviewer", {"task": "review"}),
                function_call("assumption-mapping", {"task": "map"}),
            )
        return "both done"

    fake = FakeGemini(model)
    http = fake.http_client()
    tk = tn.build(root=tmp_path)
    with pytest.warns(AgentFileWarning) as record:
        helpers = load_agents(
            [CLAUDE, CLAUDE_LOOSE_YAML],
            toolkit=tk,
            model="gemini-2.5-pro",
            client=ClientSettings(api_key="t", http_client=http),
        )
    assert messages(record) == [
        "agent files: tools the toolkit lacks were left out: SendMessage (team-reviewer.md), "
        "TaskGet (team-reviewer.md), TaskList (team-reviewer.md), TaskUpdate "
        "(team-reviewer.md), WebSearch (assumption-mapping.md)",
        "agent files: models that are not Gemini models run on gemini-2.5-pro instead: "
        "opus (team-reviewer.md)",
    ]
    lead = Agent(
        "gemini-2.5-pro", tn.toolkit(helpers), client=ClientSettings(api_key="t", http_client=http)
    )
    assert lead.run_sync("Review and map").text == "both done"

    by_prompt = {r.system_text.split("\n")[0][:30]: r for r in fake.requests[1:3]}
    reviewer = by_prompt["You are a specialized code rev"]
    strategist = by_prompt["You are an expert product stra"]
    assert reviewer.model == strategist.model == "gemini-2.5-pro"
    assert reviewer.declared_functions == ["bash", "glob", "grep", "read"]
    assert strategist.declared_functions == ["edit", "glob", "grep", "read", "webfetch", "write"]
    assert "temperature" not in reviewer.body.get("generationConfig", {})

    spec = read_agent_file(CLAUDE)
    assert (spec.model, spec.temperature, spec.max_turns, spec.ignored) == ("opus", None, None, ())
    loose = read_agent_file(CLAUDE_LOOSE_YAML)  # its description is not valid YAML
    assert loose.description.startswith("Use when the user needs to identify")
    assert loose.description.endswith("'de-risk', 'assumption map'.")
    assert loose.tools == ("Read", "Write", "Edit", "Glob", "Grep", "WebFetch", "WebSearch")


def test_the_fixtures_are_the_published_bytes() -> None:
    # Hand-edited fixtures would prove nothing: these are the first bytes as published.
    assert GEMINI_CLI.read_bytes().startswith(b"---\nname: security-auditor\n")
    assert CLAUDE.read_bytes().startswith(b"---\nname: team-reviewer\n")
    assert b"\ncolor: green\n" in CLAUDE.read_bytes()


GOOD = "---\nname: good\ndescription: Works.\n---\nYou are good.\n"


def test_a_folder_with_bad_files_loads_the_good_one_and_reports_each(tmp_path: Path) -> None:
    (tmp_path / "a-good.md").write_text(GOOD, encoding="utf-8")
    (tmp_path / "b-plain.md").write_text("no frontmatter here", encoding="utf-8")
    (tmp_path / "c-turns.md").write_text("---\nname: c\nmax_turns: lots\n---\n", encoding="utf-8")
    (tmp_path / "d-remote.md").write_text("---\nname: d\nkind: remote\n---\n", encoding="utf-8")
    os.mkfifo(tmp_path / "e-fifo.md")  # read before the fix, it blocked forever
    (tmp_path / "f-zero.md").symlink_to("/dev/zero")  # ... and this one ate the memory
    (tmp_path / "g-big.md").write_bytes(b"---\nname: g\n---\n" + b"x" * 1_000_001)

    with pytest.warns(AgentFileWarning) as record:
        tools = load_agents(tmp_path, client=ClientSettings(api_key="t"))
    assert [tool.name for tool in tools] == ["good"]
    assert messages(record) == [
        f"skipped agent file {tmp_path / 'b-plain.md'}: needs a `---` frontmatter with a name",
        f"skipped agent file {tmp_path / 'c-turns.md'}: `max_turns` must be a whole number >= 1",
        f"skipped agent file {tmp_path / 'd-remote.md'}: `kind: remote` (an Agent2Agent "
        "server) is not supported; only local agents are",
        f"skipped cannot read the agent file {tmp_path / 'e-fifo.md'}: not a regular file",
        f"skipped cannot read the agent file {tmp_path / 'f-zero.md'}: not a regular file",
        f"skipped cannot read the agent file {tmp_path / 'g-big.md'}: larger than 1,000,000 bytes",
    ]
    with pytest.raises(ConfigurationError, match=r"b-plain\.md: needs a `---` frontmatter"):
        load_agents(tmp_path, strict=True, client=ClientSettings(api_key="t"))
    with pytest.raises(ConfigurationError, match=r"e-fifo\.md: not a regular file"):
        load_agents(
            tmp_path / "e-fifo.md", client=ClientSettings(api_key="t")
        )  # named: raised, not skipped


async def test_the_async_loader_reads_off_the_loop_and_refuses_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "a-good.md").write_text(GOOD, encoding="utf-8")
    os.mkfifo(tmp_path / "b-fifo.md")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(tick())
    with pytest.warns(AgentFileWarning, match="b-fifo.md: not a regular file"):
        tools = await load_agents_async(tmp_path, client=ClientSettings(api_key="t"))
    ticker.cancel()
    assert [tool.name for tool in tools] == ["good"]
    assert ticks > 0  # the loop ran while the files were read


def test_claude_and_inherit_models_run_on_the_leads_model_with_one_warning(
    tmp_path: Path,
) -> None:
    for name, model in [("a", "sonnet"), ("b", "inherit"), ("c", "haiku"), ("d", "sonnet")]:
        text = f"---\nname: {name}\nmodel: {model}\n---\nYou are {name}.\n"
        (tmp_path / f"{name}.md").write_text(text, encoding="utf-8")
    (tmp_path / "e.md").write_text("---\nname: e\nmodel: models/gemini-2.5-pro\n---\n")
    fake = FakeGemini(["from a", "from e"])
    http = fake.http_client()
    with pytest.warns(AgentFileWarning) as record:
        tools = load_agents(
            tmp_path,
            model="gemini-2.5-flash-lite",
            client=ClientSettings(api_key="t", http_client=http),
        )
    assert messages(record) == [
        "agent files: models that are not Gemini models run on gemini-2.5-flash-lite "
        "instead: haiku (c.md), sonnet (2 files)"
    ]
    by_name = {tool.name: tool for tool in tools}
    assert tn.execute(tn.toolkit(tools), "a", {"task": "x"}).output == "from a"
    assert tn.execute(tn.toolkit([by_name["e"]]), "e", {"task": "x"}).output == "from e"
    assert [r.model for r in fake.requests] == ["gemini-2.5-flash-lite", "gemini-2.5-pro"]


@pytest.mark.parametrize(
    ("name", "gemini"),
    [
        ("gemini-2.5-pro", True),
        ("gemini-3-flash-preview", True),
        ("models/gemini-2.5-flash", True),
        ("publishers/google/models/gemini-2.0-flash", True),
        ("projects/p/locations/us-central1/endpoints/123", True),
        ("tunedModels/my-model", True),
        ("gemma-3-27b-it", True),
        ("sonnet", False),
        ("opus", False),
        ("claude-opus-4-5-20251101", False),
        ("gpt-4o", False),
    ],
)
def test_which_model_names_are_gemini_models(name: str, gemini: bool) -> None:
    assert is_gemini_model(name) is gemini


def test_an_agent_named_like_a_tool_or_another_agent_is_refused_naming_the_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "reader.md").write_text("---\nname: read\n---\nI read.\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"reader.md: 'read' is already a tool"):
        load_agents(tmp_path, toolkit=tn.build(), client=ClientSettings(api_key="t"))
    (tmp_path / "reader.md").write_text("---\nname: twin\n---\n", encoding="utf-8")
    (tmp_path / "twin.md").write_text("---\nname: twin\n---\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"twin.md: .*reader.md already names"):
        load_agents(tmp_path, client=ClientSettings(api_key="t"))


def test_the_catalog_of_descriptions_is_capped(tmp_path: Path) -> None:
    for index in range(10):
        about = f"Agent {index}. " + "It does many things. " * (5 + 40 * index)
        text = f"---\nname: agent{index}\ndescription: {about}\n---\n"
        (tmp_path / f"a{index}.md").write_text(text, encoding="utf-8")
    with pytest.warns(AgentFileWarning) as record:
        tools = load_agents(tmp_path, catalog_chars=5_000, client=ClientSettings(api_key="t"))
    descriptions = [tool.description for tool in tools]
    assert sum(map(len, descriptions)) <= 5_000
    assert descriptions[0] == read_agent_file(tmp_path / "a0.md").description  # short: whole
    assert all(d.startswith(f"Agent {i}. ") for i, d in enumerate(descriptions))
    assert descriptions[9].endswith("…")
    assert messages(record) == [
        "agent files: the descriptions of 9 agent(s) were shortened to keep the catalog "
        "under catalog_chars=5000"
    ]
    assert load_agents(tmp_path, catalog_chars=None, client=ClientSettings(api_key="t"))[
        9
    ].description.endswith("It does many things.")
    with pytest.raises(ConfigurationError, match="catalog_chars must be at least 500"):
        load_agents(tmp_path, catalog_chars=100, client=ClientSettings(api_key="t"))


def test_fit_descriptions_keeps_the_short_ones_and_shares_the_rest() -> None:
    assert fit_descriptions(["ab", "cd"], 10) == ["ab", "cd"]
    assert fit_descriptions(["a" * 10, "b" * 100, "c" * 100], 70) == [
        "a" * 10,
        "b" * 29 + "…",
        "c" * 29 + "…",
    ]
    assert fit_descriptions(["x" * 50], None) == ["x" * 50]


def test_documented_fields_are_applied_and_the_others_noted(tmp_path: Path) -> None:
    text = (
        "---\nname: worker\ndescription: Works.\nmaxTurns: 7\ntemperature: 1.5\n"
        "timeout_mins: 5\ntools: [read, write, bash]\ndisallowedTools: Bash\n"
        "permissionMode: plan\ncolor: blue\ncolour: red\n---\nYou work.\n"
    )
    (tmp_path / "worker.md").write_text(text, encoding="utf-8")
    spec = read_agent_file(tmp_path / "worker.md")
    assert (spec.max_turns, spec.temperature, spec.timeout) == (7, 1.5, 300.0)
    agent = build_agent(
        spec, tn.build(), "gemini-2.5-flash", {"client": ClientSettings(api_key="t")}
    )
    assert (agent.limits.deadline, agent.limits.max_turns) == (300.0, 7)
    assert agent.settings.temperature == 1.5
    with pytest.warns(AgentFileWarning) as record:
        (tool,) = load_agents(
            tmp_path, toolkit=tn.build(root=tmp_path), client=ClientSettings(api_key="t")
        )
    assert tool.name == "worker"
    assert messages(record) == [
        "agent files: fields this package does not apply were ignored: permissionMode (worker.md)",
        "agent files: unknown fields were ignored: colour (worker.md)",
    ]


def test_the_allowed_tools_of_a_file_never_exceed_what_it_grants(tmp_path: Path) -> None:
    text = "---\nname: limited\ntools: LS, MultiEdit, Bash(git status:*), WebSearch\n---\nHi.\n"
    (tmp_path / "limited.md").write_text(text, encoding="utf-8")
    fake = FakeGemini(["ok"])
    with pytest.warns(AgentFileWarning, match=r"Bash\(git status:\*\) \(limited.md\)"):
        (tool,) = load_agents(
            tmp_path,
            toolkit=tn.build(root=tmp_path),
            client=ClientSettings(api_key="t", http_client=fake.http_client()),
        )
    assert tn.execute(tn.toolkit([tool]), "limited", {"task": "x"}).output == "ok"
    assert fake.requests[0].declared_functions == ["edit", "glob"]  # no bash for a pattern


def echo(name: str, source: str) -> Tool:
    return Tool(name, lambda args, ctx: ToolResult(name), "", source=source)


@pytest.mark.parametrize(
    ("entry", "granted"),
    [
        ("read", ["read"]),
        ("Read", ["read"]),
        ("read_file", ["read"]),
        ("run_shell_command", ["bash"]),
        ("*", ["bash", "gh_issue", "gh_pr", "read", "wiki_page"]),
        ("mcp_*", ["gh_issue", "gh_pr", "wiki_page"]),
        ("mcp_gh_*", ["gh_issue", "gh_pr"]),
        ("mcp__gh__issue", ["gh_issue"]),
        ("mcp__gh", ["gh_issue", "gh_pr"]),
        ("mcp__gh__nope", []),
        ("WebSearch", []),
        ("Task(helper)", []),
    ],
)
def test_tool_names_of_each_format_resolve_to_ours(entry: str, granted: list[str]) -> None:
    tk = tn.toolkit(
        [
            echo("read", "builtin"),
            echo("bash", "builtin"),
            echo("gh_issue", "mcp"),
            echo("gh_pr", "mcp"),
            echo("wiki_page", "mcp"),
            echo("helper", "agent"),
        ]
    )
    assert sorted(resolve_tool(entry, tk)) == granted


def test_the_fixture_folder_loads_whole(tmp_path: Path) -> None:
    # The three published files side by side, as a user's agents folder would hold them.
    for file in (GEMINI_CLI, CLAUDE, CLAUDE_LOOSE_YAML):
        shutil.copy(file, tmp_path / file.name)
    with pytest.warns(AgentFileWarning):
        tools = load_agents(
            tmp_path, toolkit=tn.build(root=tmp_path), client=ClientSettings(api_key="t")
        )
    assert [tool.name for tool in tools] == [
        "assumption-mapping",
        "security-auditor",
        "team-reviewer",
    ]
