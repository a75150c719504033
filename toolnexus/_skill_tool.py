"""The ``skill`` tool that serves skills to a model, and the `skills_prompt` catalog.

A model sees the skills once: as one line each in the system prompt (`skills_prompt`,
capped at `CATALOG_CHARS` characters by default). It calls the ``skill`` tool with a
skill's name to get the full instructions, the skill's base directory and a sample of its
files; a name the tool does not know gets the closest names back, which is how the model
finds a skill the capped catalog left out.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from toolnexus._schema import schema_validator
from toolnexus.errors import ConfigError
from toolnexus.tool import Tool, ToolContext, Toolkit, ToolResult

if TYPE_CHECKING:
    from toolnexus._skills import Skill

__all__ = ["CATALOG_CHARS", "SKILL_INPUT_SCHEMA", "skill_tool", "skills_prompt"]

CATALOG_CHARS = 20_000
"""Default size cap of the skills catalog (characters, about 5,000 tokens)."""

_NAMES_CHARS = 2_000
"""Longest full name list an unknown-name error gives; past it, the closest names only."""
_CLOSEST = 10

SKILL_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}

_TOOL_DESCRIPTION = (
    "Load a skill: specialized instructions and workflows for one kind of task, with the "
    "files that come with it (scripts, references). The skills are listed under "
    "'Available Skills' in your instructions. When a task matches a skill's description, "
    "call this tool with the skill's name before you start, then follow the instructions "
    "it returns. Relative paths in a skill are relative to its base directory. A name "
    "that is not a skill returns the closest skill names."
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _sibling_files(skill: Skill, limit: int) -> list[str]:
    """Up to ``limit`` files under the skill's folder, sorted by path, minus its SKILL.md."""
    from toolnexus._skills import is_file, walk_files  # the catalog alone needs neither

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


def _not_found(name: str, names: Sequence[str]) -> str:
    """Say a name is unknown: with every name when the list is short, else the closest."""
    everything = ", ".join(names) or "none"
    if len(everything) <= _NAMES_CHARS:
        return f'Skill "{name}" not found. Available skills: {everything}'
    import difflib

    wanted = name.casefold()
    containing = [n for n in names if wanted and wanted in n.casefold()]
    similar = difflib.get_close_matches(name, names, n=_CLOSEST, cutoff=0.5)
    closest = list(dict.fromkeys([*containing, *similar]))[:_CLOSEST]
    shown = ", ".join(closest) if closest else "none close to it"
    return (
        f'Skill "{name}" not found among {len(names)} skills. Closest names: {shown}. '
        "Call this tool again with one of them, or with a word from the skill's name."
    )


def skill_tool(skills: Sequence[Skill], sample: int = 10) -> Tool:
    """Return the ``skill`` tool (source ``"skill"``) that serves ``skills`` by name.

    The result is the skill's instructions in a ``<skill_content>`` block with its base
    directory as a ``file://`` URI and up to ``sample`` files of its folder (sorted by
    path, listed when the tool is called): ``0`` keeps an empty ``<skill_files>`` block,
    ``-1`` leaves the list and its note out. An unknown name is an error result that
    lists the available names (only the closest ones when the full list is long). When
    two skills share a name, the first is served. The tool's description does not list
    the skills: `skills_prompt` does, once, in the system prompt.

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
    names = sorted(by_name)

    def load(args: dict[str, Any], context: ToolContext) -> ToolResult:
        name = args["name"]
        skill = by_name.get(name)
        if skill is None:
            return ToolResult(_not_found(name, names), is_error=True)
        metadata = {"name": skill.name, "directory": os.fspath(skill.directory)}
        return ToolResult(_render(skill, sample), metadata=metadata)

    schema = copy.deepcopy(SKILL_INPUT_SCHEMA)
    return Tool(
        "skill",
        load,
        _TOOL_DESCRIPTION,
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


def skills_prompt(
    source: Toolkit | Iterable[Skill], *, max_chars: int | None = CATALOG_CHARS
) -> str:
    """Return the skills catalog for a system prompt, or ``""`` when no skill is described.

    Each skill with a description is one ``- **name**: description`` line (name and
    description on one line), sorted by name, under a short header; skills without a
    description are left out. The catalog stops before ``max_chars`` characters: the
    last line then says how many described skills are not listed and how the model
    finds one by name (the ``skill`` tool answers an unknown name with the closest ones).

    Args:
        source: A `Toolkit` (its skills are used) or the skills themselves.
        max_chars: Size cap of the catalog in characters; ``None`` for no cap.

    Returns:
        The catalog text, or ``""`` when no skill has a description.

    Raises:
        ConfigError: ``max_chars`` is smaller than 500 (too small for the header and a
            note).

    Example::

        tk = toolnexus.build(skills="examples/skills")
        system_prompt = "You are a helpful agent. " + toolnexus.skills_prompt(tk)
    """
    if max_chars is not None and max_chars < _MIN_CATALOG:
        raise ConfigError(f"max_chars must be at least {_MIN_CATALOG} (or None), not {max_chars}")
    skills = source.skills if isinstance(source, Toolkit) else tuple(source)
    lines = [
        f"- **{_one_line(s.name)}**: {_one_line(s.description)}"
        for s in sorted(skills, key=lambda s: s.name)
        if s.description
    ]
    if not lines:
        return ""
    text = _PROMPT_HEADER
    limit = None if max_chars is None else max_chars - _NOTE_ROOM
    for shown, line in enumerate(lines):
        if limit is not None and len(text) + 1 + len(line) > limit:
            return text + "\n\n" + _more_note(len(lines) - shown)
        text += "\n" + line
    return text


_MIN_CATALOG = 500
_NOTE_ROOM = 300  # kept free under the cap for the note on skills left out


def _more_note(left_out: int) -> str:
    return (
        f"{left_out} more skill(s) are not listed here, to keep this list short. To use "
        "one, call the skill tool with its name; a name that is not a skill returns the "
        "closest skill names, so a likely word from the name finds it."
    )
