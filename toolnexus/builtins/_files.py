"""The file tools ``read``, ``write``, ``edit`` and ``apply_patch``.

Every path goes through `Workspace`: relative paths are taken from the workspace root,
symlinks are followed, and anything that lands outside the root is refused (the skill
directories may be read, never changed). Files are UTF-8 text; binary files are refused.

Writes are atomic per file (a temporary file in the same directory replaces the target
in one step), keep a file's permission bits, its byte-order mark and its CRLF line
endings. ``apply_patch`` plans the whole patch in memory first, so either every file
changes or none does.

``read`` returns numbered lines, ``NNNNN| text`` (the number is 1-based and padded to
five digits), followed by a blank line and a note in parentheses that says which lines
were shown and how to get more. The prefix is not part of the file.
"""

from __future__ import annotations

import codecs
import contextlib
import difflib
import errno
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from toolnexus._registry import BuiltinSettings, Limits
from toolnexus.builtins._arguments import whole_number
from toolnexus.builtins._media import check_size, media_result, media_type_of
from toolnexus.builtins._patch import PatchError, UpdateFile, parse_patch, plan_patch
from toolnexus.builtins._text import (
    BOM,
    TextFile,
    atomic_write,
    decode,
    is_uniform_crlf,
    looks_binary,
    match_line_endings,
)
from toolnexus.builtins._workspace import MAX_PATH, Moved, Workspace, os_error, path_locks
from toolnexus.tool import Handler, ToolContext, ToolError, ToolResult

__all__ = ["apply_patch_handler", "edit_handler", "read_handler", "write_handler"]

_MOST_LINES = 1_000_000_000
"""Largest ``offset`` / ``limit`` accepted by ``read``."""
_LINE_PREFIX = re.compile(r"^\s*\d+\| ?", re.MULTILINE)


# -- shared helpers ---------------------------------------------------------------------


def _resolve(ws: Workspace, path: str, *, write: bool = False) -> Path:
    """Resolve a tool path, turning every failure into a `ToolError` a model can read."""
    if len(path) > MAX_PATH:
        raise ToolError(f"`path` is too long ({len(path)} characters; at most {MAX_PATH}).")
    try:
        return ws.resolve(path, write=write)
    except (OSError, RuntimeError, ValueError) as exc:
        raise ToolError(f"Cannot use path {path!r}: {exc}") from None


def _not_found(ws: Workspace, path: Path, shown: str) -> ToolError:
    hint = ""
    with contextlib.suppress(OSError, ToolError), ws.directory(path.parent) as parent:
        close = difflib.get_close_matches(path.name, os.listdir(parent), n=3)
        if close:
            hint = " Did you mean: " + ", ".join(close) + "?"
    return ToolError(f"File not found: {shown}.{hint}")


def _kind_error(info: os.stat_result, shown: str) -> ToolError | None:
    """Why the file with ``info`` cannot be used, or None for a regular file."""
    if stat.S_ISDIR(info.st_mode):
        return ToolError(f"{shown} is a directory, not a file. Use glob to list its files.")
    if not stat.S_ISREG(info.st_mode):
        return ToolError(f"{shown} is not a regular file (a device, socket, pipe or symlink).")
    return None


@contextlib.contextmanager
def _opened(ws: Workspace, path: Path, shown: str) -> Iterator[tuple[BinaryIO, int]]:
    """Open the regular file ``path`` for reading; yield it and its size.

    Refuses a missing path, a directory, a special file (a FIFO does not block: it is
    opened non-blocking and refused), a path that changed into a symlink and, unless the
    host allows them, a file with more than one hard link.
    """
    try:
        fd = ws.open_file(path)
    except FileNotFoundError:
        raise _not_found(ws, path, shown) from None
    except Moved as exc:
        raise os_error(exc) from None
    except OSError as exc:
        raise ToolError(f"Cannot open {shown}: {exc.strerror or exc}.") from None
    info = os.fstat(fd)
    problem = _kind_error(info, shown)
    if problem is None and ws.linked_elsewhere(info):
        problem = ToolError(
            f"{shown} has {info.st_nlink} hard links; it is not opened, because another of "
            "its names may be outside the workspace."
        )
    if problem is not None:
        os.close(fd)
        raise problem
    with os.fdopen(fd, "rb") as handle:
        yield handle, info.st_size


