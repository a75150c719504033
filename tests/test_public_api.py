"""Pin the public surface: a change to these lists is a deliberate API change."""

from __future__ import annotations

import importlib

import pytest

TOOLNEXUS_ALL = [
    "Answer",
    "ArgumentError",
    "Attachment",
    "ConfigError",
    "FrontmatterError",
    "GeminiSchemaWarning",
    "Limits",
    "McpConfigError",
    "McpServerStatus",
    "Request",
    "Skill",
    "SkillInventory",
    "SkippedSkill",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Toolkit",
    "ToolnexusError",
    "as_tool",
    "build",
    "build_async",
    "define_tool",
    "execute",
    "execute_async",
    "http_tool",
    "list_skills",
    "mcp_status",
    "parse_frontmatter",
    "read_small_file",
    "sanitize",
    "schema_problems",
    "schema_validator",
    "skills_prompt",
    "split_frontmatter",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "toolkit",
]

MODULES = {
    "toolnexus": TOOLNEXUS_ALL,
    "toolnexus.tool": [
        "Answer",
        "ArgumentError",
        "DEFAULT_TOOL_TIMEOUT",
        "Handler",
        "Request",
        "Tool",
        "ToolContext",
        "ToolError",
        "ToolResult",
        "Toolkit",
        "sanitize",
        "toolkit",
    ],
    "toolnexus.adapter": [
        "GEMINI_SCHEMA_KEYWORDS",
        "json_schema_parameters",
        "to_anthropic",
        "to_gemini",
        "to_openai",
    ],
    "toolnexus.errors": [
        "ArgumentError",
        "ConfigError",
        "FrontmatterError",
        "GeminiSchemaWarning",
        "McpConfigError",
        "ToolError",
        "ToolnexusError",
    ],
}


@pytest.mark.parametrize("module_name", sorted(MODULES))
def test_all_is_pinned_sorted_and_importable(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__all__ == MODULES[module_name]
    assert module.__all__ == sorted(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_top_level_reexports_are_the_same_objects() -> None:
    import toolnexus
    import toolnexus.adapter
    import toolnexus.errors
    import toolnexus.tool

    for name in MODULES["toolnexus.tool"]:
        if name in TOOLNEXUS_ALL:
            assert getattr(toolnexus, name) is getattr(toolnexus.tool, name)
    for name in MODULES["toolnexus.adapter"]:
        if name in TOOLNEXUS_ALL:
            assert getattr(toolnexus, name) is getattr(toolnexus.adapter, name)
    for name in MODULES["toolnexus.errors"]:
        assert getattr(toolnexus, name) is getattr(toolnexus.errors, name)


def test_every_toolnexus_exception_is_under_the_root() -> None:
    import toolnexus

    exported = [getattr(toolnexus, name) for name in toolnexus.__all__]
    errors = [x for x in exported if isinstance(x, type) and issubclass(x, BaseException)]
    assert {e.__name__ for e in errors} == set(MODULES["toolnexus.errors"])
    assert all(issubclass(e, toolnexus.ToolnexusError) for e in errors)


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from toolnexus import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == TOOLNEXUS_ALL
