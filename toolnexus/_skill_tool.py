"""The ``skill`` tool that serves skills to a model, and the `skills_prompt` catalog.

A model sees the skills twice: as one line each in the system prompt (`skills_prompt`)
and in the description of the ``skill`` tool, which it calls with a skill's name to get
the full instructions, the skill's base directory and a sample of its files.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Sequence
from typing import Any

from toolnexus._schema import schema_validator
from toolnexus._skills import Skill, is_file, walk_files
from toolnexus.errors import ConfigError
from toolnexus.tool import Tool, ToolContext, Toolkit, ToolResult

__all__ = ["SKILL_INPUT_SCHEMA", "skill_tool", "skills_prompt"]

SKILL_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}

_TOOL_INTRO = (
    "Load a skill: specialized instructions and workflows for one kind of task, with the "
    "files that come with it (scripts, references). When a task matches a skill's "
    "description, call this tool with the skill's name before you start, then follow the "
    "instructions it returns. Relative paths in a skill are relative to its base directory."
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _sibling_files(skill: Skill, limit: int) -> list[str]:
    """Up to ``limit`` files under the skill's folder, sorted by path, minus its SKILL.md."""
    files: list[str] = []
    if limit == 0:
        return files
    own = os.fspath(skill.path)
    for entry in walk_files(os.fspath(skill.directory), set(), []):
        if entry.path != own and is_file(entry):
            files.append(entry.path)
            if len(files) == limit:
                break
    return files


def _attribute(text: str) -> str:
    """Quote ``text`` for an XML attribute: ``&``, ``<`` and ``"`` only (normal names pass)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def _render(skill: Skill, sample: int) -> str:
    parts = [
        f'<skill_content name="{_attribute(skill.name)}">',
        f"# Skill: {skill.name}",
        "",
        skill.body,
        "",
        f"Base directory for this skill: {skill.directory.as_uri()}",
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base "
        "directory.",
    ]
    if sample != -1:
        files = _sibling_files(skill, sample)
        parts += ["Note: file list is sampled.", "", "<skill_files>"]
        parts += [f"<file>{path}</file>" for path in files] if files else [""]
        parts.append("</skill_files>")
    parts.append("</skill_content>")
    return "\n".join(parts)


def _describe(skills: Iterable[Skill]) -> str:
    lines = [
        f"- {s.name}: {_one_line(s.description)}" if s.description else f"- {s.name}"
        for s in sorted(skills, key=lambda s: s.name)
    ]
    if not lines:
        return _TOOL_INTRO
    return _TOOL_INTRO + "\n\nAvailable skills:\n" + "\n".join(lines)


def skill_tool(skills: Sequence[Skill], sample: int = 10) -> Tool:
    """Return the ``skill`` tool (source ``"skill"``) that serves ``skills`` by name.

    The result is the skill's instructions in a ``<skill_content>`` block with its base
    directory as a ``file://`` URI and up to ``sample`` files of its folder (sorted by
    path, listed when the tool is called): ``0`` keeps an empty ``<skill_files>`` block,
    ``-1`` leaves the list and its note out. An unknown name is an error result that
    lists the available names. When two skills share a name, the first is served.

    Example::

        inventory = toolnexus.list_skills("examples/skills")
        tool = skill_tool(inventory.skills, sample=5)
        result = toolnexus.execute(toolnexus.toolkit([tool]), "skill", {"name": "hello-world"})
    """
    if sample < -1:
        raise ConfigError(f"sample must be -1 (no file list) or a count >= 0, not {sample}")
    by_name: dict[str, Skill] = {}
    for skill in skills:
        by_name.setdefault(skill.name, skill)

    def load(args: dict[str, Any], context: ToolContext) -> ToolResult:
        name = args["name"]
        skill = by_name.get(name)
        if skill is None:
            available = ", ".join(sorted(by_name)) or "none"
            return ToolResult(
                f'Skill "{name}" not found. Available skills: {available}', is_error=True
            )
        metadata = {"name": skill.name, "directory": os.fspath(skill.directory)}
        return ToolResult(_render(skill, sample), metadata=metadata)

    schema = copy.deepcopy(SKILL_INPUT_SCHEMA)
    return Tool(
        "skill",
        load,
        _describe(by_name.values()),
        schema,
        source="skill",
        validate=schema_validator(schema),
    )


# --- the catalog ---------------------------------------------------------------------------

_PROMPT_HEADER = (
    "Skills provide specialized instructions and workflows for specific tasks.\n"
    "Use the skill tool to load a skill when a task matches its description.\n"
    "\n"
    "## Available Skills"
)


def skills_prompt(source: Toolkit | Iterable[Skill]) -> str:
    """Return the skills catalog for a system prompt, or ``""`` when no skill is described.

    Each skill with a description is one ``- **name**: description`` line (the
    description on one line), sorted by name, under a short header; skills without a
    description are left out.

    Args:
        source: A `Toolkit` (its skills are used) or the skills themselves.

    Returns:
        The catalog text, or ``""`` when no skill has a description.

    Example::

        tk = toolnexus.build(skills="examples/skills")
        system_prompt = "You are a helpful agent. " + toolnexus.skills_prompt(tk)
    """
    skills = source.skills if isinstance(source, Toolkit) else tuple(source)
    lines = [
        f"- **{s.name}**: {_one_line(s.description)}"
        for s in sorted(skills, key=lambda s: s.name)
        if s.description
    ]
    if not lines:
        return ""
    return _PROMPT_HEADER + "\n" + "\n".join(lines)
