"""Hostile commands that look for the agent's API key outside their own environment.

The agent runs in a child interpreter started with a planted key in its environment, as
the CLI is; each command is a way a prompt-injected model could try to read it back.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import toolnexus
from toolnexus.builtins import _shell

PLANTED = f"planted-{uuid.uuid4().hex}"

HOSTILE = {
    "parent environ": "cat /proc/$PPID/environ",
    "every environ": "cat /proc/*/environ",
    "ps eww": "ps eww -e",
    "ps auxeww": "ps auxeww",
    "grep proc": "grep -a -r planted /proc/[0-9]*/environ",
    "unmount proc": "umount -l /proc; cat /proc/*/environ",
    "mount proc again": "mkdir -p p && mount -t proc proc p; cat p/*/environ",
    "parent cmdline and mem": "cat /proc/$PPID/cmdline; head -c 100000 /proc/$PPID/mem",
    "variable": 'echo "$GEMINI_API_KEY $GOOGLE_API_KEY"',
    "nested shell": "env | grep API_KEY; bash -c 'cat /proc/$PPID/environ'",
}

_AGENT = """
import json, sys
import toolnexus
tk = toolnexus.build(root=sys.argv[1], isolate_shell=sys.argv[2] == "isolated")
out = {}
for name, command in json.loads(sys.argv[3]).items():
    out[name] = toolnexus.execute(tk, "bash", {"command": command, "timeout": 20000}).output
print(json.dumps(out))
"""


def _bwrap_works() -> bool:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    argv = [*_shell._bwrap_prefix(bwrap, Path("/")), "true"]
    return subprocess.run(argv, check=False, capture_output=True).returncode == 0


needs_bwrap = pytest.mark.skipif(not _bwrap_works(), reason="bwrap cannot run here")


def _run_agent(root: Path, mode: str, commands: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, "GEMINI_API_KEY": PLANTED, "GOOGLE_API_KEY": PLANTED}
    done = subprocess.run(
        [sys.executable, "-c", _AGENT, str(root), mode, json.dumps(commands)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    outputs: dict[str, str] = json.loads(done.stdout)
    return outputs


@pytest.fixture(scope="module")
def isolated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _run_agent(tmp_path_factory.mktemp("isolated"), "isolated", HOSTILE)


@needs_bwrap
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_command_cannot_read_the_agents_key(isolated: dict[str, str], name: str) -> None:
    assert PLANTED not in isolated[name]


@needs_bwrap
def test_the_commands_did_run(isolated: dict[str, str]) -> None:
    # Guards the suite against passing because nothing ran at all.
    assert "PID" in isolated["ps eww"]
    assert "bwrap" in isolated["parent cmdline and mem"]


def test_without_isolation_the_agents_environment_is_reachable(tmp_path: Path) -> None:
    # The documented fallback: hidden variables are gone, the parent's environ is not.
    commands = {"parent": "cat /proc/$PPID/environ", "variable": HOSTILE["variable"]}
    outputs = _run_agent(tmp_path, "plain", commands)
    assert PLANTED in outputs["parent"]
    assert PLANTED not in outputs["variable"]


def _running(marker: str) -> bool:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker in cmdline.read_bytes().decode(errors="replace"):
                return True
        except OSError:
            pass
    return False


def _wait_gone(marker: str) -> bool:
    # Killed processes disappear once reaped; poll that observable state.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not _running(marker):
            return True
        time.sleep(0.01)
    return False


@needs_bwrap
@pytest.mark.parametrize(
    ("command", "timeout"),
    [
        ("setsid sleep {s} > /dev/null 2>&1 & echo ok", 20_000),
        ("nohup sleep {s} > /dev/null 2>&1 & echo ok", 20_000),
        ("setsid sleep {s} & sleep {s}", 300),
    ],
)
def test_every_process_of_an_isolated_command_ends_with_it(
    tmp_path: Path, command: str, timeout: int
) -> None:
    seconds = f"{3000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 1000:03d}"
    tk = toolnexus.build(root=tmp_path)
    toolnexus.execute(tk, "bash", {"command": command.format(s=seconds), "timeout": timeout})
    assert _wait_gone(f"sleep\x00{seconds}")


def test_missing_bwrap_runs_plainly_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_shell, "_isolation", {})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to(shutil.which("bash") or "/bin/sh")
    monkeypatch.setenv("PATH", str(bin_dir))
    tk = toolnexus.build(root=tmp_path)
    with caplog.at_level(logging.WARNING, logger="toolnexus.bash"):
        first = toolnexus.execute(tk, "bash", {"command": "echo $$ ran"})
        second = toolnexus.execute(tk, "bash", {"command": "echo again"})
    assert first.output.endswith(" ran\n") and first.output != "2 ran\n"
    assert second.output == "again\n"
    warnings = [r.getMessage() for r in caplog.records if r.name == "toolnexus.bash"]
    assert len(warnings) == 1
    assert "bwrap is not installed" in warnings[0]
    assert "Install bubblewrap" in warnings[0]
