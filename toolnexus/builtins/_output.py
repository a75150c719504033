"""Output caps shared by the built-in tools: `cap` for a whole output, `clip` for a line."""

from __future__ import annotations

__all__ = ["cap", "clip"]


def cap(text: str, *, max_lines: int, max_bytes: int, hint: str) -> str:
    """Return ``text`` cut to ``max_lines`` lines and ``max_bytes`` UTF-8 bytes.

    When anything is cut, a note is appended that says how much was kept and ``hint``
    (how to get the rest, e.g. "use offset/limit").
    """
    lines = text.splitlines(keepends=True)
    cut = False
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        cut = True
    kept = "".join(lines)
    raw = kept.encode("utf-8")
    if len(raw) > max_bytes:
        kept = raw[:max_bytes].decode("utf-8", errors="ignore")
        cut = True
    if not cut:
        return text
    total_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    total_bytes = len(text.encode("utf-8"))
    shown_lines = kept.count("\n") + (0 if kept.endswith("\n") or not kept else 1)
    if not kept.endswith("\n"):
        kept += "\n"
    return (
        f"{kept}[output truncated: showed {shown_lines} of {total_lines} lines, "
        f"{len(kept.encode('utf-8'))} of {total_bytes} bytes. {hint}]"
    )


def clip(text: str, most: int, note: str = "... [line cut at {most} characters]") -> str:
    """Return ``text`` cut to ``most`` characters, with ``note`` (``{most}`` filled) appended."""
    if len(text) <= most:
        return text
    return text[:most] + note.format(most=most, length=len(text))
