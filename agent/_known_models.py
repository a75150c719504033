"""Which model names Gemini serves: the priced models, a few more, minus the shut-down ones.

The list is data beside the price table (``agent/prices.json``, key ``known_models``), dated
with it. The fake Gemini answers any other name with the API's ``404 NOT_FOUND``, and
`warn_if_unknown` tells once per name when an agent is given one, since a misspelt or
retired name fails every request.
"""

from __future__ import annotations

import functools
import json
import threading
import warnings
from collections.abc import Mapping
from importlib import resources

from agent.errors import AgentError

__all__ = ["UnknownModelWarning", "known_model", "known_models", "retired", "warn_if_unknown"]


class UnknownModelWarning(AgentError, UserWarning):
    """An agent was given a model name the package does not know (misspelt, retired, new)."""


@functools.cache
def _data() -> tuple[frozenset[str], Mapping[str, str]]:
    data = json.loads(resources.files("agent").joinpath("prices.json").read_text("utf-8"))
    known = data.get("known_models") or {}
    gone: dict[str, str] = dict(known.get("retired") or {})
    names = (set(data["models"]) | set(known.get("also_served") or ())) - set(gone)
    return frozenset(names), gone


def known_models() -> frozenset[str]:
    """Return the model names Gemini serves for ``generateContent``, as far as known here."""
    return _data()[0]


def retired(model: str) -> str | None:
    """Return the successor of a shut-down model (``None`` when ``model`` was not retired)."""
    return _data()[1].get(model.removeprefix("models/"))


def known_model(model: str) -> bool:
    """Tell whether ``model`` (with or without ``models/``) is a name Gemini serves.

    Example::

        known_model("gemini-2.5-flash")   # True
        known_model("gemini-2.5-flsh")    # False: a typo
        known_model("gemini-3-pro-preview")   # False: shut down
    """
    return model.removeprefix("models/") in known_models()


_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_if_unknown(model: str, stacklevel: int = 2) -> None:
    """Warn (`UnknownModelWarning`, once per name and process) when ``model`` is unknown.

    Args:
        model: The model name an agent was given.
        stacklevel: Passed to `warnings.warn` (2: the caller's caller).
    """
    if known_model(model):
        return
    with _warned_lock:
        if model in _warned:
            return
        _warned.add(model)
    successor = retired(model)
    hint = (
        f"it was shut down; use {successor}"
        if successor is not None
        else "check the spelling (Gemini answers 404 NOT_FOUND for a model it does not serve)"
    )
    warnings.warn(
        f"unknown Gemini model {model!r}: {hint}; the known ones are "
        f"{', '.join(sorted(known_models()))}",
        UnknownModelWarning,
        stacklevel=stacklevel + 1,
    )
