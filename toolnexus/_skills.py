"""Agent skills: find ``SKILL.md`` folders and serve them to a model through the ``skill`` tool.

A skill is a folder holding a ``SKILL.md`` file: YAML frontmatter between ``---`` fences with
a ``name`` (required) and a ``description`` (optional), then Markdown instructions (the body).
Every other file in the folder (scripts, references, templates) comes with the skill.

Discovery rules, in short:

- Every ``SKILL.md`` below each skills directory is a skill, at any depth. Symlinked
  directories and files are followed; a directory reached twice (a symlink loop, two links to
  one folder) is walked once. The walk is sorted by name, so results never depend on the
  file system's listing order.
- Frontmatter values stay the text the author wrote, trimmed: ``description: yes`` is
  ``"yes"``, ``name: 010`` is ``"010"``. ``null``, ``~`` or an empty value means "not set".
- A bad ``SKILL.md`` never stops discovery. It is reported in `SkillInventory.skipped` with a
  reason: ``missing-name``, ``malformed-frontmatter`` (bad YAML, no closing fence, a value
  that is a list or a map), ``duplicate-name`` (the first skill in walk order keeps the name,
  and a warning is issued) or ``unreadable`` (permissions, not UTF-8). A skills directory
  that does not exist is reported as ``unreadable`` too.
- Paths are absolute, also for a relative skills directory, and keep the symlinks you see
  (they are not resolved), so the paths a model reads match the ones in your tree.

Example::

    from toolnexus import list_skills

    inventory = list_skills("examples/skills")
    for skill in inventory.skills:
        print(skill.name, skill.directory)
    for skipped in inventory.skipped:
        print("skipped", skipped.path, skipped.reason, skipped.detail)
"""

from __future__ import annotations

import copy
import functools
import os
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolnexus._schema import schema_validator
from toolnexus.errors import ConfigError
from toolnexus.tool import Tool, ToolContext, Toolkit, ToolResult

if TYPE_CHECKING:
    from toolnexus._skill_records import SkillInventory, SkippedSkill

__all__ = [
    "Skill",
    "SkillInventory",
    "SkipReason",
    "SkippedSkill",
    "discover_skills",
    "found_skills",
    "list_skills",
    "skill_tool",
    "skills_prompt",
]

SKILL_FILE = "SKILL.md"
_BOM = b"\xef\xbb\xbf"

SkipReason = Literal["missing-name", "malformed-frontmatter", "duplicate-name", "unreadable"]
"""Why a ``SKILL.md`` (or a skills directory) did not become a skill."""

