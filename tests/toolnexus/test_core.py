"""Core data types: Tool, ToolResult, Toolkit, sanitize, and the import boundary."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import toolnexus as tn
from toolnexus import Tool, ToolContext, Toolkit, ToolResult


def _noop(args: dict[str, Any], ctx: ToolContext) -> str:
    return ""


def _tools(*names: str) -> list[Tool]:
    return [Tool(name, _noop) for name in names]


# --- sanitize and names ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("a b/c.d", "a_b_c_d"),
        ("already_ok-1", "already_ok-1"),
        ("héllo", "h_llo"),
        ("ツール", "___"),
        ("server:tool", "server_tool"),
        ("", ""),
    ],
)
def test_sanitize(raw: str, clean: str) -> None:
    assert tn.sanitize(raw) == clean


def test_tool_name_is_sanitised() -> None:
    assert Tool("a b/c.d", _noop).name == "a_b_c_d"


# --- Tool and ToolResult ---------------------------------------------------------------------


def test_tool_defaults() -> None:
    tool = Tool("t", _noop)
    assert (tool.description, dict(tool.input_schema), tool.source, tool.validate) == (
        "",
        {"type": "object"},
        "native",
        None,
    )


def test_default_schemas_are_not_shared() -> None:
    a, b = Tool("a", _noop), Tool("b", _noop)
    assert a.input_schema is not b.input_schema


def test_tool_and_result_are_frozen() -> None:
    tool = Tool("t", _noop)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool.name = "other"  # type: ignore[misc]
    result = ToolResult("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.output = "y"  # type: ignore[misc]


def test_tool_result_pending() -> None:
    request: tn.Request = {"id": "q1", "kind": "question", "prompt": "Continue?"}
    assert ToolResult("waiting", metadata={"pending": request}).pending == request
    assert ToolResult("done").pending is None
    assert ToolResult("done", metadata={"other": 1}).pending is None


# --- Toolkit ---------------------------------------------------------------------------------


def test_toolkit_iterates_in_name_order() -> None:
    tk = tn.toolkit(_tools("zeta", "alpha", "Beta", "_x", "-y"))
    assert [t.name for t in tk] == ["-y", "Beta", "_x", "alpha", "zeta"]
    assert tk.names == ("-y", "Beta", "_x", "alpha", "zeta")
    assert len(tk) == 5
    assert repr(tk) == "Toolkit(['-y', 'Beta', '_x', 'alpha', 'zeta'])"


def test_toolkit_lookup() -> None:
    alpha, beta = _tools("alpha", "beta")
    tk = tn.toolkit([beta, alpha])
    assert tk["alpha"] is alpha
    assert tk.get("beta") is beta
    assert tk.get("gamma") is None
    assert "alpha" in tk
    assert "gamma" not in tk
    assert 3 not in tk
    with pytest.raises(KeyError):
        tk["gamma"]


def test_toolkit_lookup_uses_sanitised_names() -> None:
    tk = tn.toolkit([Tool("a b", _noop)])
    assert "a_b" in tk
    assert "a b" not in tk


def test_toolkit_is_immutable() -> None:
    source = _tools("alpha", "beta")
    tk = tn.toolkit(source)
    source.append(Tool("gamma", _noop))
    assert tk.names == ("alpha", "beta")
    with pytest.raises(TypeError):
        tk["gamma"] = Tool("gamma", _noop)  # type: ignore[index]
    with pytest.raises(TypeError):
        del tk["alpha"]  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        tk.extra = 1  # type: ignore[attr-defined]
    assert not hasattr(tk, "add")
    assert not hasattr(tk, "remove")


@pytest.mark.parametrize("names", [("a", "a"), ("a b", "a_b"), ("x.y", "x/y")])
def test_toolkit_rejects_duplicate_names(names: tuple[str, str]) -> None:
    with pytest.raises(tn.ConfigError, match="duplicate tool name"):
        tn.toolkit(_tools(*names))


def test_empty_toolkits() -> None:
    for tk in (tn.toolkit([]), tn.toolkit(), Toolkit()):
        assert len(tk) == 0
        assert list(tk) == []
        assert tk.names == ()
        assert tk.skills == ()
        assert tk.resources == ()


def test_toolkit_accepts_any_iterable() -> None:
    tk = tn.toolkit(Tool(n, _noop) for n in ("b", "a"))
    assert tk.names == ("a", "b")


class _Connection:
    """A stand-in for an MCP connection that records how it was closed."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def close(self) -> None:
        self.log.append(f"close {self.name}")

    async def aclose(self) -> None:
        self.log.append(f"aclose {self.name}")


def test_toolkit_closes_resources_once_in_reverse_order() -> None:
    log: list[str] = []
    tk = Toolkit(resources=[_Connection("one", log), _Connection("two", log)])
    with tk as entered:
        assert entered is tk
    tk.close()
    assert log == ["close two", "close one"]


async def test_toolkit_closes_resources_from_async_code() -> None:
    log: list[str] = []
    tk = Toolkit(resources=[_Connection("one", log), _Connection("two", log)])
    async with tk:
        pass
    await tk.aclose()
    tk.close()
    assert log == ["aclose two", "aclose one"]


# --- import boundary -------------------------------------------------------------------------


def test_importing_toolnexus_does_not_import_google_genai() -> None:
    code = textwrap.dedent(
        """
        import sys

        def genai():
            return sorted(m for m in sys.modules if m.split(".")[:2] == ["google", "genai"])

        import toolnexus
        import toolnexus.adapter, toolnexus.builtins, toolnexus.tool
        print(genai())
        import google.genai  # the check above would have seen it
        print(genai()[:1])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines() == ["[]", "['google.genai']"]
