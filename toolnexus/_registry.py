"""The registry the built-in tools fill, and the settings they are built with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass
from pathlib import Path
from typing import Any

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


class BuiltinSettings:
    """What every built-in tool is built with (immutable; compares and hashes by value).

    A plain class rather than a dataclass: it is built on every `toolnexus.build`, and
    creating a dataclass type costs ~1.5 ms at import, on the first build's path.

    Attributes:
        root: Workspace root (absolute, resolved). File tools stay inside it; ``bash``
            runs in it.
        read_only: Directories readable outside the root (the skill dirs); never writable.
        confine: False lifts workspace confinement (for trusted hosts only).
        limits: Output caps.
        hidden_env: Environment variables ``bash`` commands do not see (so
            ``echo $GEMINI_API_KEY`` cannot put the key into the transcript). Set it to
            ``frozenset()`` to pass everything.
    """

    __slots__ = ("confine", "hidden_env", "limits", "read_only", "root")

    root: Path
    read_only: tuple[Path, ...]
    confine: bool
    limits: Limits
    hidden_env: frozenset[str]

    def __init__(
        self,
        root: Path,
        read_only: tuple[Path, ...] = (),
        confine: bool = True,
        limits: Limits | None = None,
        hidden_env: frozenset[str] = DEFAULT_HIDDEN_ENV,
    ) -> None:
        for name, value in (
            ("root", root),
            ("read_only", read_only),
            ("confine", confine),
            ("limits", Limits() if limits is None else limits),
            ("hidden_env", hidden_env),
        ):
            object.__setattr__(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return (self.root, self.read_only, self.confine, self.limits, self.hidden_env)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _SETTINGS_FIELDS)
        return f"BuiltinSettings({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, BuiltinSettings)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


_SETTINGS_FIELDS = ("root", "read_only", "confine", "limits", "hidden_env")


BuiltinFactory = Callable[[BuiltinSettings], Tool]

BUILTINS: dict[str, BuiltinFactory] = {}
"""Built-in tool factories by name, filled when ``toolnexus.builtins`` is imported."""


def register(name: str) -> Callable[[BuiltinFactory], BuiltinFactory]:
    """Register ``factory`` as the built-in tool ``name``."""

    def decorate(factory: BuiltinFactory) -> BuiltinFactory:
        BUILTINS[name] = factory
        return factory

    return decorate
