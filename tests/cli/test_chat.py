"""``toolnexus-agent chat``: lines on stdin in process, and Ctrl-C on a real terminal."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from agent.testing import FakeGemini, error, function_call
from agent.testing._server import FakeServer
from tests.cli.conftest import Cli, Hold, cli_env


class Terminal:
    """A child process on a pseudo-terminal: type lines, wait for text to appear."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agent", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env={**env, "TERM": "dumb"},
            start_new_session=True,
        )
        os.close(slave)
        self.seen = ""

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def expect(self, needle: str, timeout: float = 30) -> str:
        """Read until ``needle`` has appeared after what earlier calls consumed."""
        deadline = time.monotonic() + timeout
        while needle not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"{needle!r} did not appear; the terminal shows:\n{self.seen}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                assert chunk, f"the chat ended before {needle!r}; it showed:\n{self.seen}"
                self.seen += chunk.decode(errors="replace")
        before, _, self.seen = self.seen.partition(needle)
        return before + needle

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=30)
        finally:
            os.close(self.master)


@contextmanager
def terminal(server: FakeServer, cwd: Path, *args: str) -> Iterator[Terminal]:
    """Run ``python -m agent ARGS`` on a terminal; kill it if the test leaves it running."""
    term = Terminal(list(args), cwd, cli_env(server))
    try:
        yield term
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
            term.close()


def chat(server: FakeServer, cwd: Path, *flags: str) -> AbstractContextManager[Terminal]:
    return terminal(server, cwd, "chat", "--no-builtins", *flags)


def test_chat_remembers_an_earlier_turn_and_ends_with_the_input(cli: Cli) -> None:
    fake = FakeGemini(["Nice to meet you, Ada.", "Your name is Ada."])
    with fake.serve() as server:
        code, out, err = cli(
            "chat", "--no-builtins", server=server, stdin="My name is Ada.\nWhat is my name?\n"
        )
    assert code == 0, err
    assert out == "you> Nice to meet you, Ada.\nyou> Your name is Ada.\nyou> \n"
    assert "Ctrl-D or /exit quits" in err
    texts = [part["text"] for content in fake.requests[1].contents for part in content["parts"]]
    assert texts == ["My name is Ada.", "Nice to meet you, Ada.", "What is my name?"]
    assert [c["role"] for c in fake.requests[1].contents] == ["user", "model", "user"]


def test_ctrl_c_cancels_the_turn_not_the_chat(tmp_path: Path) -> None:
    hold = Hold()
    fake = FakeGemini(["First answer.", hold.reply("Too late."), "Third answer."])
    with fake.serve() as server, chat(server, tmp_path) as term:
        term.expect("you> ")
        term.type("one\n")
        term.expect("First answer.")
        term.expect("you> ")
        term.type("two\n")
        deadline = time.monotonic() + 30
        while len(fake.requests) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        term.proc.send_signal(signal.SIGINT)
        term.expect("(turn cancelled)")
        hold.release()
        term.expect("you> ")
        term.type("three\n")
        term.expect("Third answer.")
        term.expect("you> ")
        term.type("/exit\n")
        assert term.close() == 0
    texts = [part["text"] for content in fake.requests[2].contents for part in content["parts"]]
    assert texts == ["one", "First answer.", "three"], "the cancelled turn is not kept"


def test_run_asks_the_question_tool_on_the_terminal(tmp_path: Path) -> None:
    ask = function_call(
        "question", {"questions": [{"question": "Which colour?", "options": ["red", "blue"]}]}
    )
    fake = FakeGemini([ask, "Blue it is."])
    with fake.serve() as server, terminal(server, tmp_path, "run", "Paint it") as term:
        term.expect("? Which colour? (options: red, blue)")
        term.type("blue\n")
        term.expect("Blue it is.")
        assert term.close() == 0
    response = fake.requests[1].function_responses[0]
    assert (response["name"], response["response"]["output"]) == ("question", '"blue"')


def test_chat_session_without_a_store_is_refused_as_run_refuses_it(cli: Cli) -> None:
    code, out, err = cli("chat", "--no-builtins", "--session", "s1", stdin="hi\n")
    assert (code, out) == (2, "")
    assert err == "--session needs --store PATH (the SQLite file that keeps the session)\n"


def test_chat_exits_with_the_code_of_its_last_turn(cli: Cli) -> None:
    fake = FakeGemini(["Fine.", error(400, "INVALID_ARGUMENT", "Bad thing.")])
    with fake.serve() as server:
        code, _, err = cli("chat", "--no-builtins", server=server, stdin="one\ntwo\n")
    assert code == 1, err
    assert "error: Gemini call failed after 1 attempt: 400 INVALID_ARGUMENT: Bad thing." in err
    fake = FakeGemini([error(400, "INVALID_ARGUMENT", "Bad thing."), "Fine."])
    with fake.serve() as server:
        code, _, err = cli("chat", "--no-builtins", server=server, stdin="one\ntwo\n")
    assert code == 0, err
