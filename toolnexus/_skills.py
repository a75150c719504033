"""Agent skills on disk: find ``SKILL.md`` folders and read them into `Skill` values.

A skill is a folder holding a ``SKILL.md`` file: YAML frontmatter between ``---`` fences with
a ``name`` (required) and a ``description`` (optional), then Markdown instructions (the body).
Every other file in the folder (scripts, references, templates) comes with the skill.

Discovery rules, in short:

- Every ``SKILL.md`` below each skills directory is a skill, at any depth. Symlinked
  directories and files are followed; a directory reached twice (a symlink loop, two links to
  one folder) is walked once, and so is a ``SKILL.md`` reached twice. The walk is sorted by
  name, so results never depend on the file system's listing order, and keeps its own
  queue, so no depth of tree can exhaust the stack.
- Only regular files are read, at most 1 MB each: a ``SKILL.md`` that is a FIFO, a device
  or too big is skipped as ``unreadable`` without blocking or filling memory.
- Two skills with one name: the one closest to its skills directory keeps it, then the
  first in path order, then the first skills directory given.
- A ``name`` is one line: runs of whitespace (line breaks included) become one space.
- Frontmatter values stay the text the author wrote, trimmed: ``description: yes`` is
  ``"yes"``, ``name: 010`` is ``"010"``. ``null``, ``~`` or an empty value means "not set".
- A bad ``SKILL.md`` never stops discovery. It is reported in `SkillInventory.skipped` with a
  reason: ``missing-name``, ``malformed-frontmatter`` (bad YAML, no closing fence, a value
  that is a list or a map), ``duplicate-name`` (see above; a warning is issued) or
  ``unreadable`` (permissions, not UTF-8, not a regular file, too big). A skills
  directory that does not exist is reported as ``unreadable`` too.
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
import collections
import functools
import os
import re
import stat
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from toolnexus.errors import FrontmatterError

__all__ = [
    "Skill",
    "SkillInventory",
    "SkipReason",
    "SkippedSkill",
    "found_skills",
    "is_file",
    "list_skills",
    "skipped_summary",
    "walk_files",
]

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 1_000_000
"""Largest ``SKILL.md`` read (bytes); a bigger one is skipped as ``unreadable``."""

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


def _listing(
    path: str, visited: set[tuple[int, int]], errors: list[tuple[str, OSError]]
) -> list[os.DirEntry[str]] | None:
    """Return the entries of directory ``path`` by name; ``None`` if seen or unreadable.

    ``visited`` holds the (device, inode) of every directory already listed: a directory
    reached again through a symlink is skipped, which also ends symlink loops.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        errors.append((path, exc))
        return None
    key = (info.st_dev, info.st_ino)
    if key in visited:
        return None
    visited.add(key)
    try:
        with os.scandir(path) as listing:
            return sorted(listing, key=lambda entry: entry.name)
    except OSError as exc:
        errors.append((path, exc))
        return None


def walk_files(
    top: str,
    visited: set[tuple[int, int]],
    errors: list[tuple[str, OSError]],
) -> Iterator[os.DirEntry[str]]:
    """Yield every non-directory entry under ``top``, sorted by path, following symlinks.

    The walk keeps its own stack, so a tree of any depth is walked without recursion.
    """
    first = _listing(top, visited, errors)
    stack = [iter(first)] if first is not None else []
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
        elif _is_dir(entry):
            listing = _listing(entry.path, visited, errors)
            if listing is not None:
                stack.append(iter(listing))
        else:
            yield entry


def _skill_files(
    top: str, visited: set[tuple[int, int]], errors: list[tuple[str, OSError]]
) -> Iterator[os.DirEntry[str]]:
    """Yield the ``SKILL.md`` entries under ``top``, nearest to ``top`` first, then by path.

    Breadth first, so of two copies of a skill the one closest to the skills directory is
    met first (and a directory reached by two routes is walked by the shorter one).
    """
    queue = collections.deque([top])
    while queue:
        for entry in _listing(queue.popleft(), visited, errors) or ():
            if _is_dir(entry):
                queue.append(entry.path)
            elif entry.name == SKILL_FILE:
                yield entry


# --- frontmatter ---------------------------------------------------------------------------


_MalformedError = FrontmatterError


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
    if key == "name":  # one line, so the catalog and the model quote it as one
        return " ".join(value.split()) or None
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


