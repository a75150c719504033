"""``toolnexus-agent run`` against the fake Gemini over HTTP; Ctrl-C in a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import respx

import agent._media as media
from agent import SqliteStore, Transcript
from agent.testing import FakeGemini, blocked, error, function_call, reply
from tests.cli.conftest import Cli, CliProcess, Hold, cli_env

TOOLS = ("--no-builtins", "--tools", "clitools:TOOLS")


def test_run_json_matches_the_script(cli: Cli) -> None:
    fake = FakeGemini([function_call("get_weather", {"city": "Paris"}), "It is sunny in Paris."])
    with fake.serve() as server:
        code, out, err = cli("run", "--json", *TOOLS, "Weather in Paris?", server=server)
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "completed"
    assert result["text"] == "It is sunny in Paris."
    assert result["turns"] == 2
    (call,) = result["tool_calls"]
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    assert call["result"] == {"output": "sunny in Paris", "is_error": False}
    assert [c["role"] for c in result["contents"]] == ["user", "model", "user", "model"]
    fake.assert_consumed()
    assert fake.requests[0].contents[0]["parts"][0]["text"] == "Weather in Paris?"
    assert fake.requests[0].declared_functions == ["get_weather"]
    assert fake.requests[1].function_responses[0]["response"]["output"] == "sunny in Paris"


@pytest.mark.filterwarnings("ignore::agent.UnknownModelWarning")  # a made-up model name
def test_run_streams_the_answer_to_stdout_and_activity_to_stderr(cli: Cli) -> None:
    fake = FakeGemini(
        [function_call("get_weather", {"city": "Oslo"}), "Sunny in Oslo."],
        extra_models=["gemini-test"],
    )
    with fake.serve() as server:
        code, out, err = cli("run", *TOOLS, "--model", "gemini-test", "Oslo?", server=server)
    assert code == 0, err
    assert out == "Sunny in Oslo.\n"
    assert err == '-> get_weather {"city": "Oslo"}\n<- get_weather: sunny in Oslo\n'
    assert fake.requests[0].model == "gemini-test"


def test_system_prompt_from_a_file_and_max_turns(cli: Cli, workdir: Path) -> None:
    (workdir / "system.txt").write_text("Answer in French.", encoding="utf-8")
    fake = FakeGemini([function_call("get_weather", {"city": "Lyon"})])
    with fake.serve() as server:
        code, _, err = cli(
            "run", *TOOLS, "--system", "@system.txt", "--max-turns", "1", "Lyon?", server=server
        )
    assert code == 4, err
    assert "incomplete: max_turns" in err
    assert fake.requests[0].system_text == "Answer in French."


def test_question_without_a_terminal_ends_pending_with_exit_3(cli: Cli) -> None:
    ask = function_call("question", {"questions": [{"question": "Which city?"}]})
    fake = FakeGemini([ask])
    with fake.serve() as server:
        code, out, err = cli("run", "--json", "Weather?", server=server)
    assert code == 3, err
    result = json.loads(out)
    assert result["status"] == "pending"
    assert result["pending"]["kind"] == "question"
    assert "Which city?" in result["pending"]["prompt"]


def test_question_answered_from_the_answer_flag(cli: Cli) -> None:
    ask = function_call("question", {"questions": [{"question": "Which city?"}]})
    fake = FakeGemini([ask, "Rome it is."])
    with fake.serve() as server:
        code, out, err = cli("run", "--answer", "Rome", "Weather?", server=server)
    assert code == 0, err
    assert out == "Rome it is.\n"
    assert "? Which city?" in err
    assert fake.requests[1].function_responses[0]["response"]["output"] == '"Rome"'


def test_pending_session_is_resumed_with_an_answer(cli: Cli, workdir: Path) -> None:
    ask = function_call("question", {"questions": [{"question": "Proceed?"}]})
    fake = FakeGemini([ask, "Done."])
    store = str(workdir / "s.db")
    with fake.serve() as server:
        code, _, err = cli("run", "--session", "s1", "--store", store, "Do it", server=server)
        assert code == 3, err
        assert "--session s1" in err and "--answer" in err
        code, out, err = cli(
            "run", "--session", "s1", "--store", store, "--answer", "yes", server=server
        )
    assert code == 0, err
    assert out == "Done.\n"
    assert fake.requests[1].function_responses[0]["response"]["output"] == '"yes"'


def test_blocked_and_failed_runs_have_their_exit_codes(cli: Cli) -> None:
    fake = FakeGemini([blocked("SAFETY"), error(400, "INVALID_ARGUMENT", "bad request")])
    with fake.serve() as server:
        blocked_code, _, blocked_err = cli("run", "--no-builtins", "Bad", server=server)
        failed_code, failed_out, failed_err = cli(
            "run", "--no-builtins", "--json", "Bad", server=server
        )
    assert blocked_code == 5, blocked_err
    assert "blocked: SAFETY" in blocked_err
    assert failed_code == 1, failed_err
    result = json.loads(failed_out)
    assert "400" in result["error"] and "bad request" in result["error"]
    assert result["status"] == "failed"  # as batch records it, not the partial "incomplete"


def test_session_with_a_store_remembers_the_previous_run(cli: Cli, workdir: Path) -> None:
    fake = FakeGemini(["Hello Ada.", reply("Your name is Ada.")])
    store = str(workdir / "chats.db")
    with fake.serve() as server:
        for prompt in ("I am Ada.", "What is my name?"):
            code, _, err = cli(
                "run", "--no-builtins", "--session", "a", "--store", store, prompt, server=server
            )
            assert code == 0, err
    texts = [part.get("text") for c in fake.requests[1].contents for part in c["parts"]]
    assert texts == ["I am Ada.", "Hello Ada.", "What is my name?"]


def test_fake_scenario_needs_no_key_and_no_server(cli: Cli, workdir: Path) -> None:
    (workdir / "hello.yaml").write_text(
        "turns:\n  - expect: {user_text: hello}\n    text: Hi there!\n", encoding="utf-8"
    )
    code, out, err = cli("run", "--no-builtins", "--fake", "hello.yaml", "hello")
    assert (code, out) == (0, "Hi there!\n"), err


def test_no_api_key_is_one_clear_paragraph(cli_process: CliProcess) -> None:
    done = cli_process("run", "hello")
    assert done.returncode == 2
    assert done.stdout == ""
    message = done.stderr.strip()
    assert "\n" not in message
    for needle in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "toolnexus-agent demo", "--fake"):
        assert needle in message


def test_usage_errors_name_the_path_and_the_reason(cli: Cli, workdir: Path) -> None:
    (workdir / "mcp.json").write_text("{not json", encoding="utf-8")
    (workdir / "afile").write_text("", encoding="utf-8")
    (workdir / "empty").mkdir()
    code, _, err = cli("run", "--skills", "no/such/dir", "hi")
    assert (code, err) == (
        2,
        "--skills: cannot read the skills directory no/such/dir: No such file or directory\n",
    )
    code, _, err = cli("tools", "--skills", "empty", "--skills", "afile")
    assert (code, err) == (
        2,
        "--skills: cannot read the skills directory afile: Not a directory\n",
    )
    code, _, err = cli("tools", "--mcp", "mcp.json")
    assert code == 2 and err.startswith("--mcp: ") and "mcp.json" in err, err
    code, _, err = cli("tools", "--tools", "clitools:NUMBER")
    assert (code, err) == (2, "--tools clitools:NUMBER: int is not a Tool or a function\n")
    code, _, err = cli("tools", "--tools", "clitools")
    assert code == 2 and "expected MODULE:ATTR" in err
    code, _, err = cli("tools", "--tools", "nosuchmodule:x")
    assert code == 2 and "cannot import nosuchmodule" in err
    code, _, err = cli("run", "--session", "s", "hi")
    assert (code, err) == (
        2,
        "--session needs --store PATH (the SQLite file that keeps the session)\n",
    )
    code, _, err = cli("run", "--fake", "missing.yaml", "hi")
    assert (code, err) == (2, "--fake: cannot read missing.yaml: No such file or directory\n")
    (workdir / "broken.yaml").write_text("turns: [{text: a ? b}", encoding="utf-8")
    code, _, err = cli("run", "--fake", "broken.yaml", "hi")
    assert code == 2 and err.startswith("--fake: broken.yaml:1:18: expected "), err
    code, _, err = cli("run", "--system", "@nope.txt", "hi")
    assert (code, err) == (2, "--system: cannot read nope.txt: No such file or directory\n")


def test_mcp_tools_are_offered_and_called(cli: Cli, workdir: Path) -> None:
    server_script = Path(__file__).parents[1] / "toolnexus" / "mcp_servers" / "demo_server.py"
    config = {"mcpServers": {"calc": {"command": [sys.executable, str(server_script), "stdio"]}}}
    (workdir / "mcp.json").write_text(json.dumps(config), encoding="utf-8")
    fake = FakeGemini([function_call("calc_add", {"a": 2, "b": 3}), "2 + 3 = 5"])
    with fake.serve() as server:
        code, out, err = cli(
            "run",
            "--no-builtins",
            "--mcp",
            "mcp.json",
            "--disable",
            "calc_fail",
            "Add 2 and 3",
            server=server,
        )
    assert code == 0, err
    assert out == "2 + 3 = 5\n"
    assert '<- calc_add: {"sum": 5}' in err
    declared = fake.requests[0].declared_functions
    assert "calc_add" in declared and "calc_fail" not in declared


def test_prompt_from_stdin(cli: Cli) -> None:
    fake = FakeGemini(["Read you."])
    with fake.serve() as server:
        code, out, err = cli(
            "run", "--no-builtins", "-", server=server, stdin="a prompt\nover two lines\n"
        )
    assert (code, out) == (0, "Read you.\n"), err
    assert fake.requests[0].contents[0]["parts"][0]["text"] == "a prompt\nover two lines\n"


def test_ctrl_c_stops_a_run_with_exit_code_130(workdir: Path) -> None:
    hold = Hold()
    fake = FakeGemini([hold.reply("Too late.")])
    with fake.serve() as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent", "run", "--no-builtins", "Slow?"],
            cwd=workdir,
            env=cli_env(server),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while not fake.requests:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        hold.release()
    assert proc.returncode == 130, err
    assert err.endswith("\ninterrupted\n") and "Traceback" not in err
    assert out == ""


def test_a_model_call_retry_is_shown_before_the_answer(cli: Cli) -> None:
    fake = FakeGemini([error(503, "UNAVAILABLE", retry_delay=0.01), "Fine."])
    with fake.serve() as server:
        code, out, err = cli("run", *TOOLS, "Hello?", server=server)
    assert code == 0, err
    assert out == "Fine.\n"
    assert "(model call failed: UNAVAILABLE; retrying after 0.0 s)\n" in err
    assert len(fake.requests) == 2


def test_a_usage_error_is_a_configuration_error_of_the_agent() -> None:
    from agent import AgentError, ConfigurationError
    from agent.cli import EXIT_USAGE, CliError

    assert issubclass(CliError, ConfigurationError) and issubclass(CliError, AgentError)
    assert CliError("--x: bad").code == EXIT_USAGE


def test_run_output_schema_file_and_model_carry_output(cli: Cli, workdir: Path) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    (workdir / "schema.json").write_text(json.dumps(schema), "utf-8")
    (workdir / "outmodels.py").write_text(
        "import pydantic\n\nclass City(pydantic.BaseModel):\n    city: str\n", "utf-8"
    )
    for spec in ("schema.json", "outmodels:City"):
        fake = FakeGemini(['{"city": "Paris"}'])
        with fake.serve() as server:
            code, out, err = cli(
                "run",
                "--json",
                "--no-builtins",
                "--output-schema",
                spec,
                "Capital of France?",
                server=server,
            )
        assert code == 0, err
        assert json.loads(out)["output"] == {"city": "Paris"}
        assert fake.requests[0].body["generationConfig"]["responseJsonSchema"]["required"] == [
            "city"
        ]
    code, _, err = cli("run", "--output-schema", "nomodule:X", "hi")
    assert code == 2 and "cannot import nomodule" in err


def test_run_file_sends_the_image_with_the_prompt(cli: Cli, workdir: Path) -> None:
    (workdir / "dot.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    fake = FakeGemini(["A dot."])
    with fake.serve() as server:
        code, out, err = cli("run", "--no-builtins", "--file", "dot.png", "What?", server=server)
    assert (code, out) == (0, "A dot.\n"), err
    parts = fake.requests[0].contents[0]["parts"]
    assert parts[0] == {"text": "What?"}
    assert parts[1]["inlineData"]["mimeType"] == "image/png"
    code, _, err = cli("run", "--file", "missing.png", "What?")
    assert (code, err.strip()) == (2, "--file: no such file: missing.png")


def test_run_without_network_ends_in_one_line_and_exit_1(cli: Cli, monkeypatch) -> None:
    # The real retry policy waits (about 15 s in all) between the five attempts.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-a-secret")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", f"http://127.0.0.1:{closed.getsockname()[1]}")
        code, out, err = cli("run", "--no-builtins", "hi")
    assert (code, out) == (1, "")
    *retries, last = err.splitlines()
    assert len(retries) == 4
    assert all(r.startswith("(model call failed: NETWORK_ERROR; retrying after ") for r in retries)
    assert last.startswith("error: Gemini call failed after 5 attempts: NETWORK_ERROR: could not ")
    assert "check the network connection" in last


def _unusable_stores(workdir: Path) -> dict[str, str]:
    """Store paths that cannot be session stores -> the problem the CLI must name."""
    good = workdir / "good.db"
    with sqlite3.connect(good) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 50)
    conn.close()
    (workdir / "garbage.db").write_bytes(bytes(range(256)) * 20)
    (workdir / "truncated.db").write_bytes(good.read_bytes()[:3000])
    (workdir / "folder.db").mkdir()
    os.mkfifo(workdir / "fifo.db")
    return {
        "garbage.db": "is not a session store, or is damaged (file is not a database)",
        "truncated.db": "is not a session store, or is damaged (database disk image is malformed)",
        "folder.db": "is a folder, not a file",
        "fifo.db": "is not a regular file (a FIFO, a device or a socket)",
        "missing/s.db": "the folder missing does not exist; create it",
    }


def test_an_unusable_session_store_is_one_line_exit_2_and_left_untouched(
    cli: Cli, workdir: Path
) -> None:
    cases = _unusable_stores(workdir)
    before = {
        p.name: p.read_bytes() for p in workdir.glob("*.db") if p.is_file() and p.name != "fifo.db"
    }
    fake = FakeGemini([])
    with fake.serve() as server:
        for path, problem in cases.items():
            code, out, err = cli(
                "run", *TOOLS, "--session", "s", "--store", path, "hi", server=server
            )
            assert (code, out) == (2, ""), (path, err)
            assert err.startswith(f"run: session store {path}: {problem}"), err
            assert len(err.splitlines()) == 1, err
    assert fake.requests == []
    after = {
        p.name: p.read_bytes() for p in workdir.glob("*.db") if p.is_file() and p.name != "fifo.db"
    }
    assert after == before  # nothing overwritten, no journal files left beside them
    assert sorted(p.name for p in workdir.iterdir() if "-" in p.name) == []


def test_builtin_tool_flag_offers_code_execution_and_shows_its_output(cli: Cli) -> None:
    from agent.testing import code_execution

    fake = FakeGemini([reply(*code_execution("print(6 * 7)", "42\n"), "It is 42.")])
    with fake.serve() as server:
        code, out, err = cli(
            "run",
            *TOOLS,
            "--model",
            "gemini-3-flash-preview",
            "--builtin-tool",
            "code_execution",
            "Six times seven?",
            server=server,
        )
    assert code == 0, err
    assert out == "It is 42.\n"
    assert "(code execution) python:\n   print(6 * 7)" in err
    assert "(code output, OUTCOME_OK) 42" in err
    tools = fake.requests[0].body["tools"]
    assert {"codeExecution": {}} in tools and any("functionDeclarations" in t for t in tools)


def test_an_unknown_builtin_tool_is_a_usage_error(cli: Cli) -> None:
    fake = FakeGemini(["never sent"])
    with fake.serve() as server:
        code, _, err = cli("run", *TOOLS, "--builtin-tool", "teleport", "hi", server=server)
    assert code == 2 and "teleport" in err
    assert fake.requests == []


def test_a_failed_file_upload_is_one_line_without_the_key(
    cli: Cli, workdir: Path, monkeypatch
) -> None:
    secret = "AIzaUPLOAD-secret-key-0123456789"
    (workdir / "big.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"x" * 64)
    monkeypatch.setattr(media, "INLINE_LIMIT", 10)  # so the file goes through the Files API
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
    echo = {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": f"key {secret} bad"}}
    with respx.mock() as router:
        upload = router.post(url__regex=r".*/upload/v1\w*/files$")
        upload.mock(return_value=httpx.Response(400, json=echo))
        code, out, err = cli("run", "--no-builtins", "--file", "big.png", "What?")
    assert upload.calls[0].request.headers["x-goog-api-key"] == secret
    assert (code, out) == (1, "")
    assert err.startswith("run: uploading prompt part 1 to the Files API failed: 400"), err
    assert len(err.splitlines()) == 1, err
    assert secret not in err and "***" in err


def _damaged_stores(workdir: Path) -> dict[str, str]:
    """Session stores whose rows are damaged -> the start of the problem the CLI must name."""

    async def make(path: Path) -> None:
        async with SqliteStore(path) as store:
            await store.save("s", Transcript([{"role": "user", "parts": [{"text": "hi"}]}]))

    damage = {
        "not-json.db": ("UPDATE sessions SET data = '{not json'", "session 's': the transcript "),
        "deep.db": (
            'UPDATE sessions SET data = \'{"version": 1, "contents": '
            + "[" * 100_000
            + "]" * 100_000
            + "}'",
            "session 's': the transcript is nested too deeply to read",
        ),
        "pid.db": (
            "INSERT INTO leases VALUES ('s', 'o', 'h', 'not-a-pid', 1e12)",
            "the lease of session 's' is damaged",
        ),
        "expiry.db": (
            "INSERT INTO leases VALUES ('s', 'o', 'h', 12, 'soon')",
            "the lease of session 's' is damaged",
        ),
    }
    for name, (sql, _) in damage.items():
        asyncio.run(make(workdir / name))
        with sqlite3.connect(workdir / name) as conn:
            conn.execute(sql)
        conn.close()
    return {name: problem for name, (_, problem) in damage.items()}


def _rows(path: Path) -> list[list[object]]:
    with sqlite3.connect(path) as conn:
        rows = [conn.execute(f"SELECT * FROM {t}").fetchall() for t in ("sessions", "leases")]
    conn.close()
    return rows


def test_a_damaged_session_store_ends_run_and_chat_in_one_line_exit_2(
    cli: Cli, workdir: Path
) -> None:
    cases = _damaged_stores(workdir)
    before = {name: _rows(workdir / name) for name in cases}
    fake = FakeGemini([])
    with fake.serve() as server:
        for name, problem in cases.items():
            code, out, err = cli(
                "run", *TOOLS, "--session", "s", "--store", name, "hi", server=server
            )
            assert (code, out) == (2, ""), (name, err[-500:])
            assert err.startswith(f"run: session store {name}: {problem}"), err[:300]
            assert len(err.splitlines()) == 1, err[-500:]
            code, _, err = cli(
                "chat", *TOOLS, "--session", "s", "--store", name, server=server, stdin="hi\n"
            )
            assert code == 2, (name, err[-500:])
            assert err.splitlines()[-1].startswith(f"chat: session store {name}: {problem}")
            assert "Traceback" not in err
    assert fake.requests == []
    assert {name: _rows(workdir / name) for name in cases} == before


def test_a_store_file_that_cannot_be_written_ends_run_in_one_line_exit_2(
    cli: Cli, workdir: Path
) -> None:
    fake = FakeGemini(["Hello."])
    with fake.serve() as server:
        code, _, err = cli("run", *TOOLS, "--session", "s", "--store", "s.db", "hi", server=server)
        assert code == 0, err
        before = (workdir / "s.db").read_bytes()
        made = subprocess.run(["chattr", "+i", "s.db"], cwd=workdir, capture_output=True)
        if made.returncode != 0:
            pytest.skip("chattr +i is not available here (needs root and a file system with it)")
        try:
            code, out, err = cli(
                "run", *TOOLS, "--session", "s", "--store", "s.db", "again", server=server
            )
        finally:
            subprocess.run(["chattr", "-i", "s.db"], cwd=workdir, check=True)
    assert (code, out) == (2, "")
    assert err == (
        "run: session store s.db: is read-only; make it (and its folder) writable, or choose "
        "another path\n"
    )
    assert (workdir / "s.db").read_bytes() == before
    assert len(fake.requests) == 1


def test_a_reply_quoting_the_api_key_is_scrubbed_on_every_output_path(
    cli: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "AIzaQUOTED-key-0123456789"
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    shown: list[str] = []
    for command in (("run", *TOOLS, "hi"), ("run", "--json", *TOOLS, "hi"), ("chat", *TOOLS)):
        fake = FakeGemini(  # the fake checks the key: the run really used it
            [
                function_call("get_weather", {"city": secret}),
                reply(f"Your key is {secret[:8]}", f"{secret[8:]}, as asked."),
            ],
            api_key=secret,
        )
        with fake.serve() as server:
            monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
            code, out, err = cli(*command, stdin="hi\n")
        assert code == 0, err
        assert secret not in out + err, command
        shown.append(out + err)
    assert "Your key is ***, as asked." in shown[0]
    assert '-> get_weather {"city": "***"}' in shown[0]
    assert "<- get_weather: sunny in ***" in shown[0]
    assert json.loads(shown[1])["text"] == "Your key is ***, as asked."
    assert "Your key is ***, as asked." in shown[2]
    asking = [function_call("question", {"questions": [{"question": f"Is {secret} it?"}]})]
    fake = FakeGemini(asking, api_key=secret)
    with fake.serve() as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        code, out, err = cli("run", "hi")  # the built-in `question` tool asks
    assert code == 3, err
    assert "Is *** it?" in err and secret not in err


def test_store_without_session_is_refused_as_session_without_store_is(cli: Cli) -> None:
    fake = FakeGemini(["never sent"])
    with fake.serve() as server:
        code, out, err = cli("run", *TOOLS, "--store", "chats.db", "hi", server=server)
    assert (code, out) == (2, "")
    assert err == (
        "--store needs --session ID (the conversation to keep in it); without --session "
        "nothing would be stored\n"
    )
    assert fake.requests == []


def test_builtin_tool_beside_function_tools_on_gemini_2_is_refused_before_sending(
    cli: Cli,
) -> None:
    # The docs' own `run --builtin-tool google_search` on the default model (2.5): Gemini
    # answers every such request 400 "Tool use with function calling is unsupported".
    fake = FakeGemini(["never sent"])
    with fake.serve() as server:
        code, out, err = cli("run", "--builtin-tool", "google_search", "News?", server=server)
        assert (code, out) == (2, "")
        assert len(err.splitlines()) == 1, err
        assert "--no-builtins" in err and "Gemini 3" in err and "google_search" in err
        assert fake.requests == []
        code, _, err = cli(
            "run", "--no-builtins", "--builtin-tool", "google_search", "News?", server=server
        )
    assert code == 0, err
    assert fake.requests[0].body["tools"] == [{"googleSearch": {}}]
