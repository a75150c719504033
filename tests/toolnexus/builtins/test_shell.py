"""The bash tool: real subprocesses in a temporary workspace."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import toolnexus
from toolnexus import Limits, Toolkit, ToolResult


@pytest.fixture
def tk(tmp_path: Path) -> Toolkit:
    return toolnexus.build(root=tmp_path)


@pytest.fixture
def plain(tmp_path: Path) -> Toolkit:
    """Commands without their own PID namespace, so their pids are the test's pids."""
    return toolnexus.build(root=tmp_path, isolate_shell=False)


def bash(tk: Toolkit, command: str, **args: object) -> ToolResult:
    return toolnexus.execute(tk, "bash", {"command": command, **args})


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (FileNotFoundError, IndexError):
        return True


def _wait_dead(pids: list[int]) -> bool:
    # A SIGKILLed orphan disappears once init reaps it; poll that observable state.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if all(_dead(pid) for pid in pids):
            return True
        time.sleep(0.01)
    return False


def test_combined_output_in_the_workspace_root(tk: Toolkit, tmp_path: Path) -> None:
    result = bash(tk, "pwd; echo out; echo err >&2")
    assert result.is_error is False
    assert result.output == f"{tmp_path.resolve()}\nout\nerr\n"
    assert result.metadata == {"exit_code": 0, "timed_out": False}


def test_stdin_is_empty(tk: Toolkit) -> None:
    assert bash(tk, "cat; echo done").output == "done\n"


def test_non_zero_exit_is_an_error_naming_the_code(tk: Toolkit) -> None:
    result = bash(tk, "echo partial; exit 3")
    assert result.is_error is True
    assert result.output == "partial\n[exit code 3]"
    empty = bash(tk, "false")
    assert empty.output == "(no output)\n[exit code 1]"


def test_workdir_resolves_through_the_workspace(tk: Toolkit, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    assert bash(tk, "pwd", workdir="sub").output == f"{tmp_path.resolve() / 'sub'}\n"
    escaped = bash(tk, "pwd", workdir="..")
    assert escaped.is_error and "outside the workspace" in escaped.output
    missing = bash(tk, "pwd", workdir="nope")
    assert missing.is_error and "`workdir`" in missing.output


@pytest.mark.parametrize(
    ("timeout", "message"),
    [
        (0, "`timeout` must be a positive number"),
        (-5, "`timeout` must be a positive number"),
        ("soon", "`timeout` must be a number"),
        (True, "`timeout` must be a number"),
    ],
)
def test_bad_timeout_is_a_validation_error(tk: Toolkit, timeout: object, message: str) -> None:
    result = bash(tk, "echo hi", timeout=timeout)
    assert result.is_error is True
    assert message in result.output
    assert "Traceback" not in result.output


def test_malformed_arguments(tk: Toolkit) -> None:
    assert "`command` must be a string" in bash(tk, ["ls"]).output  # type: ignore[arg-type]
    assert "`command` is empty" in bash(tk, "  ").output
    assert "unknown argument `cwd`" in bash(tk, "ls", cwd="/").output


def test_timeout_kills_the_whole_process_group(plain: Toolkit, tmp_path: Path) -> None:
    command = "echo $$ > shell.pid; sleep 30 & echo $! > child.pid; echo started; wait"
    result = bash(plain, command, timeout=500)
    assert result.is_error is True
    assert result.output.startswith("started\n[command timed out after 500 ms")
    assert result.metadata is not None and result.metadata["timed_out"] is True
    pids = [int((tmp_path / name).read_text()) for name in ("shell.pid", "child.pid")]
    assert _wait_dead(pids)


async def test_cancellation_kills_the_process_group(plain: Toolkit, tmp_path: Path) -> None:
    command = "sleep 30 & echo $! > child.pid; echo $$ > shell.pid; wait"
    task = asyncio.create_task(toolnexus.execute_async(plain, "bash", {"command": command}))
    while not (tmp_path / "shell.pid").exists() or not (tmp_path / "shell.pid").read_text():
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pids = [int((tmp_path / name).read_text()) for name in ("shell.pid", "child.pid")]
    assert await asyncio.to_thread(_wait_dead, pids)


def test_background_process_holding_the_output_is_stopped(plain: Toolkit, tmp_path: Path) -> None:
    result = bash(plain, "sleep 30 & echo $! > child.pid; echo started")
    assert result.is_error is False
    assert result.output.startswith("started\n")
    assert "background processes" in result.output
    assert _wait_dead([int((tmp_path / "child.pid").read_text())])


def test_detached_background_process_is_left_alone(plain: Toolkit, tmp_path: Path) -> None:
    result = bash(plain, "sleep 30 > /dev/null 2>&1 & echo $! > child.pid; echo ok")
    assert result.output == "ok\n"
    pid = int((tmp_path / "child.pid").read_text())
    try:
        assert not _dead(pid)
    finally:
        os.kill(pid, 9)


async def test_does_not_block_the_event_loop(tk: Toolkit, tmp_path: Path) -> None:
    # The command waits for a file that only this event loop creates while it runs.
    command = "while [ ! -f go ]; do sleep 0.01; done; echo released"
    task = asyncio.create_task(
        toolnexus.execute_async(tk, "bash", {"command": command, "timeout": 20_000})
    )
    await asyncio.sleep(0)
    (tmp_path / "go").write_text("")
    result = await task
    assert result.output == "released\n"


async def test_ten_megabytes_of_output_are_capped_without_buffering(tk: Toolkit) -> None:
    tracemalloc.start()
    try:
        result = await toolnexus.execute_async(
            tk, "bash", {"command": "head -c 10000000 /dev/zero | tr '\\0' a; echo; seq 3"}
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.is_error is False
    assert len(result.output.encode()) < 50_000 + 300
    assert result.output.startswith("a" * 1000)
    assert "[output truncated: showed 1 of 4 lines" in result.output
    assert "of 10000007 bytes" in result.output
    assert "Redirect the output to a file" in result.output
    assert peak < 3_000_000


def test_line_cap(tmp_path: Path) -> None:
    tk = toolnexus.build(root=tmp_path, limits=Limits(max_lines=5))
    result = bash(tk, "seq 100")
    assert result.output.splitlines()[:5] == ["1", "2", "3", "4", "5"]
    assert "[output truncated: showed 5 of 100 lines" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"command": "echo a\x00b"}, "`command` contains a NUL character"),
        ({"command": "true", "workdir": "x" * 5000}, "`workdir`"),
        ({"command": "true", "workdir": "a\x00b"}, "NUL character"),
    ],
)
def test_odd_input_is_an_error_not_a_crash(
    tk: Toolkit, args: dict[str, object], message: str
) -> None:
    result = toolnexus.execute(tk, "bash", args)
    assert result.is_error is True
    assert message in result.output
    assert "failed:" not in result.output