def _load(ws: Workspace, path: Path, shown: str, limits: Limits) -> tuple[TextFile, bytes]:
    """Read and decode the whole text file ``path``, at most ``limits.max_read_bytes``."""
    with _opened(ws, path, shown) as (handle, size):
        most = limits.max_read_bytes
        raw = b"" if size > most else handle.read(most + 1)
    if size > most or len(raw) > most:
        amount = str(size) if size > most else f"over {most}"
        raise ToolError(
            f"{shown} is {amount} bytes, more than the {most} bytes "
            "this tool loads whole. Use read with offset/limit to look at it."
        )
    return decode(raw, shown), raw


def _check_target(directory: int, name: str, shown: str) -> None:
    """Refuse to replace anything but a regular file with a single link."""
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise os_error(Moved(errno.ELOOP, "the file is now a symlink", shown))
    problem = _kind_error(info, shown)
    if problem is not None:
        raise problem
    if info.st_nlink > 1:
        raise ToolError(
            f"{shown} has {info.st_nlink} hard links; it is not changed, because the other "
            "links (possibly outside the workspace) name the same file."
        )


def _store(ws: Workspace, path: Path, data: bytes, shown: str) -> None:
    """Write ``data`` to ``path`` atomically; raises `ToolError` or ``OSError``."""
    with ws.directory(path.parent, create=True) as parent:
        _check_target(parent, path.name, shown)
        atomic_write(parent, path.name, data)


def _delete(ws: Workspace, path: Path) -> None:
    with ws.directory(path.parent) as parent:
        os.unlink(path.name, dir_fd=parent)


def _encode(file: TextFile, text: str, shown: str) -> bytes:
    try:
        return file.encode(text)
    except UnicodeEncodeError:
        raise ToolError(
            f"The new content of {shown} holds characters that cannot be written as UTF-8 "
            "(lone surrogates)."
        ) from None


def _write(ws: Workspace, path: Path, data: bytes, shown: str) -> None:
    try:
        _store(ws, path, data, shown)
    except Moved as exc:
        raise os_error(exc) from None
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}.") from None


# -- read -------------------------------------------------------------------------------


_CHUNK = 1 << 16


def _binary(shown: str) -> ToolError:
    return ToolError(f"{shown} is a binary file (it contains NUL bytes); only text is supported.")


def _decode_part(decoder: codecs.IncrementalDecoder, raw: bytes, number: int, shown: str) -> str:
    if b"\x00" in raw:
        raise _binary(shown)
    try:
        return str(decoder.decode(raw, final=not raw))
    except UnicodeDecodeError:
        raise ToolError(
            f"{shown} is not UTF-8 text (invalid bytes on line {number}); "
            "only UTF-8 text files are supported."
        ) from None


def _next_line(handle: BinaryIO, most: int) -> tuple[bytes, bool]:
    """Read the next line, keeping at most ``most`` bytes of it; say if it was longer.

    A longer line is read on by chunks and dropped, so memory stays bounded by ``most``
    however long the line is.
    """
    head = handle.readline(most)
    longer = len(head) == most and not head.endswith(b"\n")
    return head, longer


