"""Every example of README.md and docs/ runs, and the output it shows is real.

Each example runs in a fresh directory holding a copy of ``examples/`` (so
``tn.build(skills="examples/skills")`` works as it does from a clone):

- A ```python block that defines ``test_*`` functions is a pytest file a user would copy. It
  runs with pytest in a subprocess, without this repository's pytest configuration (no
  ``asyncio_mode``, no pytest-asyncio), so its own imports and markers must be enough.
- Any other ```python block runs as a script. When a ```text block follows it (nothing but
  blank lines between them), that block is the script's exact standard output.
- A ```console block is a shell session: each ``$ `` line (with its ``\\`` continuation
  lines) runs in bash, and the other lines are the session's exact output, stdout and stderr
  together.
- A block right under an ``<!-- file: NAME -->`` line is a file the page's examples use: it
  is written to NAME in the directory before they run, and is not run itself.

Other blocks (```bash, ```yaml, ```json, ```text) do not run.
"""

from __future__ import annotations

import os
import re
import runpy
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_FILE_MARK = re.compile(r"<!-- file: (\S+) -->\s*$")
_TEST_FUNCTION = re.compile(r"^(async )?def test_", re.MULTILINE)
_KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL")


@dataclass(frozen=True)
class Example:
    """One runnable block, the output shown for it and the files its page declares."""

    page: Path
    line: int
    kind: str
    """``python`` or ``console``."""
    code: str
    output: str | None
    files: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _examples(page: Path) -> list[Example]:
    source = page.read_text(encoding="utf-8")
    fences = list(_FENCE.finditer(source))
    files: dict[str, str] = {}
    runnable = []
    for index, fence in enumerate(fences):
        kind = fence.group(1).strip()
        before = source[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _FILE_MARK.search(before)
        if mark:
            files[mark.group(1)] = fence.group(2)
        elif kind in ("python", "console"):
            runnable.append((index, fence, kind))
    found = []
    for index, fence, kind in runnable:
        follower = fences[index + 1] if index + 1 < len(fences) else None
        output = None
        if (
            kind == "python"
            and follower is not None
            and follower.group(1).strip() == "text"
            and not source[fence.end() : follower.start()].strip()
        ):
            output = follower.group(2)
        line = source.count("\n", 0, fence.start()) + 1
        found.append(Example(page, line, kind, fence.group(2), output, files))
    return found


EXAMPLES = [example for page in PAGES for example in _examples(page)]


def _workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)  # e.g. .claude/agents/x.md
        (tmp_path / name).write_text(content, encoding="utf-8")
    return tmp_path


def _environment() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in _KEY_VARIABLES}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def test_every_page_has_examples_found() -> None:
    assert EXAMPLES, "no ```python blocks found"
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        indented = re.search(r"^[ \t]+```", text, re.MULTILINE)
        assert indented is None, f"{page.name}: indented code fences are not collected"


def test_examples_fit_in_100_columns() -> None:
    wide = [
        f"{example.name} +{number}"
        for example in EXAMPLES
        if example.kind == "python"
        for number, line in enumerate(example.code.splitlines(), 1)
        if len(line) > 100
    ]
    assert not wide, "lines over 100 characters (the project's line length): " + ", ".join(wide)


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [line for line in readme.splitlines() if line.endswith("-m pytest")]
    assert len(commands) == 1, commands
    assert commands[0] in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
def test_example(
    example: Example,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    workspace = _workspace(tmp_path, example.files)
    if example.kind == "console":
        _run_console_session(example, workspace)
    elif _TEST_FUNCTION.search(example.code):
        _run_as_pytest_file(example, workspace)
    else:
        _run_as_script(example, workspace, monkeypatch, capsys)


def _run_as_script(
    example: Example,
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert example.output is None or example.output.strip(), "empty output block"
    script = workspace / "example.py"
    script.write_text(example.code, encoding="utf-8")
    monkeypatch.chdir(workspace)
    monkeypatch.syspath_prepend(str(workspace))
    environ = dict(os.environ)
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        os.environ.clear()
        os.environ.update(environ)
        for name, module in list(sys.modules.items()):  # modules the example wrote and imported
            if str(getattr(module, "__file__", "")).startswith(str(workspace)):
                del sys.modules[name]
    printed = capsys.readouterr().out
    if example.output is not None:
        assert printed == example.output


def _run_as_pytest_file(example: Example, workspace: Path) -> None:
    assert example.output is None, "a pytest example shows no output block"
    (workspace / "test_example.py").write_text(example.code, encoding="utf-8")
    env = _environment()
    # The network guard of this repository's tests, loaded as a plugin: the example must not
    # need it, and it proves the example never leaves 127.0.0.1.
    env["PYTHONPATH"] = str(ROOT)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:asyncio",
        "-p",
        "tests.conftest",
        "-c",
        os.devnull,
        "-W",
        "error",
        "test_example.py",
    ]
    done = subprocess.run(
        command, cwd=workspace, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert re.search(r"\d+ passed", report), report


def _run_console_session(example: Example, workspace: Path) -> None:
    commands: list[str] = []
    expected: list[str] = []
    continued = False
    for line in example.code.splitlines():
        if continued or line.startswith("$ "):
            commands.append(line if continued else line[2:])
            continued = line.endswith("\\")
        else:
            expected.append(line)
    assert commands, "a console block without a `$ ` command"
    done = subprocess.run(
        ["bash", "-c", "\n".join(commands)],
        cwd=workspace,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.stdout.splitlines() == expected


def test_readme_links_into_docs_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert targets
    missing = [target for target in targets if not (ROOT / target).is_file()]
    assert not missing, missing
