"""Everything toolnexus raises, under one root: catch `ToolnexusError` to catch it all.

The tree::

    ToolnexusError                 root of everything toolnexus raises
    ├── ConfigError                a bad build() / source configuration (also a ValueError)
    │   ├── McpConfigError         an MCP configuration that cannot be read
    │   └── FrontmatterError       a ``---`` frontmatter block that cannot be read
    ├── ToolError                  raise inside a tool to fail the call with this message
    │   └── ArgumentError          the arguments did not fit the tool's input schema
    └── GeminiSchemaWarning        (a warning) to_gemini dropped what `parameters` cannot say

The two branches are told apart by who has to act. A `ConfigError` is raised to *you*, the
program assembling a toolkit (`toolnexus.build`, `toolnexus.define_tool`,
`toolnexus.http_tool`, an ``mcp.json``), when you asked for something that cannot work.
A `ToolError` never reaches you: `toolnexus.execute` turns it into an error `ToolResult`
for the *model*, with exactly its message.

Example::

    import toolnexus as tn

    try:
        tk = tn.build(builtins={"tools": {"bsh": False}})
    except tn.ConfigError as exc:
        print(exc)   # unknown built-in tool(s) bsh; built-ins are apply_patch, bash, ...
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "ConfigError",
    "FrontmatterError",
    "GeminiSchemaWarning",
    "McpConfigError",
    "ToolError",
    "ToolnexusError",
]


class ToolnexusError(Exception):
    """The root of every exception toolnexus raises."""


class ConfigError(ToolnexusError, ValueError):
    """A toolkit or one of its sources is configured in a way that cannot work.

    Raised by `toolnexus.build` (a bad ``builtins=`` value, a ``root`` that is not a
    directory), `toolnexus.define_tool` (a signature that cannot become a schema),
    `toolnexus.http_tool` (an unknown method) and `toolnexus.Toolkit` (two tools with one
    name). The message names the option and what was wrong with it. It is also a
    ``ValueError``, so code that caught that before keeps working.
    """


class McpConfigError(ConfigError):
    """The MCP configuration cannot be read or has no servers object; says where and why.

    A single server that is misconfigured does not raise: it is reported by
    `toolnexus.mcp_status` and the other servers still start.
    """


class ToolError(ToolnexusError):
    """Raise inside a tool to fail the call with exactly this message (no traceback text).

    Example::

        @toolnexus.define_tool
        def stock(sku: str) -> int:
            \"\"\"Units of ``sku`` in stock.\"\"\"
            if sku not in STOCK:
                raise toolnexus.ToolError(f"Unknown SKU {sku!r}; list them with `skus`.")
            return STOCK[sku]
    """


class ArgumentError(ToolError):
    """The arguments did not fit the tool's input schema; the message lists each problem."""


class GeminiSchemaWarning(ToolnexusError, UserWarning):
    """Part of a tool's schema cannot be expressed in Gemini's ``parameters`` subset.

    Issued by `toolnexus.to_gemini`; the message names the tool, the place in the schema
    and the keyword that was dropped. A warning, not raised; it sits under
    `ToolnexusError` so that with warnings turned into errors ``except ToolnexusError``
    still catches it. ``to_gemini(tools, json_schema=True)`` loses nothing and never warns.
    """


def describe_failure(tool: str, error: BaseException) -> str:
    """Return the one message every tool that raised ``error`` fails with.

    ``Tool '<tool>' failed: <ExceptionType>: <message>`` (without ``: <message>`` when the
    exception has none). `toolnexus.execute` uses it for any tool, and the HTTP and MCP
    tools use it for a transport failure, so a model reads one shape however a tool was
    made. A `ToolError` is the exception to the rule: its message is used as is.
    """
    kind = type(error).__name__
    text = str(error)
    return f"Tool {tool!r} failed: {kind}: {text}" if text else f"Tool {tool!r} failed: {kind}"


class FrontmatterError(ConfigError):
    """A Markdown file's ``---`` frontmatter cannot be read (unclosed, or invalid YAML).

    Raised by `toolnexus.split_frontmatter` and `toolnexus.parse_frontmatter`; the message
    says what is wrong and, for YAML, on which line. Skill discovery reports such a file as
    skipped instead of raising.
    """
