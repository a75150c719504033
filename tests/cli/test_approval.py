"""``--approval`` in ``run``, ``chat`` and ``batch``: the y/n/e prompt, modes and refusals."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from agent.testing import FakeGemini, function_call
from tests.cli.conftest import Cli, cli_env

WRITE = function_call("write", {"path": "notes.txt", "content": "hello"})
BUILTINS = ("--disable", "webfetch")


def test_run_asks_before_write_and_y_approves(cli: Cli, workdir: Path) -> None:
    fake = FakeGemini([WRITE, "Written."])
    with fake.serve() as server:
        code, _out, err = cli(
            "run", *BUILTINS, "--answer", "approval=y", "Write notes", server=server
        )
    assert code == 0, err
    assert '? Allow write {"path": "notes.txt", "content": "hello"}? [y]es' in err
    assert (workdir / "notes.txt").read_text() == "hello"


def test_run_n_with_a_reason_refuses_and_the_model_reads_it(cli: Cli, workdir: Path) -> None:
    fake = FakeGemini([WRITE, "OK, I will not."])
    with fake.serve() as server:
        code, _out, err = cli(
            "run", *BUILTINS, "--answer", "approval=n not now", "Write", server=server
        )
    assert code == 0, err
    assert not (workdir / "notes.txt").exists()
    sent = fake.requests[1].function_responses[0]["response"]
    assert sent["isError"] and "not now" in sent["output"]


def test_run_e_approves_with_edited_arguments(cli: Cli, workdir: Path) -> None:
    edit = 'approval=e {"path": "other.txt", "content": "edited"}'
    fake = FakeGemini([WRITE, "Written."])
    with fake.serve() as server:
        code, _out, err = cli("run", *BUILTINS, "--answer", edit, "Write", server=server)
    assert code == 0, err
    assert (workdir / "other.txt").read_text() == "edited"
    assert not (workdir / "notes.txt").exists()


def test_modes_edits_and_never_ask(cli: Cli, workdir: Path) -> None:
    script = [WRITE, function_call("bash", {"command": "echo hi"}), "Done."]
    fake = FakeGemini(script)
    with fake.serve() as server:
        code, out, err = cli("run", "--json", "--approval", "edits", "Go", server=server)
    assert code == 3, err  # write ran; bash waits for approval (no terminal, no --answer)
    result = json.loads(out)
    assert result["pending"]["data"] == {"tool": "bash", "args": {"command": "echo hi"}}
    assert (workdir / "notes.txt").read_text() == "hello"

    (workdir / "notes.txt").unlink()
    fake = FakeGemini(script)
    with fake.serve() as server:
        code, out, err = cli("run", "--approval", "never-ask", "Go", server=server)
    assert code == 0, err
    assert "Allow" not in err
    assert (workdir / "notes.txt").read_text() == "hello"


def test_pending_approval_resumes_with_answer_from_a_session(cli: Cli, workdir: Path) -> None:
    fake = FakeGemini([WRITE, "Written at last."])
    with fake.serve() as server:
        code, _, err = cli("run", "--session", "s", "--store", "s.db", "Write", server=server)
        assert code == 3, err
        assert "Allow write" in err
        assert not (workdir / "notes.txt").exists()
        code, out, err = cli(
            "run", "--session", "s", "--store", "s.db", "--answer", "approval=y", server=server
        )
    assert code == 0, err
    assert out == "Written at last.\n"
    assert (workdir / "notes.txt").read_text() == "hello"


class Terminal:
    """``python -m agent ARGS`` with a pseudo-terminal as stdin and stderr."""

    def __init__(
        self, workdir: Path, env: dict[str, str], *args: str, all_on_it: bool = False
    ) -> None:
        self.master, slave = os.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agent", *args],
            cwd=workdir,
            env=env,
            stdin=slave,
            stderr=slave,
            stdout=slave if all_on_it else subprocess.PIPE,
        )
        os.close(slave)
        self.shown = ""

    def wait_for(self, text: str) -> None:
        """Read the terminal until ``text`` has been shown."""
        deadline = time.monotonic() + 60
        while text not in self.shown:
            assert time.monotonic() < deadline, f"never shown: {text!r} in {self.shown!r}"
            if select.select([self.master], [], [], 0.1)[0]:
                try:
                    self.shown += os.read(self.master, 65536).decode()
                except OSError:
                    break

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def finish(self) -> tuple[int, str]:
        out, _ = self.process.communicate(timeout=60)
        os.close(self.master)
        return self.process.returncode, (out or b"").decode()


def test_run_prompt_on_a_terminal_edit_retries_until_valid(workdir: Path) -> None:
    fake = FakeGemini([WRITE, "Written."])
    with fake.serve() as server:
        term = Terminal(workdir, cli_env(server), "run", *BUILTINS, "Write notes")
        term.wait_for("[e]dit")
        term.type("e")
        term.wait_for("as JSON")
        term.type('{"path": 3}')
        term.wait_for("cannot use these arguments")
        term.type('{"path": "typed.txt", "content": "by hand"}')
        code, out = term.finish()
    assert code == 0, term.shown
    assert out == "Written.\n"
    assert (workdir / "typed.txt").read_text() == "by hand"
    assert "`path`" in term.shown


def test_chat_prompt_on_a_terminal(workdir: Path) -> None:
    fake = FakeGemini([WRITE, "Refused, fine.", "Bye."])
    with fake.serve() as server:
        term = Terminal(workdir, cli_env(server), "chat", *BUILTINS, all_on_it=True)
        term.wait_for("you> ")
        term.type("write my notes")
        term.wait_for("[e]dit")
        term.type("n keep it read-only")
        term.wait_for("Refused, fine.")
        term.wait_for("you> ")
        term.type("/exit")
        code, _ = term.finish()
    assert code == 0, term.shown
    assert not (workdir / "notes.txt").exists()
    assert "keep it read-only" in fake.requests[1].function_responses[0]["response"]["output"]


def test_batch_refuses_what_would_ask_unless_the_task_allows_it(cli: Cli, workdir: Path) -> None:
    tasks = [
        {"id": "locked", "prompt": "write a.txt"},
        {"id": "open", "prompt": "write b.txt", "allow": ["write"]},
    ]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}), "utf-8")

    def model(body: dict[str, Any]) -> Any:
        prompt = body["contents"][0]["parts"][0]["text"]
        last = body["contents"][-1]["parts"][0]
        if "functionResponse" in last:
            return "ok" if not last["functionResponse"]["response"]["isError"] else "refused"
        return function_call("write", {"path": prompt.split()[-1], "content": "x"})

    fake = FakeGemini(model)
    args = ("batch", "tasks.yaml", "--out", "o.jsonl", "--concurrency", "1", *BUILTINS)
    with fake.serve() as server:
        code, _, err = cli(*args, server=server)
    assert code == 0, err
    records = {r["id"]: r for r in map(json.loads, (workdir / "o.jsonl").read_text().splitlines())}
    assert records["locked"]["denied"] == ["write"] and records["locked"]["text"] == "refused"
    assert records["open"]["denied"] == [] and records["open"]["text"] == "ok"
    assert not (workdir / "a.txt").exists() and (workdir / "b.txt").exists()
    assert "locked completed" in err and "refused without approval: write" in err
    refusal = [
        r.function_responses[0]["response"]["output"] for r in fake.requests if r.function_responses
    ]
    assert any("allow: [write]" in text for text in refusal)


def test_a_reply_that_is_not_y_n_or_e_is_asked_again(cli: Cli, workdir: Path) -> None:
    # Enter or `ok` used to refuse the call silently; now the question comes again.
    fake = FakeGemini([WRITE, "Written."])
    answers = ("--answer", "approval=", "--answer", "approval=ok", "--answer", "approval=y")
    with fake.serve() as server:
        code, _out, err = cli("run", *BUILTINS, *answers, "Write notes", server=server)
    assert code == 0, err
    assert err.count("? Allow write") == 3
    assert "'ok' is not an answer: type y to approve, n (and a reason) to refuse" in err
    assert (workdir / "notes.txt").read_text() == "hello"
    assert not fake.requests[1].function_responses[0]["response"]["isError"]


def test_no_y_n_or_e_answer_refuses(cli: Cli, workdir: Path) -> None:
    fake = FakeGemini([WRITE, "Not written."])
    with fake.serve() as server:
        code, _out, err = cli(
            "run", *BUILTINS, "--answer", "approval=ok", "Write notes", server=server
        )
    assert code == 0, err
    assert not (workdir / "notes.txt").exists()
    sent = fake.requests[1].function_responses[0]["response"]
    assert sent["isError"] and "no answer was given" in sent["output"]


BASH = function_call("bash", {"command": "touch ran.txt"})
QUESTION = function_call("question", {"questions": [{"question": "Go ahead?"}]})


def test_an_answer_meant_for_a_question_never_approves_a_call(cli: Cli, workdir: Path) -> None:
    # The model runs bash before it asks: `--answer yes` is for the question only.
    fake = FakeGemini([BASH, QUESTION, "Done."])
    with fake.serve() as server:
        code, _out, err = cli("run", *BUILTINS, "--answer", "yes", "Go", server=server)
    assert code == 0, err
    assert not (workdir / "ran.txt").exists()
    refused = fake.requests[1].function_responses[0]["response"]
    assert refused["isError"] and "no answer was given" in refused["output"]
    assert fake.requests[2].function_responses[0]["response"]["output"] == '"yes"'


def test_an_approval_answer_never_answers_a_question(cli: Cli, workdir: Path) -> None:
    fake = FakeGemini([QUESTION, BASH, "Done."])
    answers = ("--answer", "approval=y", "--answer", "Sure")
    with fake.serve() as server:
        code, _out, err = cli("run", *BUILTINS, *answers, "Go", server=server)
    assert code == 0, err
    assert fake.requests[1].function_responses[0]["response"]["output"] == '"Sure"'
    assert (workdir / "ran.txt").exists()


def test_an_answer_bound_to_an_id_answers_only_that_request(cli: Cli, workdir: Path) -> None:
    fake = FakeGemini([BASH, "Not run.", BASH, "Ran it."])

    def resume(session: str, answer: str | None) -> tuple[int, str, str]:
        store = ("--session", session, "--store", "s.db")
        code, _, err = cli("run", *BUILTINS, *store, "Go", server=server)
        assert code == 3, err
        (hint,) = [line for line in err.splitlines() if line.startswith("answer with:")]
        bound = hint.rsplit("--answer ", 1)[1]
        assert bound.startswith("approval:approval-") and bound.endswith("=y")
        return cli("run", *BUILTINS, *store, "--answer", answer or bound, server=server)

    with fake.serve() as server:
        code, out, err = resume("a", "approval:approval-0000=y")  # another request's id
        assert (code, out) == (0, "Not run.\n"), err
        assert not (workdir / "ran.txt").exists()
        declined = fake.requests[1].function_responses[0]["response"]
        assert declined["isError"] and "no answer was given" in declined["output"]
        code, out, err = resume("b", None)  # the id the pending run printed
    assert (code, out) == (0, "Ran it.\n"), err
    assert (workdir / "ran.txt").exists()


def test_an_answer_bound_to_an_empty_id_is_a_usage_error(cli: Cli) -> None:
    code, _out, err = cli("run", "--answer", "approval:=y", "Go")
    assert code == 2
    assert "--answer 'approval:=y': give the request id after 'approval:'" in err