def _line_text(
    handle: BinaryIO, head: bytes, longer: bool, number: int, shown: str
) -> tuple[str, int]:
    """Decode a line read by `_next_line`: its kept text and its length in characters.

    When the line was longer, the rest is read by chunks (checked and counted, not kept).
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    text = _decode_part(decoder, head, number, shown)
    length, ending = len(text), head[-2:]
    while longer and (chunk := handle.readline(_CHUNK)):
        length += len(_decode_part(decoder, chunk, number, shown))
        ending = chunk[-2:]
        longer = not chunk.endswith(b"\n")
    _decode_part(decoder, b"", number, shown)
    length -= 2 if ending == b"\r\n" else ending.endswith(b"\n")
    text = text.removesuffix("\n").removesuffix("\r")
    return text, length


def _skip_rest(handle: BinaryIO) -> None:
    """Read on, by chunks, to the end of the current line."""
    while (chunk := handle.readline(_CHUNK)) and not chunk.endswith(b"\n"):
        pass


def _render_line(text: str, length: int, number: int, max_chars: int) -> str:
    if length > max_chars:
        text = f"{text[:max_chars]}... [line truncated: {length} characters]"
    return f"{number:05d}| {text}"


def _count_rest(handle: BinaryIO) -> int:
    """Lines left in ``handle`` from its position (a last line without newline counts)."""
    lines, last = 0, b"\n"
    while chunk := handle.read(1 << 20):
        lines += chunk.count(b"\n")
        last = chunk[-1:]
    return lines + (last != b"\n")


def read_window(handle: BinaryIO, shown: str, offset: int, limit: int, limits: Limits) -> str:
    """Numbered lines ``offset .. offset+limit-1`` of the open file, capped, with a note.

    Streams the file by bounded reads, so a file of any size (and a line of any length)
    can be read a window at a time in memory bounded by the output caps.
    """
    if looks_binary(handle.read(8192)):
        raise _binary(shown)
    handle.seek(0)
    most = 4 * limits.max_line_length + 8  # bytes enough for max_line_length characters
    shown_lines: list[str] = []
    used, number, stopped = 0, 0, ""
    while True:
        head, longer = _next_line(handle, most)
        if not head:
            break
        number += 1
        if number < offset:
            if longer:
                _skip_rest(handle)
            continue
        if len(shown_lines) >= limit or len(shown_lines) >= limits.max_lines:
            stopped = "lines"
            if longer:
                _skip_rest(handle)
            break
        text, length = _line_text(handle, head, longer, number, shown)
        if number == 1 and text.startswith(BOM):
            text, length = text[1:], length - 1
        line = _render_line(text, length, number, limits.max_line_length)
        size = len(line.encode("utf-8")) + 1
        if used + size > limits.max_bytes and shown_lines:
            stopped = "bytes"
            break
        shown_lines.append(line)
        used += size
    total = number + _count_rest(handle) if stopped else number
    if offset > max(total, 1):
        raise ToolError(
            f"`offset` {offset} is past the end of {shown}: the file has {total} "
            f"line{'' if total == 1 else 's'}."
        )
    if not shown_lines:
        return "(The file is empty.)"
    first, last = offset, offset + len(shown_lines) - 1
    body = "\n".join(shown_lines) + "\n\n"
    if not stopped:
        return body + f"(End of file: showed lines {first}-{last} of {total}.)"
    why = f"Output capped at {limits.max_bytes} bytes. " if stopped == "bytes" else ""
    return body + (
        f"({why}Showed lines {first}-{last} of {total}. "
        f"Use offset={last + 1} (with limit=N lines) to read more.)"
    )


def read_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of the ``read`` tool for ``settings``' workspace."""
    ws, limits = Workspace(settings), settings.limits

    def handler(args: dict[str, Any], ctx: ToolContext) -> str | ToolResult:
        offset = whole_number(args, "offset", 1, _MOST_LINES)
        limit = whole_number(args, "limit", limits.read_lines, _MOST_LINES)
        path = _resolve(ws, args["path"])
        shown = ws.display(path)
        try:
            with _opened(ws, path, shown) as (handle, _):
                media = media_type_of(path.name)
                if media is not None:  # an image or PDF: the model gets the file itself
                    check_size(os.fstat(handle.fileno()).st_size, shown)
                    return media_result(handle.read(), media, shown)
                return read_window(handle, shown, offset, limit, limits)
        except OSError as exc:
            raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}.") from None

    return handler


# -- write ------------------------------------------------------------------------------


