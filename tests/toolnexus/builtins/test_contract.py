"""The built-in tools as models see them: the cross-implementation schema contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from toolnexus import Tool, ToolResult

FIXTURE = Path(__file__).parents[2] / "fixtures" / "builtins.json"
CONTRACT: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
NAMES = sorted(CONTRACT["builtins"])


def test_the_contract_lists_ten_builtins() -> None:
    assert len(NAMES) == 10


@pytest.mark.parametrize("name", NAMES)
def test_builtin_schema_equals_the_contract(tmp_path: Path, name: str) -> None:
    tool = toolnexus.build(root=tmp_path)[name]
    assert dict(tool.input_schema) == CONTRACT["builtins"][name]
    assert tool.source == "builtin"
    assert tool.description.strip()
    assert tool.validate is not None


def test_build_with_skills_renders_eleven_declarations() -> None:
    root = Path(__file__).parents[3]
    tk = toolnexus.build(skills=root / "examples" / "skills", root=root)
    # The full schemas (what the agent sends) are the contract's exactly.
    declarations = toolnexus.to_gemini(tk, json_schema=True)[0]["functionDeclarations"]
    names = [d["name"] for d in declarations]
    assert names == [
        "apply_patch", "bash", "edit", "glob", "grep", "question",
        "read", "skill", "todowrite", "webfetch", "write",
    ]  # fmt: skip
    assert declarations[0]["parametersJsonSchema"]["required"] == ["patchText"]
    skill = next(d for d in declarations if d["name"] == "skill")
    assert skill["parametersJsonSchema"] == CONTRACT["skill"]
    sources = {tool.name: tool.source for tool in tk}
    assert all(sources[name] == "builtin" for name in NAMES)


@pytest.mark.parametrize("option", [False, {"disabled": True}, {"enabled": False}])
def test_builtins_can_be_turned_off(tmp_path: Path, option: Any) -> None:
    assert len(toolnexus.build(root=tmp_path, builtins=option)) == 0


def test_single_builtins_can_be_dropped(tmp_path: Path) -> None:
    tk = toolnexus.build(root=tmp_path, builtins={"tools": {"bash": False, "write": False}})
    assert sorted(tk.names) == sorted(set(NAMES) - {"bash", "write"})


def test_your_tool_named_bash_replaces_the_builtin(tmp_path: Path) -> None:
    def run(args: dict[str, Any], ctx: toolnexus.ToolContext) -> ToolResult:
        return ToolResult(f"would run {args['command']}")

    mine = Tool("bash", run, "My guarded shell.", {"type": "object"})
    tk = toolnexus.build(root=tmp_path, tools=[mine])
    assert tk["bash"] is mine
    assert len(tk) == 10
    assert toolnexus.execute(tk, "bash", {"command": "ls"}).output == "would run ls"
