"""`build` / `build_async`: argument checks and what the two share."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from toolnexus import Skill
from toolnexus._skill_tool import SKILL_INPUT_SCHEMA, skill_tool

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "skills"


def test_missing_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(tn.ConfigError, match=r"root '.*missing' does not exist"):
        tn.build(root=tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(tn.ConfigError, match=r"root '.*file\.txt' is not a directory"):
        tn.build(root=tmp_path / "file.txt")


async def test_build_async_checks_root_too(tmp_path: Path) -> None:
    with pytest.raises(tn.ConfigError, match="does not exist"):
        await tn.build_async(root=tmp_path / "missing")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            {"tools": {"bash": "no"}},
            r"builtins\['tools'\]\['bash'\] must be true or false, not str",
        ),
        ({"tools": ["bash"]}, r"builtins\['tools'\] must be a mapping .* not list"),
        ({"disabled": "true"}, r"builtins\['disabled'\] must be true or false, not str"),
        ({"enabled": 0}, r"builtins\['enabled'\] must be true or false, not int"),
    ],
)
def test_builtins_option_values_are_type_checked(
    tmp_path: Path, option: dict[str, Any], message: str
) -> None:
    with pytest.raises(tn.ConfigError, match=message):
        tn.build(root=tmp_path, builtins=option)


async def test_build_async_matches_build(tmp_path: Path) -> None:
    options: dict[str, Any] = {"builtins": {"tools": {"bash": False}}, "root": tmp_path}
    sync_kit = tn.build(EXAMPLES, **options)
    async_kit = await tn.build_async(EXAMPLES, **options)
    assert sync_kit.names == async_kit.names
    assert "bash" not in async_kit.names and "skill" in async_kit.names
    assert [s.name for s in sync_kit.skills] == [s.name for s in async_kit.skills]
    assert tn.to_gemini(sync_kit) == tn.to_gemini(async_kit)


def test_name_clash_warning_points_at_the_caller(tmp_path: Path) -> None:
    mine = tn.Tool("skill", lambda args, ctx: "mine")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tn.build(EXAMPLES, root=tmp_path, tools=[mine])
    assert [Path(w.filename).name for w in caught] == [Path(__file__).name]
    assert "clashes" in str(caught[0].message)


def test_each_skill_tool_has_its_own_schema(tmp_path: Path) -> None:
    first = tn.build(EXAMPLES, root=tmp_path, builtins=False)["skill"]
    second = tn.build(EXAMPLES, root=tmp_path, builtins=False)["skill"]
    assert first.input_schema == SKILL_INPUT_SCHEMA
    assert first.input_schema is not SKILL_INPUT_SCHEMA
    assert first.input_schema is not second.input_schema
    first.input_schema["properties"]["name"]["type"] = "integer"
    assert SKILL_INPUT_SCHEMA["properties"]["name"]["type"] == "string"
    assert second.input_schema["properties"]["name"]["type"] == "string"


def test_skill_name_is_quoted_in_the_content_tag(tmp_path: Path) -> None:
    odd = Skill('a"b<c&d', None, tmp_path, tmp_path / "SKILL.md", "Body.")
    plain = Skill("plain-name_1", None, tmp_path, tmp_path / "SKILL.md", "Body.")
    tk = tn.toolkit([skill_tool([odd, plain], sample=-1)])
    quoted = tn.execute(tk, "skill", {"name": 'a"b<c&d'}).output
    assert quoted.startswith('<skill_content name="a&quot;b&lt;c&amp;d">\n# Skill: a"b<c&d\n')
    normal = tn.execute(tk, "skill", {"name": "plain-name_1"}).output
    assert normal.startswith('<skill_content name="plain-name_1">\n')


# --- your tools: Tool objects or plain functions (17.2) ---------------------------------------


def forecast(city: str) -> str:
    """Return the forecast for a city."""
    return f"Sunny in {city}"


def test_build_and_toolkit_take_plain_functions(tmp_path: Path) -> None:
    built = tn.build(tools=[forecast], builtins=False, root=tmp_path)
    listed = tn.toolkit([forecast])
    for tk in (built, listed):
        assert tk.names == ("forecast",)
        assert tk["forecast"].input_schema == tn.define_tool(forecast).input_schema
        assert tn.execute(tk, "forecast", {"city": "Oslo"}).output == "Sunny in Oslo"


@pytest.mark.parametrize("make", [tn.toolkit, lambda tools: tn.build(tools=tools)])
def test_an_item_that_is_no_tool_is_one_clear_type_error(make: Any) -> None:
    with pytest.raises(TypeError, match=r"^int is not a Tool or a function; pass a Tool"):
        make([forecast, 42])
    with pytest.raises(TypeError, match=r"use toolnexus\.toolkit"):
        tn.Toolkit([forecast])  # type: ignore[list-item]


# --- unknown built-in names (17.3) ------------------------------------------------------------


def test_an_unknown_builtin_name_warns_and_the_rest_is_built(tmp_path: Path) -> None:
    option = {"tools": {"nonexistent": False, "bash": False}}
    with pytest.warns(UserWarning) as caught:
        tk = tn.build(root=tmp_path, builtins=option)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "ignoring unknown built-in tool(s) 'nonexistent'" in message
    assert "the built-ins are apply_patch, bash, edit, glob, grep," in message
    assert caught[0].filename == __file__
    assert "bash" not in tk and "read" in tk


async def test_build_async_warns_the_same_way(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="ignoring unknown built-in tool"):
        tk = await tn.build_async(root=tmp_path, builtins={"tools": {"nope": True}})
    assert "bash" in tk
