"""``import toolnexus`` and the first ``build`` stay light: heavy modules load on first use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = ("pydantic", "google.genai", "httpx", "yaml", "markdownify", "asyncio", "mcp")

SCRIPT = """
import sys
heavy = {heavy!r}
def loaded():
    return sorted(m for m in heavy if m in sys.modules)
import toolnexus as tn
print("import", loaded())
tk = tn.build()
print("build", loaded())
@tn.define_tool
def add(a: int, b: int = 1) -> int:
    '''Add two numbers.'''
    return a + b
print("define", loaded())
print("schema", dict(add.input_schema)["required"], "pydantic" in sys.modules)
"""


def test_import_build_and_define_tool_load_no_heavy_module() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.splitlines() == [
        "import []",
        "build []",
        "define []",
        "schema ['a'] True",
    ]


# What the built-in tools' implementations (and list_skills' records) pull in: none of
# it loads on build; a built-in's code loads when it first runs.
LAZY = (
    "toolnexus.builtins._files",
    "toolnexus.builtins._interact",
    "toolnexus.builtins._search",
    "toolnexus.builtins._shell",
    "toolnexus.builtins._web",
    "toolnexus.builtins._common",
    "toolnexus._skill_records",
    "shutil",
    "signal",
    "tempfile",
)

BUILD_SCRIPT = """
import sys
lazy = {lazy!r}
def loaded():
    return sorted(m for m in lazy if m in sys.modules)
import toolnexus as tn
tk = tn.build(skills={skills!r})
print("build", loaded(), sorted(tk.names))
todo = tn.execute(tk, "todowrite", {{"todos": []}})
print(todo.is_error, "toolnexus.builtins._interact" in sys.modules)
shell = tn.execute(tk, "bash", {{"command": "echo hi"}})
print(shell.output.strip(), "toolnexus.builtins._shell" in sys.modules)
"""


def test_build_with_skills_loads_no_builtin_implementation() -> None:
    skills = str(Path(__file__).parents[2] / "examples" / "skills")
    done = subprocess.run(
        [sys.executable, "-c", BUILD_SCRIPT.format(lazy=LAZY, skills=skills)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    names = [
        "apply_patch", "bash", "edit", "glob", "grep", "question",
        "read", "skill", "todowrite", "webfetch", "write",
    ]  # fmt: skip
    assert done.stdout.splitlines() == [
        f"build [] {names!r}",
        "False True",
        "hi True",
    ]


def test_lazy_names_resolve_and_are_listed() -> None:
    import toolnexus

    for name in toolnexus.__all__:
        assert getattr(toolnexus, name) is not None
        assert name in dir(toolnexus)
    try:
        toolnexus.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no attribute 'no_such_name'" in str(exc)
    else:
        raise AssertionError("a missing name must raise AttributeError")
