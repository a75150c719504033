"""Checks of the mappings read from a user's file (an eval file, a batch's tasks file).

Each check names where the mapping was found and raises a `ConfigurationError`, or the
subclass a caller gives (the command line's ``CliError``), so one piece of code words the
problem the same way for every file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.errors import ConfigurationError

__all__ = ["check_fields", "mapping"]


def mapping(
    value: Any,
    where: str,
    *,
    problem: str = "must be a mapping",
    error: type[ConfigurationError] = ConfigurationError,
) -> Mapping[str, Any]:
    """Return ``value`` if it is a mapping.

    Raises:
        ConfigurationError: ``error`` with ``"{where} {problem}"``: it is not.
    """
    if not isinstance(value, Mapping):
        raise error(f"{where} {problem}")
    return value


def check_fields(
    item: Mapping[str, Any],
    allowed: frozenset[str],
    where: str,
    *,
    error: type[ConfigurationError] = ConfigurationError,
) -> None:
    """Refuse a mapping with fields outside ``allowed``, naming them and the allowed ones.

    Raises:
        ConfigurationError: ``error`` with ``"{where}: unknown field(s) ...; allowed: ..."``.
    """
    unknown = set(map(str, item)) - allowed
    if unknown:
        raise error(
            f"{where}: unknown field(s) {', '.join(sorted(unknown))}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )
