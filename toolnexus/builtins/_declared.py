"""What a model sees of the ten built-in tools, without loading their implementations.

Each built-in is declared here by name, description and input schema (the shared
contract), with the ``module:factory`` that returns its handler. Importing this module
fills the `BUILTINS` registry: the `Tool` a factory builds carries the description,
schema and validator, and its handler imports the implementation module on the first
call. So building a toolkit never loads the file, shell, search and web code (nor httpx
and markdownify behind ``webfetch``); each loads when its built-in first runs.
"""

from __future__ import annotations

import copy
import importlib
from typing import Any

from toolnexus._registry import BuiltinFactory, BuiltinSettings, Limits, register
from toolnexus._schema import schema_validator
from toolnexus.builtins._workspace import os_error
from toolnexus.tool import DEFAULT_TOOL_TIMEOUT, Handler, Tool, ToolContext, ToolResult

__all__ = ["GENERATED_DIRS"]

_WEBFETCH_FORMATS = ("text", "markdown", "html")
"""The ``format`` values ``webfetch`` accepts (``markdown`` is the default)."""

GENERATED_DIRS = frozenset(
    {
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
    }
)
"""Dependency, cache and environment directories ``glob`` and ``grep`` skip by default.

They are entered only when the search ``path`` itself lies inside one of them.
"""

_READ = """\
Read a UTF-8 text file from the workspace, whole or a window of lines.

`path` is relative to the workspace root (or absolute inside it). `offset` is the 1-based \
line to start at (default 1); `limit` is how many lines to return (default {read_lines}).
Each line comes back as `NNNNN| text`: its line number, a bar and a space, then the text. \
The prefix is not part of the file: leave it out when you copy text into edit or \
apply_patch. A note at the end says which lines were shown and, when there is more, the \
`offset` to continue from. Lines longer than {max_line_length} characters are cut, and one \
call returns at most {max_lines} lines and {max_bytes} bytes.
Missing files, directories and binary files are errors. Use glob or grep to find files."""

_WRITE = """\
Create a file or replace its whole content with `content`, creating missing parent \
directories. `path` is relative to the workspace root.
Prefer edit or apply_patch to change part of an existing file; use write for new files or \
complete rewrites. An existing file keeps its line-ending style (a CRLF file stays CRLF) \
and its permissions. The result says how many bytes were written."""

_EDIT = """\
Replace exact text in a file: `oldString` becomes `newString`.

`oldString` must match the file exactly, whitespace and indentation included, and must \
occur exactly once, unless `replaceAll` is true (then every occurrence is replaced). \
Include enough surrounding lines to make it unique. Do not include the `NNNNN| ` line \
prefixes that read shows. `newString` must differ from `oldString`; an empty `newString` \
deletes the text. The file keeps its line endings (write `\\n`; a CRLF file stays CRLF). \
If the text is missing or ambiguous the call fails and the file is left unchanged. Read \
the file first."""

_APPLY_PATCH = """\
Change several files in one step with a patch; either every file changes or none does.

Format (the notes in parentheses explain a line and are not part of it; paths are \
relative to the workspace root):
*** Begin Patch
*** Add File: path/new.py
+each line of the new file, prefixed with +
*** Update File: path/existing.py
*** Move to: path/renamed.py      (optional: rename the file too)
@@ def some_function():           (optional anchor: a line above the change)
 an unchanged context line (prefix: one space)
-a line to remove
+a line to add
*** End of File                   (optional: the hunk is at the very end of the file)
*** Delete File: path/old.py
*** End Patch

Hunks match whole lines. Give about three context lines before and after each change, \
copied exactly; when the same lines occur more than once, add an `@@` line naming a \
unique line above the change (a function or class header). Several hunks of one file must \
be in file order. If any hunk does not match, nothing is written and the error shows the \
lines that were expected. The result lists each file: A added, M modified, D deleted, \
R renamed."""


def _flat_schema(properties: dict[str, str], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": required,
        "additionalProperties": False,
    }


