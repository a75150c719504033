"""``toolnexus-agent tools``: the list and the rendered JSON of the same toolkit."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import toolnexus as tn
from agent.cli import build_parser, main
from tests.cli.conftest import Cli, cli_env

REPO = Path(__file__).resolve().parents[2]
SKILLS = str(REPO / "examples" / "skills")


@pytest.mark.parametrize("fmt", ["gemini", "openai", "anthropic"])
def test_format_equals_the_library_rendering(cli: Cli, workdir: Path, fmt: str) -> None:
    off = ["bash"]
    flags = ["--skills", SKILLS, "--tools", "clitools:ONE"]
    flags += [arg for name in off for arg in ("--disable", name)]
    code, out, err = cli("tools", "--format", fmt, *flags)
    assert code == 0, err
    builtins = {"tools": dict.fromkeys(off, False)}
    tk = tn.build(skills=SKILLS, builtins=builtins, tools=[_weather(workdir)])
    render = {"gemini": tn.to_gemini, "openai": tn.to_openai, "anthropic": tn.to_anthropic}[fmt]
    assert json.loads(out) == render(tk)


def _weather(workdir: Path) -> tn.Tool:
    namespace: dict[str, object] = {}
    exec((workdir / "clitools.py").read_text(encoding="utf-8"), namespace)
    tool = namespace["ONE"]
    assert isinstance(tool, tn.Tool)
    return tool


def test_list_shows_name_source_and_first_line(cli: Cli) -> None:
    code, out, err = cli(
        "tools", "--skills", SKILLS, "--disable", "webfetch", "--tools", "clitools:TOOLS"
    )
    assert code == 0, err
    table, skills = out.split("\n\n")
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in table.splitlines()}
    assert skills.startswith("skills (1):\n  hello-world  Greets someone by name")
    assert "webfetch" not in rows
    assert rows["get_weather"][1] == "Today's forecast for a city."
    assert rows["skill"][0] == "skill"
    assert rows["read"][0] == "builtin"
    assert len(rows) == 11  # ten built-ins - webfetch + skill + get_weather


def test_skills_problems_are_one_warning_and_verbose_lists_them(cli: Cli, workdir: Path) -> None:
    for name, frontmatter in [("good", "name: good"), ("nameless", "description: x")]:
        (workdir / "sk" / name).mkdir(parents=True)
        (workdir / "sk" / name / "SKILL.md").write_text(f"---\n{frontmatter}\n---\nBody.\n")
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # as a user's shell has it: shown, not raised
        code, out, err = cli("tools", "--no-builtins", "--skills", "sk")
    assert code == 0, err
    assert out.endswith("\n\nskills (1):\n  good  (no description: not in the catalog)\n")
    [warning] = err.splitlines()
    assert warning.startswith("warning: skipped 1 skill file(s) (1 missing-name): ")
    assert "nameless/SKILL.md (missing-name: the frontmatter has no `name`)" in warning
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        code, out, err = cli("tools", "--no-builtins", "--skills", "sk", "-v")
    assert code == 0, err
    skipped = out.split("\n\nskipped (1):\n")[1]
    assert skipped.endswith("nameless/SKILL.md  missing-name: the frontmatter has no `name`\n")


def test_no_builtins_and_disable_leave_tools_out(cli: Cli) -> None:
    code, out, _ = cli("tools", "--no-builtins", "--tools", "clitools:TOOLS", "--format", "gemini")
    assert code == 0
    declarations = json.loads(out)[0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["get_weather"]
    code, out, err = cli(
        "tools", "--no-builtins", "--tools", "clitools:TOOLS", "--disable", "get_weather"
    )
    assert (code, out) == (0, "")
    assert "no tools" in err


def test_disable_of_an_unknown_tool_is_a_usage_error(cli: Cli) -> None:
    code, _, err = cli("tools", "--disable", "nope")
    assert code == 2
    assert err.startswith("--disable: no tool named 'nope'; the tools are ")
    assert "read" in err


def test_every_subcommand_has_help_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    top = capsys.readouterr().out
    assert "exit codes:" in top and "toolnexus-agent demo" in top
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(subparsers.choices) == [
        "run",
        "chat",
        "tools",
        "serve",
        "web",
        "batch",
        "eval",
        "demo",
        "worker",
        "batch-status",
    ]
    for name in subparsers.choices:
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0
        text = capsys.readouterr().out
        assert text.startswith(f"usage: toolnexus-agent {name}")
        if name != "demo":
            assert "examples:" in text and "exit code" in text


def test_help_does_not_import_the_sdk() -> None:
    code = (
        "import sys\n"
        "import agent\n"
        "if 'google.genai' in sys.modules:\n"
        "    raise SystemExit(3)\n"
        "from agent.cli import main\n"
        "for command in ([], ['run'], ['chat'], ['tools'], ['batch'], ['demo']):\n"
        "    try:\n"
        "        main([*command, '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'google.genai' not in sys.modules, 'the SDK was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 3, "`import agent` itself imports google.genai"
    assert done.returncode == 0, done.stderr


def test_gemini_format_says_which_form_it_prints(cli: Cli) -> None:
    flags = ("--no-builtins", "--tools", "clitools:TOOLS", "--format", "gemini")
    code, out, err = cli("tools", *flags)
    assert code == 0
    assert "`parameters`, the OpenAPI subset" in err
    assert "parameters" in json.loads(out)[0]["functionDeclarations"][0]
    code, out, err = cli("tools", *flags, "--json-schema")
    assert code == 0
    assert "`parametersJsonSchema`, the full JSON Schemas the agent sends" in err
    assert "parametersJsonSchema" in json.loads(out)[0]["functionDeclarations"][0]
    code, _, err = cli("tools", "--json-schema")
    assert (code, err.strip()) == (2, "--json-schema goes with --format gemini")
