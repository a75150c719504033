"""``--model A,B`` (or ``--model A --model B``): model fallback on run, chat, batch and eval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agent.testing import FakeGemini, error, function_call
from tests.cli.conftest import Cli

PRO = "gemini-3.1-pro-preview"
FLASH = "gemini-3-flash-preview"
OVERLOADED = error(503, "UNAVAILABLE", "The model is overloaded.", retry_delay=0.01)


def _models(fake: FakeGemini) -> list[str]:
    return [request.model for request in fake.requests]


@pytest.mark.parametrize(
    "flags", [("--model", f"{PRO},{FLASH}"), ("--model", PRO, "--model", FLASH)], ids=str
)
def test_run_falls_back_to_the_next_model_and_says_so(cli: Cli, flags: tuple[str, ...]) -> None:
    fake = FakeGemini(
        [function_call("get_weather", {"city": "Paris"}), *[OVERLOADED] * 5, "Sunny."]
    )
    with fake.serve() as server:
        code, out, err = cli(
            "run",
            "--json",
            "--no-builtins",
            "--tools",
            "clitools:TOOLS",
            *flags,
            "Weather?",
            server=server,
        )
    assert code == 0, err
    assert _models(fake) == [PRO, *[PRO] * 5, FLASH]
    result = json.loads(out)
    assert result["turn_models"] == [PRO, FLASH]
    assert result["model"] == FLASH
    # Flash got the documented placeholder in the place of pro's signature.
    sent = fake.requests[-1].contents[1]["parts"][0]
    assert sent["thoughtSignature"] == "skip_thought_signature_validator"


def test_run_shows_the_fallback_on_the_terminal(cli: Cli) -> None:
    fake = FakeGemini([*[OVERLOADED] * 5, "Sunny."])
    with fake.serve() as server:
        code, out, err = cli(
            "run", "--no-builtins", "--model", f"{PRO},{FLASH}", "Hi", server=server
        )
    assert code == 0, err
    assert f"({PRO} failed: UNAVAILABLE; turn 1 goes to {FLASH})" in out + err


def test_a_model_named_twice_or_empty_is_a_usage_error(
    cli: Cli, capsys: pytest.CaptureFixture[str]
) -> None:
    for value, problem in ((f"{PRO},{PRO}", "a model named twice"), (f"{PRO},", "an empty")):
        with pytest.raises(SystemExit) as exited:
            cli("run", "--no-builtins", "--model", value, "Hi")
        assert exited.value.code == 2
        assert f"argument --model: {problem}" in capsys.readouterr().err


def test_chat_falls_back_too(cli: Cli) -> None:
    fake = FakeGemini([*[OVERLOADED] * 5, "Hello.", "Again."])
    with fake.serve() as server:
        code, out, err = cli(
            "chat",
            "--no-builtins",
            "--model",
            f"{PRO},{FLASH}",
            server=server,
            stdin="hi\nmore\n",
        )
    assert code == 0, err
    # The second message goes straight to flash: pro cools down.
    assert _models(fake) == [*[PRO] * 5, FLASH, FLASH]
    assert "Again." in out


def test_batch_tasks_fall_back_and_record_the_model_of_each_turn(cli: Cli, workdir: Path) -> None:
    tasks = [{"id": "t1", "prompt": "one"}, {"id": "t2", "prompt": "two", "model": FLASH}]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}), "utf-8")
    fake = FakeGemini([*[OVERLOADED] * 5, "done one", "done two"])
    with fake.serve() as server:
        code, _, err = cli(
            "batch",
            "tasks.yaml",
            "--out",
            "out.jsonl",
            "--no-builtins",
            "--concurrency",
            "1",
            "--model",
            f"{PRO},{FLASH}",
            server=server,
        )
    assert code == 0, err
    records = {
        r["id"]: r for r in map(json.loads, (workdir / "out.jsonl").read_text().splitlines())
    }
    assert records["t1"]["status"] == "completed" and records["t1"]["model"] == FLASH
    assert records["t2"]["model"] == FLASH
    assert _models(fake) == [*[PRO] * 5, FLASH, FLASH]


def test_eval_cases_fall_back(cli: Cli, workdir: Path) -> None:
    scenario = [
        {"error": {"code": 503}},
        {"error": {"code": 503}},
        {"error": {"code": 503}},
        {"text": "Hello."},
    ]
    evals = {"cases": [{"id": "hi", "prompt": "Hi?", "scenario": scenario}]}
    (workdir / "evals.yaml").write_text(yaml.safe_dump(evals), "utf-8")
    # The case's scenario fails the first model past its three tries: only the chain passes.
    for models, expected in ((PRO, 1), (f"{PRO},{FLASH}", 0)):
        code, _, err = cli(
            "eval", "evals.yaml", "--out", f"{expected}.jsonl", "--offline", "--model", models
        )
        assert code == expected, err
    (record,) = [json.loads(line) for line in (workdir / "0.jsonl").read_text().splitlines()]
    assert record["status"] == "completed" and record["text"] == "Hello."


def test_serve_refuses_a_model_list(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    # The agents serve offers come from files that name one model: no fallback there.
    with pytest.raises(SystemExit) as exited:
        cli("serve", "--no-builtins", "--model", f"{PRO},{FLASH}")
    assert exited.value.code == 2
    assert "serve takes one model" in capsys.readouterr().err
