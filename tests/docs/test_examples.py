"""Every ```python block of README.md and docs/ runs, and the output it shows is real.

A block is one self-contained example. It runs in a fresh directory holding a copy of
``examples/`` (so ``tn.build(skills="examples/skills")`` works as it does from a clone), and:

- a block that defines ``test_*`` functions is a pytest file a user would copy: it runs with
  pytest in a subprocess, without this repository's pytest configuration (no
  ``asyncio_mode``, no pytest-asyncio), so its own imports and markers must be enough;
- any other block runs as a script. When a ```text block follows it (nothing but blank
  lines between them), that block is the script's exact standard output.

Shell commands, YAML and JSON go in ```bash / ```yaml / ```json blocks, which do not run.
"""

from __future__ import annotations

import os
import re
import runpy
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_TEST_FUNCTION = re.compile(r"^(async )?def test_", re.MULTILINE)
_KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL")


@dataclass(frozen=True)
class Example:
    """One ```python block and the output shown under it."""

    page: Path
    line: int
    code: str
    output: str | None

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _examples(page: Path) -> list[Example]:
    source = page.read_text(encoding="utf-8")
    fences = list(_FENCE.finditer(source))
    found = []
    for index, fence in enumerate(fences):
        if fence.group(1).strip() != "python":
            continue
        follower = fences[index + 1] if index + 1 < len(fences) else None
        output = None
        if (
            follower is not None
            and follower.group(1).strip() == "text"
            and not source[fence.end() : follower.start()].strip()
        ):
            output = follower.group(2)
        line = source.count("\n", 0, fence.start()) + 1
        found.append(Example(page, line, fence.group(2), output))
    return found


EXAMPLES = [example for page in PAGES for example in _examples(page)]


def _workspace(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


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
        for number, line in enumerate(example.code.splitlines(), 1)
        if len(line) > 100
    ]
    assert not wide, "lines over 100 characters (the project's line length): " + ", ".join(wide)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
def test_example(
    example: Example,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    workspace = _workspace(tmp_path)
    if _TEST_FUNCTION.search(example.code):
        _run_as_pytest_file(example, workspace)
        return
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
    printed = capsys.readouterr().out
    if example.output is not None:
        assert printed == example.output


def _run_as_pytest_file(example: Example, workspace: Path) -> None:
    (workspace / "test_example.py").write_text(example.code, encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if name not in _KEY_VARIABLES}
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
    assert example.output is None, "a pytest example shows no output block"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [line for line in readme.splitlines() if line.endswith("-m pytest")]
    assert len(commands) == 1, commands
    assert commands[0] in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
