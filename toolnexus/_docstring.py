r"""Read a function's docstring: its first paragraph and the description of each parameter.

Understands Google style (an ``Args:`` section), reST fields (``:param name:``) and numpy
style (a ``Parameters`` heading over a ``----------`` rule). Continuation lines are joined
with single spaces.

Example::

    parse_docstring("Add numbers.\n\n:param a: The first.")
    # ('Add numbers.', {'a': 'The first.'})
"""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_GOOGLE_HEADER = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters)\s*:\s*$"
)
_ANY_GOOGLE_HEADER = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_FIELD = re.compile(
    r"^:(param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?(\w+)\s*:(.*)$"
)
_REST_ANY_FIELD = re.compile(r"^:\w+")
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")
_NUMPY_PARAM_HEADERS = {"Parameters", "Other Parameters", "Keyword Arguments"}
_NUMPY_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?::.*)?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_section_start(lines: list[str], index: int) -> bool:
    line = lines[index].strip()
    if _ANY_GOOGLE_HEADER.match(line) or _REST_ANY_FIELD.match(line):
        return True
    following = lines[index + 1].strip() if index + 1 < len(lines) else ""
    return bool(line) and bool(_NUMPY_RULE.match(following))


def _summary(lines: list[str]) -> str:
    words: list[str] = []
    for index, line in enumerate(lines):
        if not line.strip() or _is_section_start(lines, index):
            break
        words.append(line.strip())
    return " ".join(words)


def _google_params(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    index = 0
    while index < len(lines):
        if not _GOOGLE_HEADER.match(lines[index].strip()):
            index += 1
            continue
        header_indent = _indent(lines[index])
        index += 1
        entry_indent: int | None = None
        current: str | None = None
        while index < len(lines):
            line = lines[index]
            if line.strip() and _indent(line) <= header_indent:
                break
            if line.strip():
                if entry_indent is None:
                    entry_indent = _indent(line)
                match = _GOOGLE_ENTRY.match(line.strip())
                if _indent(line) == entry_indent and match:
                    current = match.group(1)
                    found[current] = match.group(2).strip()
                elif current is not None:
                    found[current] = f"{found[current]} {line.strip()}".strip()
            index += 1
    return found


def _rest_params(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        match = _REST_FIELD.match(stripped)
        if match:
            current = match.group(2)
            found[current] = match.group(3).strip()
        elif not stripped or _REST_ANY_FIELD.match(stripped):
            current = None
        elif current is not None and _indent(line) > 0:
            found[current] = f"{found[current]} {stripped}".strip()
    return found


def _numpy_params(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    index = 0
    while index + 1 < len(lines):
        header = lines[index].strip()
        if header not in _NUMPY_PARAM_HEADERS or not _NUMPY_RULE.match(lines[index + 1].strip()):
            index += 1
            continue
        base = _indent(lines[index])
        index += 2
        current: str | None = None
        while index < len(lines):
            line = lines[index]
            if index + 1 < len(lines) and _NUMPY_RULE.match(lines[index + 1].strip()):
                break
            match = _NUMPY_ENTRY.match(line.strip())
            if line.strip() and _indent(line) <= base and match:
                current = match.group(1)
                found[current] = ""
            elif line.strip() and current is not None:
                found[current] = f"{found[current]} {line.strip()}".strip()
            index += 1
    return found


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return the first paragraph of ``doc`` and the per-parameter descriptions in it.

    Understands Google style (``Args:``), reST (``:param name:``) and numpy style
    (``Parameters`` over a ``----------`` rule). Continuation lines are joined with spaces.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    params = _numpy_params(lines)
    params.update(_rest_params(lines))
    params.update(_google_params(lines))
    return _summary(lines), {name: text for name, text in params.items() if text}