SkillDirs = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill found on disk."""

    name: str
    """The frontmatter ``name``, trimmed; what the model passes to the ``skill`` tool."""
    description: str | None
    """The frontmatter ``description``, trimmed (line breaks kept); ``None`` when not set."""
    directory: Path
    """Absolute path of the folder holding ``SKILL.md`` (symlinks not resolved)."""
    path: Path
    """Absolute path of the ``SKILL.md`` file."""
    body: str
    """The Markdown after the frontmatter, without leading and trailing whitespace."""


def __getattr__(name: str) -> Any:
    """Load `SkillInventory` and `SkippedSkill` on first use (`build` needs neither)."""
    if name in ("SkillInventory", "SkippedSkill"):
        from toolnexus import _skill_records

        return getattr(_skill_records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_Skip = tuple[str, SkipReason, str]
"""A skipped file or directory before it becomes a `SkippedSkill`: (path, reason, detail)."""


# --- walking -------------------------------------------------------------------------------


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _walk_files(
    top: str,
    visited: set[tuple[int, int]],
    errors: list[tuple[str, OSError]],
) -> Iterator[os.DirEntry[str]]:
    """Yield every non-directory entry under ``top``, sorted by path, following symlinks.

    ``visited`` holds the (device, inode) of every directory already walked: a directory
    reached again through a symlink is skipped, which also ends symlink loops.
    """
    try:
        stat = os.stat(top)
    except OSError as exc:
        errors.append((top, exc))
        return
    key = (stat.st_dev, stat.st_ino)
    if key in visited:
        return
    visited.add(key)
    try:
        with os.scandir(top) as listing:
            entries = sorted(listing, key=_entry_name)
    except OSError as exc:
        errors.append((top, exc))
        return
    for entry in entries:
        if _is_dir(entry):
            yield from _walk_files(entry.path, visited, errors)
        else:
            yield entry


# --- frontmatter ---------------------------------------------------------------------------


class _MalformedError(Exception):
    """The frontmatter cannot be read; the message says why."""


class _BadNameError(_MalformedError):
    """The ``name`` value is not text (a list or a map)."""


_CLOSING_FENCE = re.compile(r"^---[ \t]*$", re.MULTILINE)
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
# One `key: value` line whose value YAML reads as plain text (or null): no quotes, block
# scalars, flow collections, anchors, tags, comments or nested `: `. Anything else goes to
# PyYAML. The value check mirrors the characters YAML accepts in a plain scalar.
_SIMPLE_LINE = re.compile(r"([A-Za-z][A-Za-z0-9_-]*):(?:[ \t]+(.*?))?[ \t]*")
# YAML's printable characters minus line breaks, written as the complement (the same set)
# because the negated class compiles ~20x faster than the list of ranges.
_PLAIN_CHAR = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]"
# Characters a plain scalar cannot start with (YAML indicators, and a space).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@` ")


@functools.cache
def _plain_value() -> re.Pattern[str]:
    """Return the full plain-scalar pattern, compiled on first use (for non-ASCII values)."""
    return re.compile(
        r"(?![-?:,\[\]{}#&*!|>'\"%@` ])" + _PLAIN_CHAR + r"(?:(?!: | #)" + _PLAIN_CHAR + ")*"
    )


def _is_plain(value: str) -> bool:
    """Tell whether YAML reads the non-empty ``value`` as plain text (as `_plain_value` does).

    For ASCII text the printable characters are exactly what ``isprintable`` accepts, so the
    check needs no regular expression (compiling the Unicode one costs about a millisecond).
    """
    if value.isascii():
        return (
            value.isprintable()
            and value[0] not in _INDICATORS
            and ": " not in value
            and " #" not in value
        )
    return _plain_value().fullmatch(value) is not None


def _simple_frontmatter(source: str) -> dict[str, str | None] | None:
    """Read frontmatter made only of ``key: plain text`` lines without PyYAML (fast path).

    Returns ``None`` when any line needs the full YAML parser. For the lines it accepts the
    result equals what `_yaml_frontmatter` returns; a test pins that.
    """
    values: dict[str, str | None] = {}
    for line in source.split("\n"):
        if not line or line.startswith("#"):
            continue
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None or match[1] in _NULLS:
            return None
        value = match[2] or ""
        if value in _NULLS:
            values[match[1]] = None
        elif _is_plain(value) and not value.endswith(":"):
            values[match[1]] = value
        else:
            return None
    return values


def _raw_scalar(loader: Any, node: Any) -> str:
    return str(node.value)


@functools.cache
def _yaml_loader() -> Any:
    """Return a safe YAML loader that keeps booleans, numbers and dates as the text written."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader: Any = type("_TextScalarLoader", (base,), {})
    for tag in ("bool", "int", "float", "timestamp"):
        loader.add_constructor(f"tag:yaml.org,2002:{tag}", _raw_scalar)
    return loader


def _yaml_frontmatter(source: str) -> object:
    import yaml

    try:
        return yaml.load(source, Loader=_yaml_loader())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # +2: marks count from 0 and the frontmatter starts on the line after the fence.
        where = f" (line {mark.line + 2} of the file)" if mark is not None else ""
        raise _MalformedError(f"invalid YAML: {exc.problem or exc.context}{where}") from None
    except yaml.YAMLError as exc:
        raise _MalformedError(f"invalid YAML: {exc}") from None


def _split_frontmatter(text: str) -> tuple[str | None, str]:
    """Return (frontmatter source or ``None`` when there is none, body)."""
    first_end = text.find("\n")
    first_line = text if first_end < 0 else text[:first_end]
    if first_line.rstrip() != "---":
        return None, text.strip()
    if first_end < 0:
        raise _MalformedError("no closing `---` line after the frontmatter")
    closing = _CLOSING_FENCE.search(text, first_end + 1)
    if closing is None:
        raise _MalformedError("no closing `---` line after the frontmatter")
    return text[first_end + 1 : closing.start()], text[closing.end() :].strip()


