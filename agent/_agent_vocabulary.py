"""What the agent files of gemini-cli and Claude Code say, in this package's terms.

The field names of both formats, which of them are applied, how their tool names map to
this toolkit's, which model names are Gemini's, and how a frontmatter that is not valid
YAML (as Claude Code accepts it) is read. Pure functions and tables, no disk.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from toolnexus import sanitize

if TYPE_CHECKING:
    from toolnexus import Toolkit

__all__ = [
    "APPLIED_FIELDS",
    "DISPLAY_FIELDS",
    "TOOL_NAMES",
    "UNAPPLIED_FIELDS",
    "is_gemini_model",
    "loose_frontmatter",
    "resolve_tool",
]

APPLIED_FIELDS = frozenset(
    {
        "name",
        "description",
        "kind",  # gemini-cli: local (the default); remote agents are refused
        "tools",
        "disallowedTools",  # Claude Code
        "model",
        "temperature",  # gemini-cli
        "max_turns",  # gemini-cli
        "maxTurns",  # Claude Code
        "timeout_mins",  # gemini-cli: a deadline for each run of the agent
    }
)
"""Fields that change what the agent does."""

DISPLAY_FIELDS = frozenset({"color", "display_name"})
"""Fields for the other tools' user interfaces: ignored without a note."""

UNAPPLIED_FIELDS = frozenset(
    {
        "mcpServers",
        "mcp_servers",
        "permissionMode",
        "skills",
        "hooks",
        "memory",
        "background",
        "isolation",
        "effort",
        "initialPrompt",
    }
)
"""Documented fields of gemini-cli or Claude Code that this package does not apply (noted)."""

_KNOWN = APPLIED_FIELDS | DISPLAY_FIELDS | UNAPPLIED_FIELDS

TOOL_NAMES: dict[str, str] = {
    # Claude Code
    "Read": "read",
    "Write": "write",
    "Edit": "edit",
    "MultiEdit": "edit",  # several replacements in one file: several `edit` calls here
    "Bash": "bash",
    "Grep": "grep",
    "Glob": "glob",
    "LS": "glob",  # listing a folder is a `glob` of `*` here
    "WebFetch": "webfetch",
    "TodoWrite": "todowrite",
    "AskUserQuestion": "question",
    "Skill": "skill",
    # gemini-cli
    "read_file": "read",
    "read_many_files": "read",
    "write_file": "write",
    "replace": "edit",
    "run_shell_command": "bash",
    "grep_search": "grep",
    "search_file_content": "grep",
    "list_directory": "glob",
    "web_fetch": "webfetch",
    "write_todos": "todowrite",
    "ask_user": "question",
    "activate_skill": "skill",
}
"""The tools of gemini-cli and Claude Code that this toolkit has, under its own names.

Names not here and not in the toolkit (``WebSearch``, ``NotebookEdit``,
``google_web_search``, a permission pattern such as ``Bash(git:*)``) are left out with a
note: an agent never gets more than its file grants.
"""


def resolve_tool(entry: str, toolkit: Toolkit) -> list[str]:
    """Return the names of ``toolkit``'s tools that the allow-list entry ``entry`` grants.

    ``entry`` is a tool name of this toolkit, gemini-cli or Claude Code, the wildcard
    ``*`` (every tool but sub-agents), an MCP wildcard (``mcp_*``, ``mcp_SERVER_*``) or an
    MCP tool in Claude Code's spelling (``mcp__SERVER__TOOL``, ``mcp__SERVER``).

    Returns:
        The names; empty when the toolkit has no such tool.
    """
    if entry in toolkit:
        return [entry]
    if entry == "*":
        return [tool.name for tool in toolkit if tool.source != "agent"]
    if entry.startswith("mcp__"):
        server, _, tool = entry[len("mcp__") :].partition("__")
        return _mcp(toolkit, sanitize(server) + "_", sanitize(tool) if tool else None)
    if entry.startswith("mcp_"):
        rest = entry[len("mcp_") :]
        if rest.endswith("*"):
            prefix = sanitize(rest[:-1])
            return _mcp(toolkit, prefix, None)
        return _mcp(toolkit, "", rest)
    ours = TOOL_NAMES.get(entry)
    return [ours] if ours is not None and ours in toolkit else []


def _mcp(toolkit: Toolkit, prefix: str, tool: str | None) -> list[str]:
    names = [t.name for t in toolkit if t.source == "mcp" and t.name.startswith(prefix)]
    if tool is None:
        return names
    return [name for name in names if name == prefix + tool]


_GEMINI_FAMILIES = ("gemini-", "gemma-", "learnlm-")


def is_gemini_model(name: str) -> bool:
    """Tell whether ``name`` names a model the Gemini API serves.

    ``gemini-2.5-pro``, ``models/gemini-2.5-pro``, a Vertex AI resource path
    (``projects/...``, ``publishers/google/models/gemini-...``) and a tuned model
    (``tunedModels/...``) do; ``sonnet``, ``opus``, ``claude-...`` or ``gpt-...`` do not.
    """
    text = name.strip().lower()
    if text.startswith(("tunedmodels/", "projects/")):
        return True
    return text.rsplit("/", 1)[-1].startswith(_GEMINI_FAMILIES)


_FIELD_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*))?$")
_TRAILING_COMMENT = re.compile(r"[ \t]+#.*$")


def loose_frontmatter(source: str) -> dict[str, Any] | None:
    """Read a frontmatter that is not valid YAML the way Claude Code does: line by line.

    A line that starts with a known field name and a colon starts that field. Every other
    line continues the description before it (so a description may hold ``Context: ...``
    or ``user: "..."`` lines); after another field, only list items (``- Read``) continue
    it, and a line of an unknown field is skipped, so no field but the description can
    swallow the lines after it. A value written as a YAML list (``["Read", "Grep"]``) or
    in quotes is read as YAML.

    Returns:
        The fields, or ``None`` when text comes before the first field.
    """
    fields: dict[str, list[str]] = {}
    current: str | None = None
    for line in source.split("\n"):
        match = _FIELD_LINE.match(line)
        if match is not None and match.group(1) in _KNOWN:
            current = match.group(1)
            fields[current] = [match.group(2) or ""]
        elif current is not None and _continues(current, line, match is not None):
            fields[current].append(line)
        elif current is not None:
            continue  # an unknown field after a one-line one: not part of it
        elif line.strip() and not line.lstrip().startswith("#"):
            return None
    return {key: _value(key, "\n".join(lines).strip()) for key, lines in fields.items()}


def _continues(field: str, line: str, looks_like_a_field: bool) -> bool:
    """Whether ``line`` continues ``field`` (the description takes every line)."""
    if field == "description":
        return True
    return not looks_like_a_field and (not line.strip() or line.lstrip().startswith("-"))


def _value(key: str, text: str) -> Any:
    if key != "description" and "\n" not in text:
        text = _TRAILING_COMMENT.sub("", text)
    if not text.startswith(("[", "{", '"', "'")):
        return text or None
    from toolnexus import FrontmatterError, parse_frontmatter

    try:
        return parse_frontmatter(text)
    except (FrontmatterError, RecursionError):
        return text
