"""Parse and apply ``*** Begin Patch`` patches in memory, with no file access.

The grammar::

    *** Begin Patch
    *** Add File: path/new.txt
    +every line of the new file, each prefixed with '+'
    *** Update File: path/old.py
    *** Move to: path/renamed.py          (optional: rename while updating)
    @@ def anchor_line():                  (optional anchor: the hunk comes after this line)
     context line (prefix ' ')
    -removed line (prefix '-')
    +added line (prefix '+')
    *** End of File                        (optional: the hunk sits at the end of the file)
    *** Delete File: path/gone.txt
    *** End Patch

Hunks match **whole lines**: first exactly, then ignoring trailing whitespace (never
leading whitespace: indentation is meaningful). ``@@`` anchors match a whole line with
its indentation ignored. Within one ``Update File`` section hunks are found in file
order, each after the previous one (and after its anchors); a hunk that is not found
after the previous one is still accepted when it occurs exactly once in the whole file.
A hunk without anchors that matches more than once after the previous one is refused
(ambiguous); after an anchor the first match counts. Every hunk is located in the
original text through an index of its lines, then all are applied in one pass, so the
cost grows with the file's size, not with hunks times lines; overlapping hunks are refused.
Lines a hunk adds take the file's line ending (CRLF files stay CRLF), and a file keeps
or lacks its final newline as before.

`plan_patch` applies a whole patch to an in-memory view of the files and returns every
new file content, or raises `PatchError` before anything is written: a caller that
writes only after planning changes every file or none.

Example::

    ops = parse_patch(patch_text)
    plan = plan_patch(ops, read=lambda p: files.get(p))
    for path, content in plan.changes.items():
        ...  # content is None for a deleted file
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from toolnexus.builtins._output import clip
from toolnexus.builtins._workspace import MAX_PATH

__all__ = [
    "AddFile",
    "DeleteFile",
    "FileOp",
    "Hunk",
    "PatchError",
    "PatchPlan",
    "UpdateFile",
    "apply_hunks",
    "parse_patch",
    "plan_patch",
]

_BEGIN = "*** Begin Patch"
_END = "*** End Patch"
_ADD = "*** Add File:"
_UPDATE = "*** Update File:"
_DELETE = "*** Delete File:"
_MOVE = "*** Move to:"
_EOF = "*** End of File"
_UNIFIED_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
_HEREDOC = re.compile(r"""^(?:apply_patch\s*)?<<-?\s*['"]?(\w+)['"]?\s*$""")
_SHOWN_LINES = 30


class PatchError(ValueError):
    """The patch is malformed or does not fit the files; the message says where."""


@dataclass(frozen=True, slots=True)
class Hunk:
    """One change inside a file: its anchors and its lines, each ``(kind, text)``.

    ``kind`` is ``" "`` for context, ``"-"`` for a removed and ``"+"`` for an added line.
    """

    lines: tuple[tuple[str, str], ...]
    anchors: tuple[str, ...] = ()
    """Lines (``@@ text``) that must appear, in order, before the hunk."""
    end_of_file: bool = False
    """True when the hunk must match at the very end of the file."""

    @property
    def old(self) -> list[str]:
        """The lines the hunk expects in the file (context and removed)."""
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def new(self) -> list[str]:
        """The lines the hunk leaves in the file (context and added)."""
        return [text for kind, text in self.lines if kind != "-"]


@dataclass(frozen=True, slots=True)
class AddFile:
    """Create ``path`` with ``content`` (which ends with a newline unless empty)."""

    path: str
    content: str


@dataclass(frozen=True, slots=True)
class DeleteFile:
    """Delete the existing file ``path``."""

    path: str


@dataclass(frozen=True, slots=True)
class UpdateFile:
    """Apply ``hunks`` to the existing file ``path``, then rename it to ``move_to`` if set."""

    path: str
    hunks: tuple[Hunk, ...]
    move_to: str | None = None


FileOp = AddFile | DeleteFile | UpdateFile