_READ_SCHEMA = _flat_schema({"path": "string", "offset": "number", "limit": "number"}, ["path"])
_WRITE_SCHEMA = _flat_schema({"path": "string", "content": "string"}, ["path", "content"])
_EDIT_SCHEMA = _flat_schema(
    {"path": "string", "oldString": "string", "newString": "string", "replaceAll": "boolean"},
    ["path", "oldString", "newString"],
)
_APPLY_PATCH_SCHEMA = _flat_schema({"patchText": "string"}, ["patchText"])


_QUESTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "header": {"type": "string"},
                    "options": {"type": "array", "items": {"type": "string"}},
                    "multiple": {"type": "boolean"},
                },
                "required": ["question"],
            },
        }
    },
    "required": ["questions"],
    "additionalProperties": False,
}

_TODOWRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "text": {"type": "string"},
                    "completed": {"type": "boolean"},
                },
                "required": ["id", "text", "completed"],
            },
        }
    },
    "required": ["todos"],
    "additionalProperties": False,
}

_QUESTION = """\
Ask the human one or more questions and wait for the answers.

Use it when you need a decision or information only the human has. Each item of \
`questions` has `question` (the text), optional `header` (a short label), `options` \
(suggested answers) and `multiple` (true when several options may be chosen). The call \
pauses until the human answers; the result is the answers as JSON."""

_TODOWRITE = """\
Replace your task list and show it.

Pass the whole list every time as `todos`: items with `id`, `text` and `completed` \
(true when done). Use it to plan multi-step work and to track progress."""

_GREP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string"},
        "path": {"type": "string"},
        "include": {"type": "string"},
        "limit": {"type": "number"},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

_GLOB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string"},
        "path": {"type": "string"},
        "limit": {"type": "number"},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

_GREP = """\
Search file contents with a regular expression (Python `re` syntax).

Arguments: `pattern` (regex, required); `path` (file or directory to search, default the \
workspace root); `include` (glob filter on file names, e.g. "*.py", "*.{py,md}", \
"src/**/*.ts"); `limit` (maximum matching lines, default 100).
Output: one `file:line:text` line per match, paths relative to the workspace, sorted by \
path then line. Binary and non-UTF-8 files are skipped, and so are version-control \
directories and {generated} unless `path` points inside one."""

_GLOB = """\
Find files by name with a glob pattern.

Arguments: `pattern` (required; `*`, `?`, `**` for any depth, `[ab]`, `{py,md}`; a pattern \
without "/" matches file names at any depth, e.g. "*.py"); `path` (directory to search, \
default the workspace root); `limit` (maximum paths, default 100).
Output: matching file paths relative to the workspace, one per line, sorted. \
Version-control directories and {generated} are skipped unless `path` points inside one."""

_BASH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string"},
        "workdir": {"type": "string"},
        "timeout": {"type": "number"},
        "description": {"type": "string"},
    },
    "required": ["command"],
    "additionalProperties": False,
}

_BASH = """\
Run one shell command (bash) and return its combined stdout and stderr.

Arguments: `command` (required); `workdir` (directory to run in, default the workspace \
root); `timeout` (milliseconds, default 60000); `description` (a few words on what the \
command does, for the human). stdin is empty, so interactive commands fail. A non-zero \
exit status is reported as an error with the exit code; on timeout the command and every \
process in its process group are killed (processes that leave the group, e.g. with setsid, \
are not). Long output is cut: redirect it to a file and search it \
with grep or read it in parts."""

_WEBFETCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string"},
        "format": {"type": "string", "enum": list(_WEBFETCH_FORMATS)},
        "timeout": {"type": "number"},
    },
    "required": ["url"],
    "additionalProperties": False,
}

_WEBFETCH = """\
Fetch a web page or other text resource over HTTP(S) with a GET request.

Arguments: `url` (required, http:// or https://); `format` ("markdown" (default): HTML \
converted to Markdown; "text": HTML stripped to plain text; "html": the raw body); \
`timeout` (seconds, default 30). Non-text content (images, PDFs, archives) is refused. \
Long pages are cut with a note."""


