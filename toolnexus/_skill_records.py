"""What `list_skills` reports: `SkillInventory` and `SkippedSkill`.

Kept apart from `toolnexus._skills` so that `toolnexus.build`, which needs neither,
does not pay for creating these dataclasses (~1.5 ms each) on its first call.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Imported at run time (not only for type checkers) so typing.get_type_hints() resolves
# the field types, as it did when these classes lived in toolnexus._skills.
from toolnexus._skills import Skill, SkipReason

__all__ = ["SkillInventory", "SkippedSkill"]


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
