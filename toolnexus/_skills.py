"""PLACEHOLDER — replaced by the skills implementation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolnexus.tool import Tool


@dataclass(frozen=True)
class Skill:
    name: str
    description: str | None
    directory: Path
    path: Path
    body: str


@dataclass(frozen=True)
class SkippedSkill:
    path: Path
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class SkillInventory:
    skills: list[Skill] = field(default_factory=list)
    skipped: list[SkippedSkill] = field(default_factory=list)


def discover_skills(dirs: Sequence[Path]) -> SkillInventory:
    raise NotImplementedError


def list_skills(dirs: Any) -> SkillInventory:
    raise NotImplementedError


def skill_tool(skills: Sequence[Skill], sample: int = 10) -> Tool:
    raise NotImplementedError


def skills_prompt(source: Any) -> str:
    raise NotImplementedError