def _text_field(meta: dict[Any, Any], key: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        kind = (
            "a list"
            if isinstance(value, list)
            else "a map"
            if isinstance(value, dict)
            else type(value).__name__
        )
        error = _BadNameError if key == "name" else _MalformedError
        raise error(f"`{key}` must be text, not {kind}")
    return value.strip() or None


def _parse(text: str) -> tuple[str | None, str | None, str]:
    """Return (name, description, body) of a ``SKILL.md`` text; raise `_MalformedError`."""
    source, body = _split_frontmatter(text.replace("\r\n", "\n"))
    if source is None:
        return None, None, body
    meta = _simple_frontmatter(source)
    parsed = meta if meta is not None else _yaml_frontmatter(source)
    if parsed is None:
        return None, None, body
    if not isinstance(parsed, dict):
        raise _MalformedError("the frontmatter must be `key: value` lines (a YAML map)")
    return _text_field(parsed, "name"), _text_field(parsed, "description"), body


def _load_skill(path: str) -> Skill | _Skip:
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except OSError as exc:
        return path, "unreadable", exc.strerror or str(exc)
    bom = len(_BOM) if raw.startswith(_BOM) else 0
    try:  # not raw.decode("utf-8-sig"): its codec module costs ~2 ms to import
        text = raw[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = bom + exc.start
        detail = f"not UTF-8 text (byte 0x{raw[at]:02x} at offset {at})"
        return path, "unreadable", detail
    try:
        name, description, body = _parse(text)
    except _BadNameError as exc:
        return path, "missing-name", str(exc)
    except _MalformedError as exc:
        return path, "malformed-frontmatter", str(exc)
    if name is None:
        return path, "missing-name", "the frontmatter has no `name`"
    return Skill(name, description, Path(os.path.dirname(path)), Path(path), body)


# --- discovery -----------------------------------------------------------------------------


def _as_dirs(dirs: SkillDirs) -> list[str]:
    if isinstance(dirs, str | os.PathLike):
        return [os.fspath(dirs)]
    return [os.fspath(d) for d in dirs]


def _scan(dirs: SkillDirs) -> tuple[list[Skill], list[_Skip], list[str]]:
    """Return the skills under ``dirs``, what was skipped, and the duplicate-name notes."""
    skills: dict[str, Skill] = {}
    skipped: list[_Skip] = []
    duplicates: list[str] = []
    visited: set[tuple[int, int]] = set()
    for given in _as_dirs(dirs):
        top = os.path.abspath(given)
        if not os.path.isdir(top):
            why = "does not exist" if not os.path.exists(top) else "is not a directory"
            skipped.append((top, "unreadable", f"skills directory {why}"))
            continue
        errors: list[tuple[str, OSError]] = []
        for entry in _walk_files(top, visited, errors):
            if entry.name != SKILL_FILE:
                continue
            found = _load_skill(entry.path)
            if not isinstance(found, Skill):
                skipped.append(found)
            elif found.name in skills:
                first = skills[found.name].path
                skipped.append(
                    (os.fspath(found.path), "duplicate-name", f"name already used by {first}")
                )
                duplicates.append(f"{found.path} (first: {first})")
            else:
                skills[found.name] = found
        skipped.extend((path, "unreadable", exc.strerror or str(exc)) for path, exc in errors)
    return list(skills.values()), skipped, duplicates


def _discover(dirs: SkillDirs) -> tuple[SkillInventory, list[str]]:
    from toolnexus._skill_records import SkillInventory, SkippedSkill

    skills, skipped, duplicates = _scan(dirs)
    inventory = SkillInventory(
        tuple(skills),
        tuple(SkippedSkill(Path(path), reason, detail) for path, reason, detail in skipped),
    )
    return inventory, duplicates


def _warn_duplicates(duplicates: list[str], stacklevel: int) -> None:
    if duplicates:
        warnings.warn(
            "skipped skill(s) whose name is already taken, keeping the first: "
            + "; ".join(duplicates),
            stacklevel=stacklevel + 1,
        )


def discover_skills(dirs: SkillDirs) -> SkillInventory:
    """Find every skill under ``dirs``; see `list_skills`."""
    inventory, duplicates = _discover(dirs)
    _warn_duplicates(duplicates, stacklevel=3)
    return inventory


def found_skills(dirs: SkillDirs) -> list[Skill]:
    """Return just the skills under ``dirs`` (what `build` needs), warning on duplicates."""
    skills, _, duplicates = _scan(dirs)
    _warn_duplicates(duplicates, stacklevel=3)
    return skills


def list_skills(dirs: SkillDirs) -> SkillInventory:
    """Return the skills under ``dirs`` (one directory or a list) and the files skipped.

    Never raises for what is on disk: a malformed, nameless, duplicate or unreadable
    ``SKILL.md`` and a missing skills directory are listed in ``skipped`` with a reason.
    A duplicate name also issues a warning (the first skill in walk order keeps it).

    Example::

        inventory = toolnexus.list_skills(["skills", Path.home() / ".agent" / "skills"])
        names = [skill.name for skill in inventory.skills]
        problems = [(s.path, s.reason, s.detail) for s in inventory.skipped]
    """
    inventory, duplicates = _discover(dirs)
    _warn_duplicates(duplicates, stacklevel=2)
    return inventory


# --- the skill tool ------------------------------------------------------------------------

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
    for entry in _walk_files(os.fspath(skill.directory), set(), []):
        if entry.path != own and _is_file(entry):
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

    ``source`` is a `Toolkit` (its skills are used) or the skills themselves. Each skill
    with a description is one ``- **name**: description`` line (the description on one
    line), sorted by name; skills without a description are left out.

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