def _generated_list() -> str:
    return ", ".join(sorted(GENERATED_DIRS, key=lambda name: (name.lstrip("._"), name)))


# name: (description, schema, "module:factory" of the implementation, handler is async)
_DECLARED: dict[str, tuple[str, dict[str, Any], str, bool]] = {
    "read": (_READ, _READ_SCHEMA, "_files:read_handler", False),
    "write": (_WRITE, _WRITE_SCHEMA, "_files:write_handler", False),
    "edit": (_EDIT, _EDIT_SCHEMA, "_files:edit_handler", False),
    "apply_patch": (_APPLY_PATCH, _APPLY_PATCH_SCHEMA, "_files:apply_patch_handler", False),
    "question": (_QUESTION, _QUESTION_SCHEMA, "_interact:question_handler", False),
    "todowrite": (_TODOWRITE, _TODOWRITE_SCHEMA, "_interact:todowrite_handler", False),
    "grep": (_GREP, _GREP_SCHEMA, "_search:grep_handler", False),
    "glob": (_GLOB, _GLOB_SCHEMA, "_search:glob_handler", False),
    "bash": (_BASH, _BASH_SCHEMA, "_shell:bash_handler", True),
    "webfetch": (_WEBFETCH, _WEBFETCH_SCHEMA, "_web:webfetch_handler", True),
}


def _description(name: str, limits: Limits) -> str:
    """Return the description of built-in ``name`` as built with ``limits``."""
    template = _DECLARED[name][0]
    if name == "read":
        return template.format(
            read_lines=limits.read_lines,
            max_line_length=limits.max_line_length,
            max_lines=limits.max_lines,
            max_bytes=limits.max_bytes,
        )
    if name in ("grep", "glob"):
        return template.replace("{generated}", _generated_list())
    return template


def _input_schema(name: str) -> dict[str, Any]:
    """Return a fresh copy of the input schema of built-in ``name``."""
    schema: dict[str, Any] = copy.deepcopy(_DECLARED[name][1])
    return schema


def _lazy_handler(name: str, settings: BuiltinSettings) -> Handler:
    """Return a handler that loads the implementation on its first call, then delegates."""
    target, is_async = _DECLARED[name][2:]
    module, _, factory = target.partition(":")
    real: list[Handler] = []

    def resolve() -> Handler:
        if not real:  # two racing first calls build two equal handlers; either is fine
            make = getattr(importlib.import_module(f".{module}", __package__), factory)
            real.append(make(settings))
        return real[0]

    # An OSError a built-in did not expect (a race, an odd path) reaches the model as a
    # plain "Cannot access <path>" message rather than as an exception report.
    if is_async:

        async def handler_async(args: dict[str, Any], ctx: ToolContext) -> str | ToolResult:
            try:
                result: str | ToolResult = await resolve()(args, ctx)  # type: ignore[misc]
            except OSError as exc:
                raise os_error(exc) from None
            return result

        return handler_async

    def handler(args: dict[str, Any], ctx: ToolContext) -> str | ToolResult:
        try:
            result: str | ToolResult = resolve()(args, ctx)  # type: ignore[assignment]
        except OSError as exc:
            raise os_error(exc) from None
        return result

    return handler


_OWN_DEADLINE = frozenset({"bash", "webfetch"})
"""Built-ins whose ``timeout`` argument bounds the call (up to a day for ``bash``), so the
default `Tool.timeout` must not cut them shorter."""


def _factory(name: str) -> BuiltinFactory:
    def build(settings: BuiltinSettings) -> Tool:
        schema = _input_schema(name)
        return Tool(
            name,
            _lazy_handler(name, settings),
            _description(name, settings.limits),
            schema,
            "builtin",
            schema_validator(schema),
            timeout=None if name in _OWN_DEADLINE else DEFAULT_TOOL_TIMEOUT,
        )

    build.__name__ = build.__qualname__ = f"{name}_tool"
    build.__doc__ = f"Build the ``{name}`` tool for ``settings``' workspace."
    return build


for _name in _DECLARED:
    register(_name)(_factory(_name))
