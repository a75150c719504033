"""Every example in a subcommand's ``--help`` runs as written and succeeds.

The examples are read from the help text itself, in order, and run in one working
directory laid out as the help assumes (a clone's ``examples/``, a ``./skills`` folder,
``tasks.yaml``, ...). Examples without ``--fake`` talk to a FakeGemini server standing in
for Gemini; ``--fake`` examples play their scenario file.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.cli import batch, chat, run, tools
from agent.testing import FakeGemini, ReplyLike, function_call
from tests.cli.conftest import REPO, Cli

SUBCOMMANDS = {"run": run, "chat": chat, "tools": tools, "batch": batch}
CHAT_INPUT = "Hi, I am Ada.\nWhat is my name?\n"


def help_examples(epilog: str) -> list[str]:
    """The command lines of a help text (continuation lines joined)."""
    lines: list[str] = []
    pending = ""
    for raw in epilog.splitlines():
        line = raw.strip()
        if pending:
            line, pending = pending + " " + line, ""
        elif "toolnexus-agent " not in line or not line.startswith(("toolnexus-agent", "echo")):
            continue
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        lines.append(line)
    return lines


def model(body: dict[str, Any]) -> ReplyLike:
    """Gemini's stand-in: asks a question for 'Remember...', else answers briefly."""
    last = body["contents"][-1]["parts"][0]
    if "functionResponse" in last:
        return "Noted."
    if "Remember" in last.get("text", ""):
        return function_call("question", {"questions": [{"question": "Shall I keep it?"}]})
    return "Done."


@pytest.fixture
def laid_out(workdir: Path) -> Path:
    """The working directory the help examples assume."""
    shutil.copytree(REPO / "examples", workdir / "examples")
    shutil.copytree(REPO / "examples" / "skills", workdir / "skills")
    shutil.copy(REPO / "README.md", workdir / "README.md")
    (workdir / "mytools.py").write_text(
        "def forecast(city: str) -> str:\n"
        '    """Today\'s forecast for a city."""\n'
        '    return f"sunny in {city}"\n',
        "utf-8",
    )
    tasks = [{"id": "a", "prompt": "Say hi."}, {"id": "b", "prompt": "Say bye."}]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump(tasks), "utf-8")
    turns = {"turns": [{"text": "Hi."}, {"text": "Bye."}]}
    (workdir / "scenario.yaml").write_text(yaml.safe_dump(turns), "utf-8")
    return workdir


def test_the_help_texts_have_examples() -> None:
    for name, module in SUBCOMMANDS.items():
        assert help_examples(module._EPILOG), name


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_every_help_example_runs_as_written(cli: Cli, laid_out: Path, name: str) -> None:
    fake = FakeGemini(model)
    with fake.serve() as server:
        for line in help_examples(SUBCOMMANDS[name]._EPILOG):
            words = shlex.split(line, comments=True)
            stdin = CHAT_INPUT if "chat" in words else ""
            if words[0] == "echo":
                bar = words.index("|")
                stdin, words = " ".join(words[1:bar]) + "\n", words[bar + 1 :]
            target = None
            if ">" in words:
                target = words[words.index(">") + 1]
                words = words[: words.index(">")]
            assert words[0] == "toolnexus-agent", line
            code, out, err = cli(*words[1:], server=server, stdin=stdin)
            # The 'Remember' example ends pending on a question (exit 3), which the
            # resume example after it answers.
            expected = 3 if "Remember" in line else 0
            assert code == expected, f"{line}\n{err}"
            assert "error:" not in err and "fake model:" not in err, f"{line}\n{err}"
            if target is not None:
                (laid_out / target).write_text(out, "utf-8")
                assert out.strip(), line