def _style_of(ws: Workspace, path: Path, shown: str) -> tuple[int | None, TextFile]:
    """Size of an existing file (None when missing), and a sample of its style.

    The sample tells the file's BOM and line endings. A directory or special file is
    refused here (a FIFO would otherwise block the write).
    """
    try:
        with _opened(ws, path, shown) as (handle, size):
            head = handle.read(1 << 20)
    except ToolError:
        if not os.path.lexists(path):
            return None, TextFile("")
        raise
    if looks_binary(head):
        return size, TextFile("")
    text = head.decode("utf-8", errors="ignore")
    return size, TextFile(text.removeprefix(BOM), bom=text.startswith(BOM))


def write_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of the ``write`` tool for ``settings``' workspace."""
    ws = Workspace(settings)

    def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        path = _resolve(ws, args["path"], write=True)
        shown = ws.display(path)
        content: str = args["content"]
        with path_locks([path]):
            old_size, existing = _style_of(ws, path, shown)
            if old_size is not None:
                if existing.bom:
                    content = content.removeprefix(BOM)
                content = match_line_endings(content, existing.text)
            data = _encode(existing, content, shown)
            _write(ws, path, data, shown)
        if old_size is None:
            return f"Wrote {len(data)} bytes to {shown} (new file)."
        kept = "; kept its CRLF line endings" if is_uniform_crlf(existing.text) else ""
        return f"Wrote {len(data)} bytes to {shown} (replaced {old_size} bytes{kept})."

    return handler


# -- edit -------------------------------------------------------------------------------


def _line_numbers(text: str, needle: str, most: int = 5) -> tuple[list[int], bool]:
    """Return the distinct lines (at most ``most``) where ``needle`` starts, and if more."""
    numbers: list[int] = []
    start = 0
    while (at := text.find(needle, start)) >= 0:
        number = text.count("\n", 0, at) + 1
        if not numbers or numbers[-1] != number:
            if len(numbers) == most:
                return numbers, True
            numbers.append(number)
        start = at + max(len(needle), 1)
    return numbers, False


def _absent(text: str, old: str, shown: str) -> ToolError:
    hint = "Read the file again and copy the text exactly, whitespace included."
    unprefixed = _LINE_PREFIX.sub("", old)
    if unprefixed != old and unprefixed in text:
        hint = "`oldString` includes the `NNNNN| ` line prefixes from read; leave them out."
    elif old.strip() and old.strip() in text:
        hint = "It matches only without its leading/trailing whitespace; copy it exactly."
    return ToolError(f"`oldString` was not found in {shown}; the file is unchanged. {hint}")


def _replace(text: str, old: str, new: str, replace_all: bool, shown: str) -> tuple[str, str]:
    """Apply the edit to ``text``; return the new text and a summary of where."""
    crlf = is_uniform_crlf(text)
    if crlf:
        text, old, new = (s.replace("\r\n", "\n") for s in (text, old, new))
    count = text.count(old)
    if count == 0:
        raise _absent(text, old, shown)
    lines, more = _line_numbers(text, old)
    where = ", ".join(str(n) for n in lines) + (", ..." if more else "")
    if count > 1 and not replace_all:
        raise ToolError(
            f"`oldString` occurs {count} times in {shown} "
            f"(line{'s' if len(lines) > 1 else ''} {where}); the file is "
            "unchanged. Include more surrounding lines to make it unique, or set "
            "`replaceAll` to true to replace every occurrence."
        )
    result = text.replace(old, new)
    if result == text:
        raise ToolError("`oldString` and `newString` are the same; nothing would change.")
    if crlf:
        result = result.replace("\n", "\r\n")
    noun = "occurrence" if count == 1 else "occurrences"
    return result, f"replaced {count} {noun} (line{'s' if len(lines) > 1 else ''} {where})"