def test_context_timeout_also_kills_the_process_group(plain: Toolkit, tmp_path: Path) -> None:
    command = "echo $$ > shell.pid; sleep 30 & echo $! > child.pid; wait"
    result = toolnexus.execute(
        plain, "bash", {"command": command}, toolnexus.ToolContext(timeout=1)
    )
    assert result.is_error is True
    assert "timed out after 1 s" in result.output
    pids = [int((tmp_path / name).read_text()) for name in ("shell.pid", "child.pid")]
    assert _wait_dead(pids)


def _no_unraisable(run: Callable[[], ToolResult]) -> ToolResult:
    """Run ``run`` and collect garbage; fail on any unclosed-transport warning."""
    seen: list[sys.UnraisableHookArgs] = []
    previous = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = run()
            gc.collect()
    finally:
        sys.unraisablehook = previous
    assert [str(item.exc_value) for item in seen] == []
    return result


def test_timeout_with_a_setsid_child_says_so_and_closes_the_pipe(
    plain: Toolkit, tmp_path: Path
) -> None:
    command = "setsid sleep 30 & echo $! > child.pid; sleep 10"
    result = _no_unraisable(lambda: bash(plain, command, timeout=300))
    pid = int((tmp_path / "child.pid").read_text())
    try:
        assert result.is_error is True
        assert "[command timed out after 300 ms;" in result.output
        assert "a process that left the process group (setsid) still held the output" in (
            result.output
        )
        assert "every process" not in result.output
        assert not _dead(pid)  # the message is honest: it was not killed
    finally:
        os.kill(pid, 9)


def test_finished_command_with_a_setsid_child_closes_the_pipe(
    plain: Toolkit, tmp_path: Path
) -> None:
    result = _no_unraisable(lambda: bash(plain, "setsid sleep 30 & echo $! > child.pid; echo ok"))
    pid = int((tmp_path / "child.pid").read_text())
    try:
        assert result.is_error is False
        assert result.output.startswith("ok\n[a process that left the process group (setsid)")
    finally:
        os.kill(pid, 9)


def test_plain_timeout_mentions_processes_that_left_the_group(plain: Toolkit) -> None:
    result = _no_unraisable(lambda: bash(plain, "sleep 10", timeout=200))
    assert "killed; processes that left the process group (setsid, daemons) may still run" in (
        result.output
    )


@pytest.mark.parametrize(
    ("timeout", "message"),
    [
        (10**400, "`timeout` must be at most 8.64e+07 milliseconds, got about 1e400"),
        (1e300, "`timeout` must be at most 8.64e+07 milliseconds, got 1e+300"),
        (-(10**400), "`timeout` must be a positive number of milliseconds, got about -1e400"),
    ],
)
def test_huge_timeouts_name_the_field(tk: Toolkit, timeout: object, message: str) -> None:
    result = bash(tk, "echo hi", timeout=timeout)
    assert result.is_error is True
    assert message in result.output


def test_api_keys_are_hidden_from_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-secret-value")
    monkeypatch.setenv("GOOGLE_API_KEY", "google-secret-value")
    monkeypatch.setenv("TOOLNEXUS_VISIBLE", "seen")
    command = 'echo "[$GEMINI_API_KEY][$GOOGLE_API_KEY][$TOOLNEXUS_VISIBLE]"'
    assert bash(toolnexus.build(root=tmp_path), command).output == "[][][seen]\n"
    custom = toolnexus.build(root=tmp_path, hidden_env=["TOOLNEXUS_VISIBLE"])
    assert bash(custom, command).output == "[gemini-secret-value][google-secret-value][]\n"
    with pytest.raises(toolnexus.ConfigError, match="not one string"):
        toolnexus.build(root=tmp_path, hidden_env="GEMINI_API_KEY")
