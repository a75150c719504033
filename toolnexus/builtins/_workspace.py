"""Workspace confinement: every file path a built-in touches goes through `Workspace`."""

from __future__ import annotations

from pathlib import Path

from toolnexus._registry import BuiltinSettings
from toolnexus.tool import ToolError

__all__ = ["Workspace"]


def _within(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


class Workspace:
    """Resolves tool paths against the root and refuses those that escape it.

    Paths are resolved with symlinks followed, so a link inside the root that points
    outside is refused too. The configured read-only dirs (the skill dirs) may be read,
    never written. With ``confine=False`` every path is allowed.
    """

    __slots__ = ("confine", "read_only", "root")

    def __init__(self, settings: BuiltinSettings) -> None:
        self.root = settings.root
        self.read_only = settings.read_only
        self.confine = settings.confine

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """Return the absolute, symlink-free path for ``path``, or raise `ToolError`."""
        if not path or "\x00" in path:
            raise ToolError("The path is empty or contains a NUL character.")
        try:
            candidate = Path(path).expanduser()
            if not candidate.is_absolute():
                candidate = self.root / candidate
            real = candidate.resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            raise ToolError(f"Cannot use path {path[:200]!r}: {exc}") from None
        if not self.confine or _within(real, self.root):
            return real
        if any(_within(real, base) for base in self.read_only):
            if write:
                raise ToolError(
                    f"Path {path!r} is in a read-only skill directory; it can be read, not changed."
                )
            return real
        raise ToolError(
            f"Path {path[:200]!r} resolves to {str(real)[:300]}, outside the workspace "
            f"{self.root}. "
            "Use a path inside the workspace."
        )

    def display(self, path: Path) -> str:
        """``path`` relative to the root when inside it, else absolute."""
        try:
            return path.relative_to(self.root).as_posix() or "."
        except ValueError:
            return str(path)