def edit_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of the ``edit`` tool for ``settings``' workspace."""
    ws = Workspace(settings)

    def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        old: str = args["oldString"]
        new: str = args["newString"]
        if not old:
            raise ToolError(
                "`oldString` is empty. Give the exact text to replace; to create a file use write."
            )
        if old == new:
            raise ToolError("`oldString` and `newString` are the same; nothing would change.")
        path = _resolve(ws, args["path"], write=True)
        shown = ws.display(path)
        with path_locks([path]):
            file, _ = _load(ws, path, shown, settings.limits)
            text, summary = _replace(file.text, old, new, bool(args.get("replaceAll")), shown)
            _write(ws, path, _encode(file, text, shown), shown)
        return f"Edited {shown}: {summary}."

    return handler


# -- apply_patch ------------------------------------------------------------------------


class _PatchFiles:
    """The files a patch touches: reads them once and writes the plan back."""

    def __init__(self, ws: Workspace, limits: Limits) -> None:
        self.ws, self.limits = ws, limits
        self.originals: dict[str, tuple[TextFile, bytes] | None] = {}

    def resolve(self, path: str) -> str:
        return str(_resolve(self.ws, path, write=True))

    def read(self, key: str) -> str | None:
        path = Path(key)
        if not os.path.lexists(path):
            self.originals[key] = None
            return None
        loaded = _load(self.ws, path, self.ws.display(path), self.limits)
        self.originals[key] = loaded
        return loaded[0].text

    def payloads(self, changes: dict[str, str | None]) -> list[tuple[Path, bytes | None]]:
        """Encode each change (None: delete), writes ordered before deletions."""
        out: list[tuple[Path, bytes | None]] = []
        for key, text in changes.items():
            path = Path(key)
            if text is None:
                out.append((path, None))
                continue
            before = self.originals.get(key)
            file = before[0] if before else TextFile("")
            out.append((path, _encode(file, text, self.ws.display(path))))
        return sorted(out, key=lambda item: item[1] is None)

    def commit(self, payloads: list[tuple[Path, bytes | None]]) -> None:
        done: list[Path] = []
        for path, data in payloads:
            try:
                if data is None:
                    _delete(self.ws, path)
                else:
                    _store(self.ws, path, data, self.ws.display(path))
            except (OSError, ToolError) as exc:
                reason = os_error(exc) if isinstance(exc, OSError) else exc
                failed = self.rollback(done)
                note = (
                    "every file already written was restored"
                    if not failed
                    else "could not restore " + ", ".join(failed)
                )
                raise ToolError(
                    f"apply_patch failed while writing {self.ws.display(path)}: {reason}; {note}."
                ) from None
            done.append(path)

    def rollback(self, done: list[Path]) -> list[str]:
        failed = []
        for path in reversed(done):
            before = self.originals.get(str(path))
            try:
                if before is None:
                    with contextlib.suppress(FileNotFoundError):
                        _delete(self.ws, path)
                else:
                    _store(self.ws, path, before[1], self.ws.display(path))
            except (OSError, ToolError):
                failed.append(self.ws.display(path))
        return failed


def apply_patch_handler(settings: BuiltinSettings) -> Handler:
    """Return the handler of the ``apply_patch`` tool for ``settings``' workspace."""
    ws = Workspace(settings)

    def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        files = _PatchFiles(ws, settings.limits)
        with contextlib.ExitStack() as held:
            try:
                ops = parse_patch(args["patchText"])
                touched = [Path(files.resolve(op.path)) for op in ops]
                touched += [
                    Path(files.resolve(op.move_to))
                    for op in ops
                    if isinstance(op, UpdateFile) and op.move_to is not None
                ]
                held.enter_context(path_locks(touched))
                plan = plan_patch(ops, files.read, files.resolve)
                payloads = files.payloads(plan.changes)
            except (PatchError, ToolError) as exc:
                raise ToolError(f"Patch not applied; no file was changed. {exc}") from None
            except OSError as exc:
                raise ToolError(
                    f"Patch not applied; no file was changed. {os_error(exc)}"
                ) from None
            files.commit(payloads)
        return "Patch applied:\n" + "\n".join(plan.summary)

    return handler