def _read_capped(path: str) -> tuple[bytes, tuple[int, int]]:
    """Read the regular file ``path`` (at most `MAX_SKILL_BYTES`); return it and its identity.

    Raises `OSError` for anything else: a FIFO or device is refused without blocking on
    it, and a file over the cap is refused without reading it whole.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file")
        raw = file.read(MAX_SKILL_BYTES + 1)
    if len(raw) > MAX_SKILL_BYTES:
        raise OSError(0, f"larger than {MAX_SKILL_BYTES:,} bytes")
    return raw, (info.st_dev, info.st_ino)


def _load_skill(path: str) -> tuple[Skill | SkippedSkill, tuple[int, int] | None]:
    """Read one ``SKILL.md``; return the skill (or why not) and the file's identity."""
    try:
        raw, identity = _read_capped(path)
    except OSError as exc:
        return SkippedSkill(Path(path), "unreadable", exc.strerror or str(exc)), None
    bom = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        text = raw[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = bom + exc.start  # the offset in the file, as an editor shows it
        detail = f"not UTF-8 text (byte 0x{raw[at]:02x} at offset {at})"
        return SkippedSkill(Path(path), "unreadable", detail), identity
    try:
        name, description, body = _parse(text)
    except _BadNameError as exc:
        return SkippedSkill(Path(path), "missing-name", str(exc)), identity
    except _MalformedError as exc:
        return SkippedSkill(Path(path), "malformed-frontmatter", str(exc)), identity
    if name is None:
        return SkippedSkill(Path(path), "missing-name", "the frontmatter has no `name`"), identity
    directory = Path(os.path.dirname(path))
    return Skill(name, description, directory, Path(path), body), identity


# --- discovery -----------------------------------------------------------------------------


def _as_dirs(dirs: SkillDirs) -> list[str]:
    if isinstance(dirs, str | os.PathLike):
        return [os.fspath(dirs)]
    return [os.fspath(d) for d in dirs]


def _discover(dirs: SkillDirs) -> SkillInventory:
    """Return what is under ``dirs``: skills by directory order then path, and the skips."""
    skills: list[Skill] = []
    taken: dict[str, Path] = {}
    skipped: list[SkippedSkill] = []
    visited: set[tuple[int, int]] = set()
    files_seen: set[tuple[int, int]] = set()
    for given in _as_dirs(dirs):
        top = os.path.abspath(given)
        if not os.path.isdir(top):
            why = "does not exist" if not os.path.lexists(top) else "is not a directory"
            if os.path.islink(top) and not os.path.exists(top):
                why = "is a broken symlink or a symlink loop"
            skipped.append(SkippedSkill(Path(top), "unreadable", f"skills directory {why}"))
            continue
        errors: list[tuple[str, OSError]] = []
        found: list[Skill] = []
        for entry in _skill_files(top, visited, errors):
            loaded, identity = _load_skill(entry.path)
            if identity is not None:
                if identity in files_seen:
                    continue  # the same file again, through a symlink: not a duplicate
                files_seen.add(identity)
            if isinstance(loaded, SkippedSkill):
                skipped.append(loaded)
            elif loaded.name in taken:
                detail = f"the name {loaded.name!r} is already taken by {taken[loaded.name]}"
                skipped.append(SkippedSkill(loaded.path, "duplicate-name", detail))
            else:
                taken[loaded.name] = loaded.path
                found.append(loaded)
        skills += sorted(found, key=lambda skill: os.fspath(skill.path))
        skipped += (
            SkippedSkill(Path(path), "unreadable", exc.strerror or str(exc)) for path, exc in errors
        )
    return SkillInventory(tuple(skills), tuple(skipped))


_SHOWN_SKIPS = 3
"""How many skipped files a warning names (the rest are counted)."""


def skipped_summary(skipped: Sequence[SkippedSkill]) -> str:
    """Say in one paragraph how many ``SKILL.md`` were skipped, why, and the first few paths.

    Returns ``""`` when nothing was skipped.
    """
    if not skipped:
        return ""
    counts = collections.Counter(s.reason for s in skipped)
    by_reason = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
    shown = "; ".join(f"{s.path} ({s.reason}: {s.detail})" for s in skipped[:_SHOWN_SKIPS])
    more = len(skipped) - _SHOWN_SKIPS
    rest = f"; and {more} more" if more > 0 else ""
    return (
        f"skipped {len(skipped)} skill file(s) ({by_reason}): {shown}{rest} "
        "(toolnexus.list_skills lists them all with reasons)"
    )


def _warn(skipped: Sequence[SkippedSkill], stacklevel: int) -> None:
    summary = skipped_summary(skipped)
    if summary:
        warnings.warn(summary, stacklevel=stacklevel + 1)


def found_skills(dirs: SkillDirs) -> list[Skill]:
    """Return just the skills under ``dirs`` (what `build` needs).

    Everything skipped is summarised in one warning (counts, the first few paths).
    """
    inventory = _discover(dirs)
    _warn(inventory.skipped, stacklevel=3)
    return list(inventory.skills)


def list_skills(dirs: SkillDirs) -> SkillInventory:
    """Return the skills under ``dirs`` and the files skipped, each with a reason.

    Never raises for what is on disk: a malformed, nameless, duplicate or unreadable
    ``SKILL.md`` and a missing skills directory are listed in ``skipped`` with a reason.
    Duplicate names also issue one warning (the skill closest to its skills directory
    keeps the name, then the first in path order).

    Args:
        dirs: One skills directory or a list of them; every ``SKILL.md`` below each is
            read, at any depth, following symlinks.

    Returns:
        A `SkillInventory`: ``skills`` by skills directory, then sorted by path, and
        ``skipped``.

    Example::

        inventory = toolnexus.list_skills(["skills", Path.home() / ".agent" / "skills"])
        names = [skill.name for skill in inventory.skills]
        problems = [(s.path, s.reason, s.detail) for s in inventory.skipped]
    """
    inventory = _discover(dirs)
    _warn([s for s in inventory.skipped if s.reason == "duplicate-name"], stacklevel=2)
    return inventory


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Split a Markdown file with a ``---`` frontmatter into its YAML source and its body.

    Returns:
        ``(source, body)``; ``source`` is ``None`` when the text has no frontmatter.

    Raises:
        FrontmatterError: The frontmatter is opened but never closed.
    """
    return _split_frontmatter(text)


def parse_frontmatter(source: str) -> object:
    """Parse frontmatter YAML as skills are read (``safe_load``, scalars as written).

    Raises:
        FrontmatterError: The YAML is invalid (the message names the line).
    """
    return _yaml_frontmatter(source)


def read_small_file(path: str) -> bytes:
    """Read a regular file of at most 1 MB without blocking on a FIFO or a device.

    Raises:
        OSError: Not a regular file, too large, or unreadable.
    """
    return _read_capped(path)[0]