def _unwrap(text: str) -> list[str]:
    """Split ``text`` into lines, dropping blank edges, a heredoc wrapper or code fence."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) >= 2:
        heredoc = _HEREDOC.match(lines[0].strip())
        fenced = lines[0].startswith("```") and lines[-1].strip() == "```"
        if fenced or (heredoc and lines[-1].strip() == heredoc.group(1)):
            return _unwrap("\n".join(lines[1:-1]))
    return lines


def _shown(text: str, *, quote: bool = True) -> str:
    """Show ``text`` in an error message: quoted, and cut when very long."""
    cut = clip(text, 200, "... ({length} characters)")
    return repr(cut) if quote else cut


def _file_header(line: str) -> str | None:
    """Return the file-header prefix ``line`` starts with, padding aside (as for Begin/End)."""
    stripped = line.lstrip()
    return next((p for p in (_ADD, _UPDATE, _DELETE) if stripped.startswith(p)), None)


def _is_header(line: str) -> bool:
    if _file_header(line) is not None:
        return True
    return line.startswith("*** ") and not line.startswith((_EOF, _MOVE))


def _header_path(line: str, prefix: str, number: int) -> str:
    path = line.strip()[len(prefix) :].strip()
    if not path:
        raise PatchError(f"patch line {number}: '{prefix}' needs a file path.")
    if path.endswith(("/", "\\")):
        raise PatchError(
            f"patch line {number}: {_shown(path)} ends with a path separator, so it names "
            "a directory; give the path of a file."
        )
    if len(path) > MAX_PATH:
        raise PatchError(f"patch line {number}: the path is too long ({len(path)} characters).")
    return path


class _Parser:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.pos = 1  # lines[0] is the Begin Patch marker

    def block(self) -> list[tuple[int, str]]:
        """Lines up to the next header, numbered, without trailing blank lines."""
        out: list[tuple[int, str]] = []
        while self.pos < len(self.lines) - 1 and not _is_header(self.lines[self.pos]):
            out.append((self.pos + 1, self.lines[self.pos]))
            self.pos += 1
        while out and not out[-1][1].strip():
            out.pop()
        return out

    def parse(self) -> list[FileOp]:
        ops: list[FileOp] = []
        while self.pos < len(self.lines) - 1:
            line, number = self.lines[self.pos], self.pos + 1
            self.pos += 1
            if not line.strip():
                continue
            header = _file_header(line)
            if header == _ADD:
                ops.append(self.add(_header_path(line, _ADD, number)))
            elif header == _DELETE:
                ops.append(self.delete(_header_path(line, _DELETE, number)))
            elif header == _UPDATE:
                ops.append(self.update(_header_path(line, _UPDATE, number)))
            else:
                raise PatchError(
                    f"patch line {number}: expected '*** Add File: ', '*** Update File: ', "
                    f"'*** Delete File: ' or '*** End Patch', got {_shown(line)}."
                )
        if not ops:
            raise PatchError("The patch changes no files.")
        return ops

    def add(self, path: str) -> AddFile:
        content: list[str] = []
        for number, line in self.block():
            if not line.startswith("+"):
                raise PatchError(
                    f"patch line {number}: every line of '*** Add File: {path}' must start "
                    f"with '+', got {_shown(line)}."
                )
            content.append(line[1:])
        return AddFile(path, "".join(f"{line}\n" for line in content))

    def delete(self, path: str) -> DeleteFile:
        for number, line in self.block():
            if line.strip():
                raise PatchError(
                    f"patch line {number}: '*** Delete File: {path}' takes no lines, "
                    f"got {_shown(line)}."
                )
        return DeleteFile(path)

    def update(self, path: str) -> UpdateFile:
        move_to = None
        if self.pos < len(self.lines) - 1 and self.lines[self.pos].lstrip().startswith(_MOVE):
            move_to = _header_path(self.lines[self.pos], _MOVE, self.pos + 1)
            self.pos += 1
        hunks = _parse_hunks(path, self.block())
        if not hunks and move_to is None:
            raise PatchError(f"'*** Update File: {path}' has no hunks.")
        return UpdateFile(path, tuple(hunks), move_to)


def _parse_hunks(path: str, block: list[tuple[int, str]]) -> list[Hunk]:
    hunks: list[Hunk] = []
    anchors: list[str] = []
    lines: list[tuple[str, str]] = []
    start = block[0][0] if block else 0

    def finish(end_of_file: bool = False) -> None:
        nonlocal anchors, lines
        if not lines:
            raise PatchError(f"patch line {start}: a hunk of '{path}' has no lines.")
        if all(kind == " " for kind, _ in lines):
            raise PatchError(
                f"patch line {start}: a hunk of '{path}' has no '+' or '-' lines; "
                "it would change nothing."
            )
        hunks.append(Hunk(tuple(lines), tuple(anchors), end_of_file))
        anchors, lines = [], []

    for number, line in block:
        if line.startswith("@@"):
            if lines:
                finish()
            if not anchors:
                start = number
            unified = _UNIFIED_HEADER.match(line)
            anchor = unified.group(1) if unified else line[2:]
            if anchor.strip():
                anchors.append(anchor.strip())
        elif line.strip() == _EOF:
            finish(end_of_file=True)
        elif line.startswith("\\"):
            continue  # "\ No newline at end of file", as unified diffs write it
        elif line == "" or line[0] in " -+":
            if not lines and not anchors:
                start = number
            lines.append((line[:1] or " ", line[1:]))
        else:
            raise PatchError(
                f"patch line {number}: a hunk line of '{path}' must start with ' ' (context), "
                f"'-' (remove) or '+' (add), got {_shown(line)}."
            )
    if lines or anchors:
        finish()
    return hunks


def parse_patch(text: str) -> list[FileOp]:
    """Parse ``text`` into file operations, or raise `PatchError` naming the bad line.

    Blank lines around the patch, a shell heredoc wrapper (``<<'EOF' ... EOF``) and a
    Markdown code fence are tolerated; everything else must follow the grammar.
    """
    lines = _unwrap(text)
    if not lines or lines[0].strip() != _BEGIN:
        raise PatchError("The patch must start with the line '*** Begin Patch'.")
    if len(lines) < 2 or lines[-1].strip() != _END:
        raise PatchError("The patch must end with the line '*** End Patch'.")
    return _Parser(lines).parse()


# -- applying -------------------------------------------------------------------------

_NORMALISERS: tuple[Callable[[str], str], ...] = (lambda s: s, str.rstrip)


def _split(text: str) -> tuple[list[str], list[str]]:
    """Lines of ``text`` without endings, and each line's ending (``""`` for none)."""
    if not text:
        return [], []
    parts = text.split("\n")
    last = parts.pop()
    bodies, endings = [], []
    for part in parts:
        if part.endswith("\r"):
            bodies.append(part[:-1])
            endings.append("\r\n")
        else:
            bodies.append(part)
            endings.append("\n")
    if last:
        bodies.append(last)
        endings.append("")
    return bodies, endings


