"""``--cache TTL`` (and ``--cache-mode``) on run, chat, batch and eval, and sub-agents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agent.testing import FakeGemini, function_call
from tests.cli.conftest import Cli

TOOLS = ("--no-builtins", "--tools", "clitools:TOOLS")
RULES = "Answer in the style of the house guide, one rule at a time. " * 260  # ~3,900 tokens


def _cached(fake: FakeGemini) -> list[str | None]:
    return [(request.body or {}).get("cachedContent") for request in fake.requests]


def _no_pair(fake: FakeGemini) -> None:
    for request in fake.requests:
        body = request.body or {}
        if "cachedContent" in body:
            assert not {"systemInstruction", "tools", "toolConfig"} & set(body)
        assert request.status == 200


@pytest.fixture
def rules(workdir: Path) -> str:
    (workdir / "rules.txt").write_text(RULES, encoding="utf-8")
    return "@rules.txt"


def test_run_caches_the_prefix_from_the_first_request(cli: Cli, rules: str) -> None:
    fake = FakeGemini([function_call("get_weather", {"city": "Paris"}), "Sunny."])
    with fake.serve() as server:
        code, out, err = cli(
            "run", "--json", *TOOLS, "--system", rules, "--cache", "10m", "Weather?", server=server
        )
    assert code == 0, err
    assert _cached(fake) == ["cachedContents/fakecache0001"] * 2
    _no_pair(fake)
    cache = fake.caches.caches["fakecache0001"]
    assert cache.expires - cache.created == pytest.approx(600)
    result = json.loads(out)
    assert result["usage"]["cached"] == 2 * cache.tokens
    assert result["cost"]["cache_storage"] > 0


def test_run_shows_the_cache_and_its_cost(cli: Cli, rules: str) -> None:
    fake = FakeGemini(["Sunny."])
    with fake.serve() as server:
        code, out, err = cli(
            "run", *TOOLS, "--system", rules, "--cache", "600", "Hi", server=server
        )
    assert code == 0, err
    assert out == "Sunny.\n"
    lines = err.splitlines()
    tokens = fake.caches.caches["fakecache0001"].tokens
    assert lines[0] == f"(context cache created: cachedContents/fakecache0001, {tokens:,} tokens)"
    assert "; context cache: storage $" in lines[-1] and "net" in lines[-1]


def test_a_second_run_of_a_session_finds_the_cache_in_the_store(cli: Cli, rules: str) -> None:
    fake = FakeGemini(["One.", "Two."])
    flags = ("--system", rules, "--cache", "1h", "--cache-mode", "always")
    session = ("--store", "sessions.db", "--session", "s")
    with fake.serve() as server:
        first = cli("run", *TOOLS, *flags, *session, "one", server=server)
        second = cli("run", *TOOLS, *flags, *session, "two", server=server)
    assert first[0] == 0 and second[0] == 0, second[2]
    assert "(context cache found: cachedContents/fakecache0001" in second[2]
    assert fake.caches.created == ["cachedContents/fakecache0001"]
    assert _cached(fake) == ["cachedContents/fakecache0001"] * 2


def test_chat_keeps_one_cache_for_the_conversation(cli: Cli, rules: str) -> None:
    fake = FakeGemini(["Hello.", "Again."])
    with fake.serve() as server:
        code, _, err = cli(
            "chat", *TOOLS, "--system", rules, "--cache", "10m", server=server, stdin="hi\nmore\n"
        )
    assert code == 0, err
    assert _cached(fake) == ["cachedContents/fakecache0001"] * 2
    assert len(fake.caches.created) == 1


def test_batch_tasks_share_one_cache(cli: Cli, workdir: Path, rules: str) -> None:
    tasks = [{"id": f"t{i}", "prompt": f"task {i}"} for i in range(4)]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}), "utf-8")
    fake = FakeGemini(lambda body: "done")
    with fake.serve() as server:
        code, _, err = cli(
            "batch",
            "tasks.yaml",
            "--out",
            "out.jsonl",
            *TOOLS,
            "--system",
            rules,
            "--cache",
            "10m",
            server=server,
        )
    assert code == 0, err
    assert len(fake.caches.created) == 1
    assert set(_cached(fake)) == {"cachedContents/fakecache0001"}
    _no_pair(fake)
    records = [json.loads(line) for line in (workdir / "out.jsonl").read_text().splitlines()]
    assert {r["status"] for r in records} == {"completed"}


def test_eval_runs_its_cases_with_a_cache(cli: Cli, workdir: Path) -> None:
    case = {"id": "hi", "prompt": "Hi?", "system": RULES, "scenario": [{"text": "Hello."}]}
    evals = {"cases": [case]}
    (workdir / "evals.yaml").write_text(yaml.safe_dump(evals), "utf-8")
    code, _, err = cli(
        "eval", "evals.yaml", "--out", "runs.jsonl", "--offline", "--cache", "10m", "--no-builtins"
    )
    assert code == 0, err
    (record,) = [json.loads(line) for line in (workdir / "runs.jsonl").read_text().splitlines()]
    assert record["passed"] is True
    assert record["usage"]["cached"] > 0


def test_sub_agents_of_agent_files_share_the_cache(cli: Cli, workdir: Path, rules: str) -> None:
    (workdir / "agents").mkdir()
    helper = f"---\nname: helper\ndescription: Answers.\ntools: [get_weather]\n---\n{RULES}\n"
    (workdir / "agents" / "helper.md").write_text(helper, encoding="utf-8")
    fake = FakeGemini(
        [
            [
                function_call("helper", {"task": "Rome"}),
                function_call("helper", {"task": "Oslo"}),
            ],
            "Sunny.",
            "Snowy.",
            "Rome sunny, Oslo snowy.",
        ]
    )
    flags = (*TOOLS, "--agents", "agents", "--system", rules, "--cache", "10m")
    with fake.serve() as server:
        code, _, err = cli("run", *flags, "Weather?", server=server)
    assert code == 0, err
    assert all(_cached(fake))  # every request, the helpers' too
    assert len(fake.caches.created) == 2  # the main agent's prefix and the helper's
    _no_pair(fake)


def test_cache_mode_without_cache_is_a_usage_error(cli: Cli) -> None:
    code, _, err = cli("run", "--cache-mode", "always", "hi")
    assert code == 2
    assert err.strip() == "toolnexus-agent: --cache-mode needs --cache TTL"


def test_a_bad_ttl_is_a_usage_error(cli: Cli, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli("run", "--cache", "soon", "hi")
    assert exited.value.code == 2
    assert "expected a duration such as 600, 90s, 10m or 1h, got 'soon'" in capsys.readouterr().err


def test_auto_on_a_model_without_cache_prices_is_refused_in_one_line(cli: Cli) -> None:
    fake = FakeGemini(["unused"])
    with fake.serve() as server:
        code, _, err = cli(
            "run",
            "--no-builtins",
            "--model",
            "gemini-flash-latest",
            "--cache",
            "10m",
            "hi",
            server=server,
        )
    assert code == 2
    assert "mode='always'" in err and len(err.strip().splitlines()) == 1
