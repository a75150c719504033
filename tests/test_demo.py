"""The offline demo runs end to end: real loop, real tools, scripted Gemini, no key, no network."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.cli import main
from agent.cli.demo import demo_data, run_demo

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("transport", ["inprocess", "http"])
def test_demo_transcript_shows_skill_tools_and_answer(transport: str) -> None:
    out = io.StringIO()
    assert run_demo(out, transport=transport) == 0  # type: ignore[arg-type]
    transcript = out.getvalue()
    assert "No API key and no network are used." in transcript
    thinking = "(thinking) The user wants a greeting, and there is a skill for that."
    assert thinking in transcript, "streamed thought pieces are printed whole"
    assert '-> skill {"name": "hello-world"}' in transcript
    assert '<- skill: <skill_content name="hello-world"> (+' in transcript
    assert "-> read " in transcript and "/scripts/greet.sh" in transcript
    assert "-> bash " in transcript
    assert "<- bash: Hello, Ada! Greetings from the hello-world skill.\n" in transcript
    assert '-> write {"path": "greeting.txt"' in transcript
    assert "<- write: Wrote 50 bytes to greeting.txt" in transcript
    assert "--- turn 4 ---\nThe hello-world skill's script says: \"Hello, Ada!" in transcript
    assert transcript.rstrip().endswith(
        "greeting.txt holds 'Hello, Ada! Greetings from the hello-world skill.'"
    )
    assert "--- turn 4 ---" in transcript and "--- turn 5 ---" not in transcript
    assert transcript.count("I saved that greeting in greeting.txt.") == 1


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
    assert "done: completed in 4 model turns and 4 tool calls" in capsys.readouterr().out


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
    assert out.getvalue().rstrip().endswith("note.txt holds 'hi'")


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
