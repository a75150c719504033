"""The skills catalog goes out once per request and is capped (17.6), through the real client."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import respx

import toolnexus as tn
from agent import ConfigurationError, ModelSettings
from tests.agent._loop_support import Script, make_agent, reply, text


def many_skills(base: Path, count: int) -> tn.Toolkit:
    for i in range(count):
        folder = base / f"s{i:04}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04}\ndescription: Does task number {i} very well.\n---\nDo.\n"
        )
    return tn.build(skills=base, builtins=False)


async def test_the_catalog_is_sent_once_and_capped(
    http: httpx.AsyncClient, mock: respx.MockRouter, tmp_path: Path
) -> None:
    tk = many_skills(tmp_path, 864)
    script = Script(mock, [reply(text("ok"))])
    await make_agent(http, tk).run("go")
    body = json.dumps(script.bodies[0])
    assert body.count("skill-0001") == 1  # listed once: in the instruction, not the tool too
    [system] = script.bodies[0]["systemInstruction"]["parts"]
    assert len(tn.skills_prompt(tk, max_chars=None)) > 40_000
    assert len(system["text"]) <= 20_000
    assert "skill-0863" not in body
    last = system["text"].splitlines()[-1]
    listed = system["text"].count("\n- **skill-")
    assert last.startswith(f"{864 - listed} more skill(s) are not listed here")
    assert "call the skill tool with its name" in last


async def test_the_cap_is_configurable_and_none_lists_everything(
    http: httpx.AsyncClient, mock: respx.MockRouter, tmp_path: Path
) -> None:
    tk = many_skills(tmp_path, 40)
    script = Script(mock, [reply(text("ok")), reply(text("ok"))])
    await make_agent(http, tk, settings=ModelSettings(skills_catalog_chars=None)).run("go")
    await make_agent(http, tk, settings=ModelSettings(skills_catalog_chars=1000)).run("go")
    full, capped = (b["systemInstruction"]["parts"][0]["text"] for b in script.bodies)
    assert full.count("\n- **skill-") == 40
    assert len(capped) <= 1000 and "more skill(s) are not listed here" in capped
    with pytest.raises(ConfigurationError, match="skills_catalog_chars"):
        make_agent(http, tk, settings=ModelSettings(skills_catalog_chars=10))


def test_an_unknown_name_in_a_big_collection_gets_the_closest_names(tmp_path: Path) -> None:
    tk = many_skills(tmp_path, 864)
    result = tn.execute(tk, "skill", {"name": "skill-0421x"})
    assert result.is_error
    assert result.output.startswith('Skill "skill-0421x" not found among 864 skills. Closest')
    assert "skill-0421" in result.output and len(result.output) < 400
    found = tn.execute(tk, "skill", {"name": "0863"})
    assert "skill-0863" in found.output