def _matches(
    lines: Sequence[str], old: Sequence[str], pos: int, norm: Callable[[str], str]
) -> bool:
    return all(norm(lines[pos + j]) == norm(want) for j, want in enumerate(old))


class _Index:
    """Where each line of a file occurs, per normaliser, so a hunk is found without a scan.

    A hunk is looked for only where its rarest line occurs, so locating every hunk of a
    patch costs about the file's size once, not once per hunk.
    """

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self._tables: dict[int, dict[str, list[int]]] = {}

    def where(self, kind: int, line: str) -> list[int]:
        norm = _NORMALISERS[kind]
        table = self._tables.get(kind)
        if table is None:
            table = self._tables[kind] = {}
            for number, text in enumerate(self.lines):
                table.setdefault(norm(text), []).append(number)
        return table.get(norm(line), [])


def _positions(
    index: _Index, old: Sequence[str], start: int, end_of_file: bool, most: int = 2
) -> list[int]:
    """Up to ``most`` places at or after ``start`` where ``old`` matches, strictest first."""
    lines = index.lines
    last = len(lines) - len(old)
    for kind, norm in enumerate(_NORMALISERS):
        if end_of_file:
            found = [last] if last >= start and _matches(lines, old, last, norm) else []
        else:
            spots = [(index.where(kind, line), j) for j, line in enumerate(old)]
            where, j = min(spots, key=lambda spot: len(spot[0]))
            found = []
            for at in where[bisect.bisect_left(where, start + j) :]:
                if at - j > last:
                    break
                if _matches(lines, old, at - j, norm):
                    found.append(at - j)
                    if len(found) == most:
                        break
        if found:
            return found
    return []


