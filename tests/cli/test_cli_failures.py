"""The command line fails like the rest of it: exit code 2, one line, no traceback."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import agent.cli
from agent.cli import EXIT_OK, EXIT_USAGE
from agent.cli.batch_status import redraw
from agent.testing import FakeGemini
from tests.cli.conftest import Cli, Terminal

DBOS_HINT = (
    "needs the `dbos` extra (sqlalchemy is not installed): pip install '.[dbos]' from a "
    "clone of toolnexus-gemini"
)


@pytest.fixture
def without_dbos(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the ``dbos`` extra look uninstalled (``None`` in sys.modules halts the import)."""
    for name in list(sys.modules):
        if name.split(".")[0] in ("dbos", "sqlalchemy") or name.startswith(
            ("agent.cli._dbos_", "agent.dbos")
        ):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    monkeypatch.setitem(sys.modules, "dbos", None)
    for module in ("_dbos_batch", "_dbos_liveness", "_dbos_submit", "_dbos_worker"):
        monkeypatch.delattr(agent.cli, module, raising=False)


@pytest.fixture
def shown_warnings() -> Iterator[None]:
    """Warnings shown, not raised, as a user's shell has them."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        yield


@pytest.mark.usefixtures("without_dbos")
@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["batch", "tasks.yaml", "--engine", "dbos"], "batch"),
        (["worker"], "worker"),
        (["batch-status"], "batch-status"),
    ],
)
def test_the_dbos_commands_without_the_extra_say_how_to_install_it(
    cli: Cli, workdir: Path, argv: list[str], command: str
) -> None:
    (workdir / "tasks.yaml").write_text("tasks:\n  - {id: a, prompt: hi}\n", encoding="utf-8")
    code, out, err = cli(*argv)
    assert (code, out) == (EXIT_USAGE, "")
    assert err == f"toolnexus-agent {command}: {DBOS_HINT}\n"


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ["run", "--max-trns", "3", "hi"],
            "toolnexus-agent run: error: unrecognized arguments: --max-trns (did you mean "
            "--max-turns?) hi",
        ),
        (
            ["batch-status", "--wiat"],
            "toolnexus-agent batch-status: error: unrecognized arguments: --wiat (did you "
            "mean --wait?)",
        ),
        (
            ["tools", "--formt=gemini"],
            "toolnexus-agent tools: error: unrecognized arguments: --formt=gemini (did you "
            "mean --format?)",
        ),
    ],
)
def test_an_unknown_subcommand_flag_is_that_subcommands_usage_error(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        agent.cli.main(argv)
    assert exc.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"usage: toolnexus-agent {argv[0]} ")
    assert err.splitlines()[-1] == error
    assert "Traceback" not in err


def test_an_agent_named_like_a_tool_is_a_usage_error_naming_the_file(
    cli: Cli, workdir: Path
) -> None:
    (workdir / "agents").mkdir()
    (workdir / "agents" / "reader.md").write_text("---\nname: read\n---\nI read.\n")
    with FakeGemini(["unused"]).serve() as server:
        code, out, err = cli("run", "--agents", "agents", "hi", server=server)
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        f"--agents: agent file {Path('agents') / 'reader.md'}: 'read' is already a tool of the "
        "toolkit (builtin); give the agent another name\n"
    )


@pytest.mark.usefixtures("shown_warnings")
def test_tools_lists_the_subagents_of_agents(cli: Cli, workdir: Path) -> None:
    (workdir / "agents").mkdir()
    (workdir / "agents" / "helper.md").write_text(
        "---\nname: helper\ndescription: Helps with small things.\ntools: Read, WebSearch\n---\n"
    )
    code, out, err = cli("tools", "--no-builtins", "--agents", "agents")
    assert code == EXIT_OK
    assert out == "helper  agent  Helps with small things.\n"
    assert err == (
        "warning: agent files: tools the toolkit lacks were left out: Read (helper.md), "
        "WebSearch (helper.md)\n"
    )
    code, out, _ = cli("tools", "--no-builtins", "--agents", "agents", "--format", "openai")
    assert '"name": "helper"' in out


def test_tools_with_a_missing_agents_folder_is_a_usage_error(cli: Cli) -> None:
    code, out, err = cli("tools", "--agents", "missing")
    assert (code, out, err) == (EXIT_USAGE, "", "--agents: no agent file or directory at missing\n")


@pytest.mark.usefixtures("shown_warnings")
def test_a_bad_agent_file_is_skipped_with_a_warning_or_refused_with_strict(
    cli: Cli, workdir: Path
) -> None:
    (workdir / "agents").mkdir()
    (workdir / "agents" / "good.md").write_text("---\nname: good\n---\nGood.\n")
    (workdir / "agents" / "plain.md").write_text("no frontmatter\n")
    skipped = f"agent file {Path('agents') / 'plain.md'}: needs a `---` frontmatter with a name"
    code, out, err = cli("tools", "--no-builtins", "--agents", "agents")
    assert (code, out, err) == (EXIT_OK, "good  agent\n", f"warning: skipped {skipped}\n")
    with FakeGemini(["unused"]).serve() as server:
        code, out, err = cli("run", "--agents", "agents", "--strict", "hi", server=server)
    assert (code, out, err) == (EXIT_USAGE, "", f"--agents: {skipped} (--strict refuses it)\n")
    code, _, err = cli("tools", "--agents", "agents", "--strict")
    assert (code, err) == (EXIT_USAGE, f"--agents: {skipped} (--strict refuses it)\n")


def test_redraw_keeps_the_frame_in_place_and_leaves_no_stale_characters() -> None:
    screen = Terminal()
    frames = [
        ["nightly [----] 0/12 done, 2 running, 10 waiting", "weekly [----] 0/3 done"],
        ["nightly [#---] 3/12 done, 2 running, 7 waiting", "weekly [#---] 1/3 done"],
        ["nightly [####] 12/12 done", "weekly [####] 3/3 done", "monthly [----] 0/1 done"],
        ["nightly [####] 12/12 done", "weekly [####] 3/3 done"],
    ]
    drawn = 0
    for frame in frames:
        screen.write(redraw(frame, drawn))
        drawn = max(drawn, len(frame))
        assert screen.rows == [*frame, *[""] * (drawn - len(frame))]  # no scrolling, no stale
    assert screen.rows[0] == "nightly [####] 12/12 done"
