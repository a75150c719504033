"""The offline demo runs end to end: real loop, real tools, scripted Gemini, no key, no network."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent.cli import main
from agent.cli.demo import demo_data, run_demo

REPO = Path(__file__).resolve().parents[1]


GREETING = "Hello, Ada! Greetings from the hello-world skill."


def _lines_in_order(transcript: str, *expected: str) -> None:
    """Each expected line is in the transcript, after the one before it."""
    lines = transcript.splitlines()
    at = 0
    for line in expected:
        assert line in lines[at:], f"{line!r} missing after line {at}:\n{transcript}"
        at = lines.index(line, at) + 1


@pytest.mark.parametrize("transport", ["inprocess", "http"])
def test_the_tour_shows_the_loop_approval_a_sub_agent_typed_output_and_cost(
    transport: str,
) -> None:
    out = io.StringIO()
    assert run_demo(out, transport=transport) == 0  # type: ignore[arg-type]
    transcript = out.getvalue()
    assert "No API key and no network are used." in transcript
    assert "\033[" not in transcript, "not a terminal: plain text"
    approval = "[y]es / [n]o [reason] / [e]dit"
    answered = "> y  (answered by the demo; `run` asks you)"
    _lines_in_order(
        transcript,
        "user> Greet Ada with the hello-world skill, save the greeting in greeting.txt, "
        "have it reviewed.",
        "--- turn 1 ---",
        "(thinking) There is a skill for greetings. Load it first.",
        '-> skill {"name": "hello-world"}',
        "--- turn 2 ---",
        '-> bash {"command": "bash skills/hello-world/scripts/greet.sh Ada"}',
        f'? Allow bash {{"command": "bash skills/hello-world/scripts/greet.sh Ada"}}? {approval}',
        answered,
        f"<- bash: {GREETING}",
        "--- turn 3 ---",
        f'? Allow write {{"path": "greeting.txt", "content": "{GREETING}\\n"}}? {approval}',
        answered,
        "<- write: Wrote 50 bytes to greeting.txt (new file).",
        "--- turn 4 ---",
        '-> reviewer {"task": "Is the greeting in greeting.txt fit to send?"}',
        '  [reviewer] -> read {"path": "greeting.txt"}',
        f"  [reviewer] <- read: 00001| {GREETING} (+2 lines)",
        "  [reviewer] done (completed)",
        "<- reviewer: Warm, short and spelled right. Fit to send.",
        "--- turn 5 ---",
        f'{{"greeting": "{GREETING}",',
        ' "saved_in": "greeting.txt",',
        ' "review": "Warm, short and spelled right. Fit to send."}',
        "result.output, the typed answer (checked, then parsed):",
        f"  greeting  {GREETING}",
        "  saved_in  greeting.txt",
        "  review    Warm, short and spelled right. Fit to send.",
        "done: completed in 5 model turns and 4 tool calls",
        f"greeting.txt holds {GREETING!r}",
        "usage: 14,005 tokens, the reviewer's included",
    )
    assert "--- turn 6 ---" not in transcript
    assert re.search(r"^cost: \$0\.\d{6} \(gemini-3-flash-preview prices of ", transcript, re.M)
    last = transcript.rstrip().splitlines()
    assert last[-2].startswith("next: export GEMINI_API_KEY=") and "toolnexus-agent run" in last[-2]
    assert "docs/index.md" in last[-1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_tour_is_coloured_on_a_terminal_unless_no_color(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    coloured = _Terminal()
    assert run_demo(coloured) == 0
    shown = coloured.getvalue()
    assert '\033[36m-> skill {"name": "hello-world"}\033[0m\n' in shown  # a call: cyan
    assert f"\033[32m<- bash: {GREETING}\033[0m\n" in shown  # a result: green
    assert "\033[2;3m(thinking) There is a skill" in shown  # a thought: dim italic
    assert "\033[1;33m? Allow bash " in shown  # the approval prompt: bold yellow
    assert '\033[35m[reviewer]\033[0m \033[36m-> read {"path": "greeting.txt"}' in shown
    assert "done: completed in 5 model turns" in shown

    monkeypatch.setenv("NO_COLOR", "1")
    plain = _Terminal()
    assert run_demo(plain) == 0
    assert "\033[" not in plain.getvalue()
    assert plain.getvalue().startswith("toolnexus-agent demo: a two-minute tour")


def test_demo_cleans_up_its_workspace_unless_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    assert run_demo(io.StringIO()) == 0
    assert list(tmp_path.iterdir()) == []
    out = io.StringIO()
    assert run_demo(out, keep=True) == 0
    (kept,) = tmp_path.iterdir()
    assert (
        kept / "greeting.txt"
    ).read_text() == "Hello, Ada! Greetings from the hello-world skill.\n"
    assert f"(workspace kept: {kept})" in out.getvalue()


def test_cli_demo_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    assert "done: completed in 5 model turns and 4 tool calls" in capsys.readouterr().out


def test_cli_without_a_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "demo" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2


def test_python_dash_m_agent_demo_exits_0_without_keys(tmp_path: Path) -> None:
    env = {
        k: v for k, v in os.environ.items() if "API_KEY" not in k and not k.startswith("GOOGLE_")
    }
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-m", "agent", "demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "done: completed" in done.stdout
    assert "\033[" not in done.stdout, "piped: plain text"
    assert done.stderr == "", "no warning (shell isolation, SDK) interrupts the tour"
    assert list(tmp_path.iterdir()) == [], "the demo writes only in its scratch workspace"


def test_shipped_demo_data_matches_the_examples() -> None:
    with demo_data() as data:
        shipped = {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()}
    examples = {
        Path("demo.yaml"): (REPO / "examples/scenarios/demo.yaml").read_bytes(),
        **{
            Path("skills/hello-world")
            / p.relative_to(REPO / "examples/skills/hello-world"): p.read_bytes()
            for p in (REPO / "examples/skills/hello-world").rglob("*")
            if p.is_file()
        },
    }
    assert shipped == examples


def test_demo_plays_another_scenario_and_checks_its_files(tmp_path: Path) -> None:
    scenario = tmp_path / "notes.yaml"
    scenario.write_text(
        "prompt: Write a note.\n"
        "files: [note.txt]\n"
        "turns:\n"
        "  - calls: [{name: write, args: {path: note.txt, content: hi}}]\n"
        "  - expect: {function_response: write}\n"
        "    text: Written.\n"
    )
    out = io.StringIO()
    assert run_demo(out, scenario=scenario) == 0
    assert "done: completed in 2 model turns and 1 tool call\nnote.txt holds 'hi'\n" in (
        out.getvalue()
    )
    assert "output:" not in out.getvalue(), "no output_schema: an answer in plain text"


@pytest.mark.parametrize(
    ("yaml_text", "problem"),
    [
        ("files: [out.txt]\nturns: [Nothing to do.]\n", "demo failed: out.txt was not written"),
        ("turns: [Done., Never used.]\n", "demo failed: 1 scripted model turns were not used"),
        (
            "turns:\n  - {expect: {user_text: impossible}, text: x}\n",
            "failed its expectation: turn 1: no user text contains 'impossible'",
        ),
        (
            "turns:\n  - error: {code: 400, message: Bad thing.}\n",
            "demo failed: the run failed: Gemini call failed after 1 attempt: 400",
        ),
    ],
)
def test_demo_fails_when_the_run_does_not_do_what_the_scenario_says(
    tmp_path: Path, yaml_text: str, problem: str
) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml_text)
    out = io.StringIO()
    assert run_demo(out, scenario=scenario) == 1
    assert problem in out.getvalue()
    assert "did not complete" not in out.getvalue()


def test_demo_and_run_show_events_in_the_same_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "note.yaml"
    scenario.write_text(
        "prompt: Write a note.\n"
        "turns:\n"
        "  - error: {code: 503, retry_delay: 0.01}\n"
        "  - calls: [{name: write, args: {path: note.txt, content: hi}}]\n"
        "  - text: Written.\n"
    )
    transcript = io.StringIO()
    assert run_demo(transcript, scenario=scenario) == 0
    monkeypatch.chdir(tmp_path)
    run = ["run", "--fake", str(scenario), "--approval", "never-ask", "Write a note."]
    assert main(run) == 0
    shown = capsys.readouterr()
    assert shown.out == "Written.\n"

    def events(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith(("->", "<-", "(model"))]

    assert (
        events(transcript.getvalue())
        == events(shown.err)
        == [
            "(model call failed: UNAVAILABLE; retrying after 0.0 s)",
            '-> write {"path": "note.txt", "content": "hi"}',
            "<- write: Wrote 2 bytes to note.txt (new file).",
        ]
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "--scenario: cannot read {path}: No such file or directory"),
        ("turns: [{a: b\n", "--scenario: {path}:2:1: expected ',' or '}}', but got"),
        ("just text\n", "--scenario: {path} is not a valid scenario: "),
    ],
)
def test_a_bad_scenario_is_a_usage_error_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, problem: str
) -> None:
    path = tmp_path / "tour.yaml"
    if content is not None:
        path.write_text(content)
    assert main(["demo", "--scenario", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(problem.format(path=path)), err
    assert err.count("\n") == 1 and "Traceback" not in err
