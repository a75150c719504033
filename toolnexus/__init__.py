"""toolnexus: uniform tools from many sources, rendered for Gemini, OpenAI and Anthropic.

Example::

    import toolnexus as tn

    tk = tn.build(skills="examples/skills")        # built-in tools + the skill tool
    tn.to_gemini(tk)                              # [{"functionDeclarations": [...]}]
    result = tn.execute(tk, "skill", {"name": "hello-world"})
    print(result.output)

Everything it raises is a `ToolnexusError` (see `toolnexus.errors`): a `ConfigError`
when a toolkit is configured in a way that cannot work. A failing tool call never
raises: `execute` returns an error `ToolResult`.

This package never imports ``google.genai``; the Gemini agent loop lives in ``agent``.
``import toolnexus`` loads only the core types and errors: everything else (and
pydantic, asyncio, httpx, yaml) is imported when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolnexus._attachment import Attachment
from toolnexus.errors import (
    ArgumentError,
    ConfigError,
    FrontmatterError,
    GeminiSchemaWarning,
    McpConfigError,
    ToolError,
    ToolnexusError,
)
from toolnexus.tool import (
    Answer,
    Request,
    Tool,
    ToolContext,
    Toolkit,
    ToolResult,
    sanitize,
    toolkit,
)

if TYPE_CHECKING:
    from toolnexus._build import build, build_async
    from toolnexus._execute import execute, execute_async
    from toolnexus._function import as_tool, define_tool
    from toolnexus._http import http_tool
    from toolnexus._mcp import McpServerStatus, mcp_status
    from toolnexus._registry import Limits
    from toolnexus._schema import schema_problems, schema_validator
    from toolnexus._skill_tool import skills_prompt
    from toolnexus._skills import (
        Skill,
        SkillInventory,
        SkippedSkill,
        list_skills,
        parse_frontmatter,
        read_small_file,
        split_frontmatter,
    )
    from toolnexus.adapter import to_anthropic, to_gemini, to_openai

_LAZY = {
    "build": "toolnexus._build",
    "build_async": "toolnexus._build",
    "execute": "toolnexus._execute",
    "execute_async": "toolnexus._execute",
    "define_tool": "toolnexus._function",
    "as_tool": "toolnexus._function",
    "schema_problems": "toolnexus._schema",
    "schema_validator": "toolnexus._schema",
    "http_tool": "toolnexus._http",
    "McpServerStatus": "toolnexus._mcp",
    "mcp_status": "toolnexus._mcp",
    "Limits": "toolnexus._registry",
    "Skill": "toolnexus._skills",
    "SkillInventory": "toolnexus._skills",
    "SkippedSkill": "toolnexus._skills",
    "list_skills": "toolnexus._skills",
    "parse_frontmatter": "toolnexus._skills",
    "read_small_file": "toolnexus._skills",
    "split_frontmatter": "toolnexus._skills",
    "skills_prompt": "toolnexus._skill_tool",
    "to_anthropic": "toolnexus.adapter",
    "to_gemini": "toolnexus.adapter",
    "to_openai": "toolnexus.adapter",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
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
