"""The registry the built-in tools fill, and the settings they are built with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from toolnexus.tool import Tool

__all__ = ["BUILTINS", "DEFAULT_HIDDEN_ENV", "BuiltinSettings", "Limits", "register"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on what one built-in call returns, so a call cannot flood the model's context.

    Output past a cap is cut, and the result says so and how to get the rest.
    """

    max_bytes: int = 50_000
    """Bytes of output returned by ``bash``, ``read``, ``grep``, ``glob`` and ``webfetch``."""
    max_lines: int = 2000
    """Lines of output returned by ``bash``, ``read``, ``grep``, ``glob`` and ``webfetch``."""
    max_line_length: int = 2000
    """Characters kept of one line in ``read`` and ``grep`` output."""
    read_lines: int = 2000
    """Lines ``read`` returns when no ``limit`` is given."""
    max_read_bytes: int = 10_000_000
    """Largest file ``read``, ``edit`` and ``grep`` will load whole (bytes)."""


DEFAULT_HIDDEN_ENV = frozenset({"GEMINI_API_KEY", "GOOGLE_API_KEY"})
"""The API keys of the Gemini agent, kept out of ``bash`` commands by default."""


@dataclass(frozen=True, slots=True)
class BuiltinSettings:
    """What every built-in tool is built with."""

    root: Path
    """Workspace root (absolute, resolved). File tools stay inside it; ``bash`` runs in it."""
    read_only: tuple[Path, ...] = ()
    """Directories readable outside the root (the skill dirs), never writable there; a
    skill dir inside the root is part of the workspace and writable like the rest of it."""
    confine: bool = True
    """False lifts workspace confinement (for trusted hosts only)."""
    limits: Limits = field(default_factory=Limits)
    """Output caps."""
    hidden_env: frozenset[str] = DEFAULT_HIDDEN_ENV
    """Environment variables ``bash`` commands do not see (so ``echo $GEMINI_API_KEY``
    cannot put the key into the transcript); ``frozenset()`` passes everything."""
    isolate_shell: bool = True
    """Run each ``bash`` command in its own PID namespace (bubblewrap), so it cannot see
    the agent's process (its environment holds the API key); ``False`` runs commands
    plainly. Without a working ``bwrap`` commands run plainly, with a logged warning."""
    allow_private_network: bool = False
    """Let ``webfetch`` reach loopback, private, link-local and unspecified addresses
    (local development); by default only public addresses are fetched."""
    allow_hard_links: bool = False
    """Let the file tools read a file with more than one hard link. By default such a
    file is refused: another of its names may be outside the workspace, and nothing in
    the file says where. (Such a file is never written either way.)"""


BuiltinFactory = Callable[[BuiltinSettings], Tool]

BUILTINS: dict[str, BuiltinFactory] = {}
"""Built-in tool factories by name, filled when ``toolnexus.builtins`` is imported."""


def register(name: str) -> Callable[[BuiltinFactory], BuiltinFactory]:
    """Register ``factory`` as the built-in tool ``name``."""

    def decorate(factory: BuiltinFactory) -> BuiltinFactory:
        BUILTINS[name] = factory
        return factory

    return decorate