def _find_anchor(lines: Sequence[str], anchor: str, start: int) -> int | None:
    """First line at or after ``start`` equal to ``anchor``, indentation aside."""
    want = anchor.strip()
    return next((i for i in range(start, len(lines)) if lines[i].strip() == want), None)


def _locate(index: _Index, hunk: Hunk, start: int, anchor: int | None) -> list[int]:
    """Where the hunk applies: one place, two when ambiguous, none when absent.

    After an ``@@`` anchor the first match counts (the anchor says which one is meant);
    without one, a hunk must match once after the previous hunk.
    """
    found = _positions(index, hunk.old, start, hunk.end_of_file)
    if found:
        return found[:1] if anchor is not None else found
    if anchor is not None:
        # Models often repeat the anchor line as the hunk's first context line.
        return _positions(index, hunk.old, anchor, hunk.end_of_file)[:1]
    if start > 0:
        everywhere = _positions(index, hunk.old, 0, hunk.end_of_file)
        if len(everywhere) == 1:
            return everywhere
    return []


def _ambiguous(path: str, number: int, found: list[int]) -> PatchError:
    return PatchError(
        f"{path}: hunk {number} matches more than once (at lines {found[0] + 1} and "
        f"{found[1] + 1}); nothing was applied. Add an '@@' line naming a line above the "
        "change (such as its function header), or more context lines, so that it matches "
        "exactly one place."
    )


def _mismatch(path: str, number: int, hunk: Hunk) -> PatchError:
    where = ""
    if hunk.anchors:
        where += " after " + " then ".join(repr(a) for a in hunk.anchors)
    if hunk.end_of_file:
        where += " at the end of the file"
    old = hunk.old
    shown = "\n".join(f"    {_shown(line, quote=False)}" for line in old[:_SHOWN_LINES])
    if len(old) > _SHOWN_LINES:
        shown += f"\n    ... ({len(old) - _SHOWN_LINES} more lines)"
    return PatchError(
        f"{path}: hunk {number} does not match the file. Expected these lines{where}:\n"
        f"{shown}\nRead the file again and copy the context and '-' lines exactly."
    )


def _trim_blank_tail(hunk: Hunk) -> Hunk | None:
    """Drop a trailing blank context line; None when the hunk ends otherwise."""
    if len(hunk.lines) > 1 and hunk.lines[-1] == (" ", ""):
        return Hunk(hunk.lines[:-1], hunk.anchors, hunk.end_of_file)
    return None


def _join(bodies: list[str], endings: list[str], eol: str, final_newline: bool) -> str:
    out = [body + (ending or eol) for body, ending in zip(bodies, endings, strict=True)]
    if out and not final_newline:
        out[-1] = bodies[-1]
    return "".join(out)


def _place(index: _Index, hunk: Hunk, number: int, start: int, path: str) -> tuple[int, Hunk]:
    """Find where ``hunk`` applies at or after ``start``: its position, and the hunk used."""
    bodies = index.lines
    anchor_at: int | None = None
    for anchor in hunk.anchors:
        at = _find_anchor(bodies, anchor, start)
        if at is None:
            raise PatchError(
                f"{path}: hunk {number}: the anchor line {_shown(anchor)} (from '@@') was not "
                "found" + (" after the previous hunk." if start else ".")
            )
        anchor_at, start = at, at + 1
    if not hunk.old:
        return (len(bodies) if hunk.end_of_file or not hunk.anchors else start), hunk
    chosen = hunk
    found = _locate(index, hunk, start, anchor_at)
    trimmed = _trim_blank_tail(hunk)
    if not found and trimmed is not None:
        found, chosen = _locate(index, trimmed, start, anchor_at), trimmed
    if not found:
        raise _mismatch(path, number, hunk)
    if len(found) > 1:
        raise _ambiguous(path, number, found)
    return found[0], chosen


