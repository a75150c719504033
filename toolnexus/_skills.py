"""Agent skills on disk: find ``SKILL.md`` folders and read them into `Skill` values.

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

import codecs
import functools
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "Skill",
    "SkillInventory",
    "SkipReason",
    "SkippedSkill",
    "found_skills",
    "is_file",
    "list_skills",
    "walk_files",
]

SKILL_FILE = "SKILL.md"

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


@dataclass(frozen=True, slots=True)
class SkippedSkill:
    """A ``SKILL.md`` (or a skills directory) that discovery passed over, and why."""

    path: Path
    """Absolute path of the file or directory concerned."""
    reason: SkipReason
    """One of ``missing-name``, ``malformed-frontmatter``, ``duplicate-name``, ``unreadable``."""
    detail: str = ""
    """A human-readable explanation (the YAML error and its line, the OS error...)."""


@dataclass(frozen=True, slots=True)
class SkillInventory:
    """What discovery found: the skills, in walk order, and the files it skipped."""

    skills: tuple[Skill, ...] = ()
    """The skills, in deterministic walk order (sorted by path)."""
    skipped: tuple[SkippedSkill, ...] = ()
    """Everything passed over, each with a reason."""


# --- walking -------------------------------------------------------------------------------


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def is_file(entry: os.DirEntry[str]) -> bool:
    """Tell whether ``entry`` is a file (following symlinks); ``False`` when it cannot be read."""
    try:
        return entry.is_file()
    except OSError:
        return False


def walk_files(
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
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as exc:
        errors.append((top, exc))
        return
    for entry in entries:
        if _is_dir(entry):
            yield from walk_files(entry.path, visited, errors)
        else:
            yield entry


# --- frontmatter ---------------------------------------------------------------------------


class _MalformedError(Exception):
    """The frontmatter cannot be read; the message says why."""


class _BadNameError(_MalformedError):
    """The ``name`` value is not text (a list or a map)."""


_CLOSING_FENCE = re.compile(r"^---[ \t]*$", re.MULTILINE)


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
    parsed = _yaml_frontmatter(source)
    if parsed is None:
        return None, None, body
    if not isinstance(parsed, dict):
        raise _MalformedError("the frontmatter must be `key: value` lines (a YAML map)")
    return _text_field(parsed, "name"), _text_field(parsed, "description"), body


def _load_skill(path: str) -> Skill | SkippedSkill:
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except OSError as exc:
        return SkippedSkill(Path(path), "unreadable", exc.strerror or str(exc))
    bom = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        text = raw[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = bom + exc.start  # the offset in the file, as an editor shows it
        detail = f"not UTF-8 text (byte 0x{raw[at]:02x} at offset {at})"
        return SkippedSkill(Path(path), "unreadable", detail)
    try:
        name, description, body = _parse(text)
    except _BadNameError as exc:
        return SkippedSkill(Path(path), "missing-name", str(exc))
    except _MalformedError as exc:
        return SkippedSkill(Path(path), "malformed-frontmatter", str(exc))
    if name is None:
        return SkippedSkill(Path(path), "missing-name", "the frontmatter has no `name`")
    return Skill(name, description, Path(os.path.dirname(path)), Path(path), body)


# --- discovery -----------------------------------------------------------------------------


def _as_dirs(dirs: SkillDirs) -> list[str]:
    if isinstance(dirs, str | os.PathLike):
        return [os.fspath(dirs)]
    return [os.fspath(d) for d in dirs]


def _discover(dirs: SkillDirs) -> tuple[SkillInventory, list[str]]:
    """Return what is under ``dirs`` and the duplicate-name notes to warn about."""
    skills: dict[str, Skill] = {}
    skipped: list[SkippedSkill] = []
    duplicates: list[str] = []
    visited: set[tuple[int, int]] = set()
    for given in _as_dirs(dirs):
        top = os.path.abspath(given)
        if not os.path.isdir(top):
            why = "does not exist" if not os.path.exists(top) else "is not a directory"
            skipped.append(SkippedSkill(Path(top), "unreadable", f"skills directory {why}"))
            continue
        errors: list[tuple[str, OSError]] = []
        for entry in walk_files(top, visited, errors):
            if entry.name != SKILL_FILE:
                continue
            found = _load_skill(entry.path)
            if isinstance(found, SkippedSkill):
                skipped.append(found)
            elif found.name in skills:
                first = skills[found.name].path
                detail = f"name already used by {first}"
                skipped.append(SkippedSkill(found.path, "duplicate-name", detail))
                duplicates.append(f"{found.path} (first: {first})")
            else:
                skills[found.name] = found
        skipped += (
            SkippedSkill(Path(path), "unreadable", exc.strerror or str(exc)) for path, exc in errors
        )
    return SkillInventory(tuple(skills.values()), tuple(skipped)), duplicates


def _warn_duplicates(duplicates: list[str], stacklevel: int) -> None:
    if duplicates:
        warnings.warn(
            "skipped skill(s) whose name is already taken, keeping the first: "
            + "; ".join(duplicates),
            stacklevel=stacklevel + 1,
        )


def found_skills(dirs: SkillDirs) -> list[Skill]:
    """Return just the skills under ``dirs`` (what `build` needs), warning on duplicates."""
    inventory, duplicates = _discover(dirs)
    _warn_duplicates(duplicates, stacklevel=3)
    return list(inventory.skills)


def list_skills(dirs: SkillDirs) -> SkillInventory:
    """Return the skills under ``dirs`` and the files skipped, each with a reason.

    Never raises for what is on disk: a malformed, nameless, duplicate or unreadable
    ``SKILL.md`` and a missing skills directory are listed in ``skipped`` with a reason.
    A duplicate name also issues a warning (the first skill in walk order keeps it).

    Args:
        dirs: One skills directory or a list of them; every ``SKILL.md`` below each is
            read, at any depth, following symlinks.

    Returns:
        A `SkillInventory`: ``skills`` in walk order (sorted by path) and ``skipped``.

    Example::

        inventory = toolnexus.list_skills(["skills", Path.home() / ".agent" / "skills"])
        names = [skill.name for skill in inventory.skills]
        problems = [(s.path, s.reason, s.detail) for s in inventory.skipped]
    """
    inventory, duplicates = _discover(dirs)
    _warn_duplicates(duplicates, stacklevel=2)
    return inventory
