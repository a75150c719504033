"""``toolnexus-agent batch``: concurrency, per-task overrides, failures, kill and resume."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.cli import main
from agent.testing import FakeGemini, delay, error, function_call
from agent.testing._replies import ReplyLike
from tests.cli.conftest import Cli, Hold, cli_env, wait_for_request_handlers


def _prompt(body: dict[str, Any]) -> str:
    return str(body["contents"][0]["parts"][0]["text"])


def _answer_by_prompt(pause: float = 0.0) -> Any:
    def model(body: dict[str, Any]) -> ReplyLike:
        prompt = _prompt(body)
        if prompt.startswith("fail"):
            return error(400, "INVALID_ARGUMENT", f"cannot do {prompt}")
        return delay(pause, f"answer to {prompt}") if pause else f"answer to {prompt}"

    return model


def _write_tasks(path: Path, count: int) -> None:
    tasks = [{"id": f"t{i:02d}", "prompt": f"task {i}"} for i in range(count)]
    path.write_text(yaml.safe_dump({"defaults": {"max_turns": 3}, "tasks": tasks}), "utf-8")


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _prompts(fake: FakeGemini) -> Counter[str]:
    return Counter(_prompt(request.body) for request in fake.requests)


def _batch(out: str, *more: str) -> tuple[str, ...]:
    """The arguments ``batch tasks.yaml --out OUT --no-builtins MORE...``."""
    return ("batch", "tasks.yaml", "--out", out, "--no-builtins", *more)


def test_twenty_tasks_at_concurrency_four_complete(cli: Cli, workdir: Path) -> None:
    _write_tasks(workdir / "tasks.yaml", 20)
    fake = FakeGemini(_answer_by_prompt(0.05))
    with fake.serve() as server:
        code, _, err = cli(*_batch("out.jsonl", "--concurrency", "4"), server=server)
        again_code, _, again_err = cli(*_batch("out.jsonl"), server=server)
    assert code == 0, err
    records = _records(workdir / "out.jsonl")
    assert sorted(r["id"] for r in records) == [f"t{i:02d}" for i in range(20)]
    for record in records:
        number = int(record["id"][1:])
        assert record["status"] == "completed"
        assert record["text"] == f"answer to task {number}"
        assert record["turns"] == 1 and record["usage"]["total"] > 0
        assert record["duration"] >= 0.05
    assert "[20/20]" in err
    assert err.endswith("20 tasks: 20 completed; results in out.jsonl\n")
    assert _prompts(fake) == Counter(f"task {i}" for i in range(20))
    assert again_code == 0, again_err
    assert "20 of 20 tasks are already in out.jsonl; skipping them" in again_err
    assert len(fake.requests) == 20


def test_killed_batch_resumes_without_rerunning_finished_tasks(workdir: Path) -> None:
    _write_tasks(workdir / "tasks.yaml", 20)
    out = workdir / "out.jsonl"
    # The first eight tasks answer at once and the rest are held, so the batch is surely
    # still running when it is killed; the resumed run gets answers at once.
    hold = Hold()
    slow = [True]

    def model(body: dict[str, Any]) -> ReplyLike:
        prompt = _prompt(body)
        if slow[0] and int(prompt.split()[-1]) >= 8:
            hold.wait()
        return delay(0.01, f"answer to {prompt}")

    fake = FakeGemini(model)
    command = [sys.executable, "-m", "agent", *_batch("out.jsonl", "--concurrency", "4")]
    with fake.serve() as server:
        env = cli_env(server)
        first = subprocess.Popen(command, cwd=workdir, env=env, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not out.exists() or out.read_text("utf-8").count("\n") < 5:
                assert first.poll() is None, "the batch ended before it could be killed"
                assert time.monotonic() < deadline
                time.sleep(0.01)
        finally:
            first.kill()
            first.wait()
        slow[0] = False
        hold.release()
        # The killed run's requests (held, or cut off mid-body) finish being recorded
        # before the count of what the resumed run sends starts.
        wait_for_request_handlers()
        before = _records(out)
        assert 5 <= len(before) < 20
        # A crash in the middle of a write leaves a partial line: resume drops it.
        with out.open("a", encoding="utf-8") as file:
            file.write('{"id": "t19", "status": "compl')
        requests_before = len(fake.requests)
        second = subprocess.run(
            command, cwd=workdir, env=env, capture_output=True, text=True, timeout=60
        )
    assert second.returncode == 0, second.stderr
    assert "dropped an unfinished last line" in second.stderr
    assert f"{len(before)} of 20 tasks are already in out.jsonl" in second.stderr
    after = _records(out)
    assert after[: len(before)] == before
    assert sorted(r["id"] for r in after) == [f"t{i:02d}" for i in range(20)]
    assert all(r["status"] == "completed" for r in after)
    resumed = Counter(_prompt(r.body) for r in fake.requests[requests_before:])
    finished_first = {f"task {int(r['id'][1:])}" for r in before}
    assert not finished_first & set(resumed), "a finished task was run again"
    assert len(resumed) == 20 - len(before)


@pytest.mark.filterwarnings("ignore::agent.UnknownModelWarning")  # a made-up model name
def test_failed_task_is_recorded_and_the_batch_goes_on(cli: Cli, workdir: Path) -> None:
    (workdir / "tasks.yaml").write_text(
        yaml.safe_dump(
            [
                {"id": "ok", "prompt": "fine", "model": "gemini-other", "system": "Terse."},
                {"id": "bad", "prompt": "fail please"},
                {"id": 3, "prompt": "also fine", "max_turns": 1},
            ]
        ),
        "utf-8",
    )
    fake = FakeGemini(_answer_by_prompt(), extra_models=["gemini-other"])
    with fake.serve() as server:
        code, _, err = cli(
            *_batch("r.jsonl", "--system", "Default system.", "--concurrency", "1"), server=server
        )
        assert code == 1, err
        records = {r["id"]: r for r in _records(workdir / "r.jsonl")}
        assert records["bad"]["status"] == "failed"
        assert "cannot do fail please" in records["bad"]["error"]
        assert records["ok"]["status"] == "completed" and records["3"]["status"] == "completed"
        assert "3 tasks: 2 completed, 1 failed; results in r.jsonl" in err
        by_prompt = {_prompt(r.body): r for r in fake.requests}
        assert by_prompt["fine"].model == "gemini-other"
        assert by_prompt["fine"].system_text == "Terse."
        assert by_prompt["also fine"].system_text == "Default system."
        # Resuming skips the recorded failure unless asked to retry it.
        code, _, err = cli(*_batch("r.jsonl"), server=server)
        assert code == 1 and len(fake.requests) == 3
        code, _, err = cli(*_batch("r.jsonl", "--retry-failed"), server=server)
    assert code == 1 and len(fake.requests) == 4
    assert [r["id"] for r in _records(workdir / "r.jsonl")].count("bad") == 2


def test_bad_task_files_are_usage_errors(cli: Cli, workdir: Path) -> None:
    cases = {
        "dup.yaml": [{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}],
        "typo.yaml": [{"id": "a", "promt": "x"}],
        "noprompt.yaml": [{"id": "a"}],
        "empty.yaml": {"tasks": []},
    }
    for name, data in cases.items():
        (workdir / name).write_text(yaml.safe_dump(data), "utf-8")
    messages = {}
    for name in [*cases, "missing.yaml"]:
        code, _, err = cli("batch", name, "--out", "o.jsonl")
        assert code == 2, (name, err)
        messages[name] = err
    assert "duplicate task id 'a' (tasks 1 and 2)" in messages["dup.yaml"]
    assert "unknown field(s) promt" in messages["typo.yaml"]
    assert "`prompt` must be non-empty text" in messages["noprompt.yaml"]
    assert "expected a non-empty list of tasks" in messages["empty.yaml"]
    assert "cannot read missing.yaml" in messages["missing.yaml"]
    assert not (workdir / "o.jsonl").exists()


def test_yaml_syntax_errors_are_one_line_with_file_line_and_column(cli: Cli, workdir: Path) -> None:
    (workdir / "bad.yaml").write_text("tasks:\n  - id: a\n    prompt: [unclosed\n", "utf-8")
    code, out, err = cli("batch", "bad.yaml", "--out", "o.jsonl")
    assert (code, out) == (2, "")
    # The parser's own words (libyaml's when installed, else PyYAML's), on one line.
    assert err in (
        "batch: bad.yaml:4:1: did not find expected ',' or ']' (while parsing a flow sequence)\n",
        "batch: bad.yaml:4:1: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence)\n",
    )
    code, _, err = cli("run", "--fake", "bad.yaml", "hi")
    assert code == 2
    assert err.splitlines() == [err.strip()] and err.startswith("--fake: bad.yaml:4:1: ")


def test_a_deeply_nested_tasks_file_is_one_line(cli: Cli, workdir: Path) -> None:
    (workdir / "deep.yaml").write_text("[" * 5000 + "]" * 5000 + "\n", "utf-8")
    code, _, err = cli("batch", "deep.yaml", "--out", "o.jsonl")
    assert code == 2
    # libyaml stops at its own depth limit, PyYAML at Python's recursion limit: one line.
    assert err in (
        "batch: deep.yaml:1:1001: exceeded maximum nesting depth (while increasing flow level)\n",
        "batch: deep.yaml: nested too deeply to read (lists or mappings inside each other)\n",
    )
    code, _, err = cli("run", "--fake", "deep.yaml", "hi")
    assert code == 2
    assert (
        err
        == "--fake: deep.yaml: nested too deeply to read (lists or mappings inside each other)\n"
    )
    assert not (workdir / "o.jsonl").exists()


def test_progress_bar_on_a_terminal(workdir: Path) -> None:
    _write_tasks(workdir / "tasks.yaml", 3)
    fake = FakeGemini(_answer_by_prompt())
    master, slave = os.openpty()
    try:
        with fake.serve() as server:
            done = subprocess.run(
                [sys.executable, "-m", "agent", *_batch("o.jsonl")],
                cwd=workdir,
                env=cli_env(server),
                stderr=slave,
                stdout=subprocess.PIPE,
                timeout=60,
            )
        os.close(slave)
        shown = b""
        while select.select([master], [], [], 0)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal is drained and its other end closed
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
    assert done.returncode == 0
    text = shown.decode()
    assert "\r[##############################] 3/3 done, 0 running, 0 not completed" in text
    assert "[1/3]" not in text, "no per-task lines on a terminal"
    assert text.endswith("3 tasks: 3 completed; results in o.jsonl\r\n")


def test_a_tasks_model_call_retries_are_shown(cli: Cli, workdir: Path) -> None:
    (workdir / "tasks.yaml").write_text(yaml.safe_dump([{"id": "flaky", "prompt": "go"}]), "utf-8")
    fake = FakeGemini([error(503, "UNAVAILABLE", retry_delay=0.01), "done"])
    with fake.serve() as server:
        code, _, err = cli(*_batch("r.jsonl"), server=server)
    assert code == 0, err
    retry = "flaky: (model call failed: UNAVAILABLE; retrying after 0.0 s)\n"
    assert retry + "[1/1] flaky completed" in err
    (record,) = _records(workdir / "r.jsonl")
    assert record["text"] == "done" and len(fake.requests) == 2


def test_batch_records_carry_the_typed_output(cli: Cli, workdir: Path) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    (workdir / "schema.json").write_text(json.dumps(schema), "utf-8")
    (workdir / "tasks.yaml").write_text(yaml.safe_dump([{"id": "a", "prompt": "n?"}]), "utf-8")
    fake = FakeGemini(['{"n": 7}'])
    with fake.serve() as server:
        code, _, err = cli(
            "batch",
            "tasks.yaml",
            "--out",
            "out.jsonl",
            "--output-schema",
            "schema.json",
            "--no-builtins",
            server=server,
        )
    assert code == 0, err
    [line] = (workdir / "out.jsonl").read_text("utf-8").splitlines()
    assert json.loads(line)["output"] == {"n": 7}


def test_batch_task_files_go_with_the_prompt(cli: Cli, workdir: Path) -> None:
    (workdir / "dot.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    tasks = [{"id": "a", "prompt": "What?", "files": ["dot.png"]}]
    (workdir / "tasks.yaml").write_text(yaml.safe_dump(tasks), "utf-8")
    fake = FakeGemini(["A dot."])
    with fake.serve() as server:
        code, _, err = cli(
            "batch", "tasks.yaml", "--out", "out.jsonl", "--no-builtins", server=server
        )
    assert code == 0, err
    parts = fake.requests[0].contents[0]["parts"]
    assert parts[1]["inlineData"]["mimeType"] == "image/png"


DEPS_MODULE = '''\
from toolnexus import ToolContext, define_tool


def for_task(task):
    return {"user": "user-" + task.id}


@define_tool
def whoami(context: ToolContext) -> str:
    """Who runs this task."""
    return context.deps["user"]
'''


def test_deps_factory_gives_each_task_its_run_data(cli: Cli, workdir: Path) -> None:
    (workdir / "batchdeps.py").write_text(DEPS_MODULE, encoding="utf-8")
    _write_tasks(workdir / "tasks.yaml", 3)

    def model(body: dict[str, Any]) -> ReplyLike:
        last = body["contents"][-1]["parts"][0]
        if "functionResponse" in last:
            return f"I am {last['functionResponse']['response']['output']}"
        return function_call("whoami", {})

    fake = FakeGemini(model)
    more = ("--tools", "batchdeps:whoami", "--deps", "batchdeps:for_task")
    with fake.serve() as server:
        code, _, err = cli(*_batch("out.jsonl", *more), server=server)
    assert code == 0, err
    texts = {r["id"]: r["text"] for r in _records(workdir / "out.jsonl")}
    assert texts == {f"t{i:02d}": f"I am user-t{i:02d}" for i in range(3)}
    sys.modules.pop("batchdeps", None)


@contextmanager
def _held_batch(
    workdir: Path, answer: str
) -> Iterator[tuple[subprocess.Popen[str], FakeGemini, Any]]:
    """Run ``batch`` (3 tasks) in a subprocess whose replies are held back until the end.

    Yields once its first request reached the fake; afterwards the replies are released and
    a batch still running is waited for (or killed, if it does not end).
    """
    _write_tasks(workdir / "tasks.yaml", 3)
    hold = Hold()
    fake = FakeGemini(hold.reply(answer))
    with fake.serve() as server:
        first = subprocess.Popen(
            [sys.executable, "-m", "agent", *_batch("out.jsonl", "--concurrency", "1")],
            cwd=workdir,
            env=cli_env(server),
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not fake.requests:
                assert first.poll() is None, "the batch ended before its first request"
                assert time.monotonic() < deadline
                time.sleep(0.01)
            yield first, fake, server
        finally:
            hold.release()
            try:
                first.communicate(timeout=60)
            finally:
                if first.poll() is None:
                    first.kill()
                    first.wait()


def test_ctrl_c_says_interrupted_once_and_exits_130(workdir: Path) -> None:
    with _held_batch(workdir, "late") as (first, _, _):
        first.send_signal(signal.SIGINT)
        _, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    assert err.count("interrupted") == 1, err
    assert err.endswith("interrupted: 0 tasks recorded this run; run again to resume\n")


def test_a_second_batch_on_the_same_output_refuses_to_start(cli: Cli, workdir: Path) -> None:
    with _held_batch(workdir, "answer") as (first, fake, server):
        code, _, err = cli(*_batch("out.jsonl"), server=server)
        assert code == 2
        assert err == (
            "batch: out.jsonl is in use by another batch; wait for it to finish, or write "
            "to another --out file\n"
        )
        assert len(fake.requests) == 1  # the second batch ran nothing
    assert first.returncode == 0
    assert sorted(r["id"] for r in _records(workdir / "out.jsonl")) == ["t00", "t01", "t02"]


def test_batch_help_has_one_exit_code_list_and_says_the_last_line_wins(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["batch", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert text.count("exit code") == 1
    assert "3 pending" not in text and "4 incomplete" not in text  # codes batch never ends with
    assert "the last line for an id is its result" in text


def test_a_retried_task_counts_by_its_last_line(cli: Cli, workdir: Path) -> None:
    (workdir / "tasks.yaml").write_text(yaml.safe_dump([{"id": "a", "prompt": "go"}]), "utf-8")
    fake = FakeGemini([error(400, "INVALID_ARGUMENT", "no"), "done"])
    with fake.serve() as server:
        assert cli(*_batch("r.jsonl"), server=server)[0] == 1
        code, _, err = cli(*_batch("r.jsonl", "--retry-failed"), server=server)
    assert code == 0, err
    assert [r["status"] for r in _records(workdir / "r.jsonl")] == ["failed", "completed"]
    assert err.endswith("1 tasks: 1 completed; results in r.jsonl\n")


def test_an_output_that_is_not_a_regular_file_is_refused_at_once(cli: Cli, workdir: Path) -> None:
    _write_tasks(workdir / "tasks.yaml", 1)
    os.mkfifo(workdir / "fifo.jsonl")
    (workdir / "folder.jsonl").mkdir()
    for name in ("fifo.jsonl", "folder.jsonl"):
        code, _, err = cli(*_batch(name))
        assert (code, err) == (
            2,
            f"batch: --out {name} is not a regular file; name a file to write to\n",
        )


def test_a_reply_quoting_the_api_key_is_scrubbed_from_the_results(
    cli: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "AIzaQUOTED-key-0123456789"
    _write_tasks(workdir / "tasks.yaml", 2)

    def quoting(body: dict[str, Any]) -> ReplyLike:
        if _prompt(body) == "task 1":
            return error(400, "INVALID_ARGUMENT", f"cannot use {secret}")
        return f"the key is {secret}"

    fake = FakeGemini(quoting, api_key=secret)
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with fake.serve() as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        code, out, err = cli(*_batch("out.jsonl"))
    assert code == 1, err
    written = (workdir / "out.jsonl").read_text(encoding="utf-8")
    assert secret not in written + out + err
    by_id = {r["id"]: r for r in _records(workdir / "out.jsonl")}
    assert by_id["t00"]["text"] == "the key is ***"
    assert "cannot use ***" in by_id["t01"]["error"]