def apply_hunks(text: str, hunks: Sequence[Hunk], path: str = "the file") -> str:
    """Return ``text`` with ``hunks`` applied in order, or raise `PatchError`.

    ``path`` only names the file in error messages. Context lines keep the file's own
    text and line ending; added lines take the file's line ending. Every hunk is located
    in the original text first, then all are applied in one pass.
    """
    bodies, endings = _split(text)
    eol = next((e for e in endings if e), "\n")
    final_newline = not text or text.endswith("\n")
    index = _Index(bodies)
    placed: list[tuple[int, int, Hunk]] = []
    cursor = 0
    for number, hunk in enumerate(hunks, 1):
        pos, chosen = _place(index, hunk, number, cursor, path)
        placed.append((pos, number, chosen))
        cursor = pos + len(chosen.old)
    new_bodies: list[str] = []
    new_endings: list[str] = []
    done, previous = 0, 0
    for pos, number, chosen in sorted(placed, key=lambda item: (item[0], item[1])):
        if pos < done:
            first, second = sorted((previous, number))
            raise PatchError(
                f"{path}: hunks {first} and {second} change overlapping lines; "
                "merge them into one hunk."
            )
        previous = number
        new_bodies += bodies[done:pos]
        new_endings += endings[done:pos]
        at = pos
        for kind, line in chosen.lines:
            if kind == " ":
                new_bodies.append(bodies[at])
                new_endings.append(endings[at])
            elif kind == "+":
                new_bodies.append(line)
                new_endings.append("")
            at += kind != "+"
        done = at
    new_bodies += bodies[done:]
    new_endings += endings[done:]
    return _join(new_bodies, new_endings, eol, final_newline)


@dataclass(frozen=True, slots=True)
class PatchPlan:
    """What a patch does: the new content of every changed file, and a summary."""

    changes: dict[str, str | None] = field(default_factory=dict)
    """New content by file key, in the order first touched; ``None`` deletes the file."""
    summary: tuple[str, ...] = ()
    """One line per file: ``A path``, ``M path``, ``D path`` or ``R old -> new``."""


def plan_patch(
    ops: Sequence[FileOp],
    read: Callable[[str], str | None],
    resolve: Callable[[str], str] = lambda path: path,
) -> PatchPlan:
    """Apply ``ops`` to an in-memory view of the files; raise `PatchError` if any fails.

    ``resolve`` turns a patch path into a file key (so ``a.txt`` and ``./a.txt`` are one
    file) and may raise to refuse a path; ``read`` returns a key's current text, or None
    when the file does not exist. Operations see the effect of earlier ones, so two
    ``Update File`` sections for one file both apply, in order.
    """
    originals: dict[str, str | None] = {}
    state: dict[str, str | None] = {}

    def current(key: str) -> str | None:
        if key not in originals:
            originals[key] = state[key] = read(key)
        return state[key]

    summary: list[str] = []
    for op in ops:
        key = resolve(op.path)
        existing = current(key)
        if isinstance(op, AddFile):
            if existing is not None:
                raise PatchError(
                    f"Add File {op.path}: the file already exists; use '*** Update File:' "
                    "to change it, or delete it first."
                )
            state[key] = op.content
            summary.append(f"A {op.path}")
            continue
        if existing is None:
            verb = "Delete" if isinstance(op, DeleteFile) else "Update"
            raise PatchError(f"{verb} File {op.path}: the file does not exist.")
        if isinstance(op, DeleteFile):
            state[key] = None
            summary.append(f"D {op.path}")
            continue
        text = apply_hunks(existing, op.hunks, op.path)
        target = resolve(op.move_to) if op.move_to is not None else key
        if target == key:
            state[key] = text
            summary.append(f"M {op.path}")
            continue
        if current(target) is not None:
            raise PatchError(f"Move to {op.move_to}: the file already exists.")
        state[key], state[target] = None, text
        summary.append(f"R {op.path} -> {op.move_to}")
    changes = {key: value for key, value in state.items() if value != originals[key]}
    return PatchPlan(changes, tuple(dict.fromkeys(summary)))
