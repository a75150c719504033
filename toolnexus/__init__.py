"""toolnexus: uniform tools from many sources, rendered for Gemini, OpenAI and Anthropic.

Example::

    import toolnexus as tn

    tk = tn.build(skills="examples/skills")        # built-in tools + the skill tool
    tn.to_gemini(tk)                              # [{"functionDeclarations": [...]}]
    result = tn.execute(tk, "skill", {"name": "hello-world"})
    print(result.output)

This package never imports ``google.genai``; the Gemini agent loop lives in ``agent``.
"""

from toolnexus._build import build, build_async
from toolnexus._execute import execute, execute_async
from toolnexus._function import define_tool
from toolnexus._http import http_tool
from toolnexus._registry import Limits
from toolnexus._skills import Skill, SkillInventory, SkippedSkill, list_skills, skills_prompt
from toolnexus.adapter import to_anthropic, to_gemini, to_openai
from toolnexus.tool import (
    Answer,
    ArgumentError,
    Request,
    Tool,
    ToolContext,
    ToolError,
    Toolkit,
    ToolResult,
    sanitize,
    toolkit,
)

__all__ = [
    "Answer",
    "ArgumentError",
    "Limits",
    "Request",
    "Skill",
    "SkillInventory",
    "SkippedSkill",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Toolkit",
    "build",
    "build_async",
    "define_tool",
    "execute",
    "execute_async",
    "http_tool",
    "list_skills",
    "sanitize",
    "skills_prompt",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "toolkit",
]
