"""The grep and glob tools on a real temporary workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import toolnexus
from toolnexus import Limits, Toolkit


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    _write(
        root,
        {
            "b.py": "import os\nprint('needle b')\n",
            "a.md": "# needle in markdown\n",
            "a.py": "def f():\n    return 'needle a'\n",
            "notes.txt": "needle in text\n",
            "src/pkg/mod.py": "x = 1\nneedle = 2\n",
            "src/pkg/data.bin": b"\x00\x01needle\x00",
            "src/latin1.py": b"needle = 'caf\xe9'\n",
            ".git/config": "needle in vcs\n",
            ".hg/store": "needle in vcs\n",
            "c.py": "no match here\n",
        },
    )
    return root


@pytest.fixture
def tk(workspace: Path) -> Toolkit:
    return toolnexus.build(root=workspace)


def grep(tk: Toolkit, **args: object) -> toolnexus.ToolResult:
    return toolnexus.execute(tk, "grep", args)


def glob(tk: Toolkit, **args: object) -> toolnexus.ToolResult:
    return toolnexus.execute(tk, "glob", args)


def test_grep_reports_file_line_text_in_sorted_order(tk: Toolkit) -> None:
    result = grep(tk, pattern="needle")
    assert result.is_error is False
    assert result.output.splitlines() == [
        "a.md:1:# needle in markdown",
        "a.py:2:    return 'needle a'",
        "b.py:2:print('needle b')",
        "notes.txt:1:needle in text",
        "src/pkg/mod.py:2:needle = 2",
        "[skipped 2 binary, non-UTF-8, unreadable, oversized or hard-linked file(s)]",
    ]


def test_grep_include_supports_braces_and_classes(tk: Toolkit) -> None:
    braces = grep(tk, pattern="needle", include="*.{py,md}")
    assert [line.split(":")[0] for line in braces.output.splitlines()[:-1]] == [
        "a.md",
        "a.py",
        "b.py",
        "src/pkg/mod.py",
    ]
    klass = grep(tk, pattern="needle", include="[ab].py")
    assert [line.split(":")[0] for line in klass.output.splitlines()] == ["a.py", "b.py"]
    anchored = grep(tk, pattern="needle", include="src/**/*.py")
    assert anchored.output.splitlines()[0] == "src/pkg/mod.py:2:needle = 2"


def test_grep_path_narrows_and_accepts_a_file(tk: Toolkit) -> None:
    assert grep(tk, pattern="needle", path="src/pkg").output == (
        "src/pkg/mod.py:2:needle = 2\n"
        "[skipped 1 binary, non-UTF-8, unreadable, oversized or hard-linked file(s)]"
    )
    assert grep(tk, pattern="return", path="a.py").output == "a.py:2:    return 'needle a'"


def test_grep_no_phantom_line_after_last_newline(tk: Toolkit) -> None:
    assert grep(tk, pattern="^$", path="a.py").output == "No matches found."


def test_grep_limit_stops_with_a_note(tk: Toolkit) -> None:
    result = grep(tk, pattern="needle", limit=2)
    lines = result.output.splitlines()
    assert lines[:2] == ["a.md:1:# needle in markdown", "a.py:2:    return 'needle a'"]
    assert "limit of 2 matches" in lines[2]


def test_grep_errors(tk: Toolkit) -> None:
    bad_regex = grep(tk, pattern="(unclosed")
    assert bad_regex.is_error and "Invalid regular expression in `pattern`" in bad_regex.output
    missing = grep(tk, pattern="x", path="nope")
    assert missing.is_error and "does not exist" in missing.output
    for limit in (0, -3, 1.5):
        bad = grep(tk, pattern="x", limit=limit)
        assert bad.is_error and "`limit`" in bad.output
    wrong_type = grep(tk, pattern=["needle"])
    assert wrong_type.is_error and "`pattern` must be a string" in wrong_type.output
    unknown = grep(tk, pattern="x", glob="*.py")
    assert unknown.is_error and "unknown argument `glob`" in unknown.output


def test_grep_long_lines_are_clipped(workspace: Path) -> None:
    (workspace / "long.txt").write_text("needle" + "x" * 500 + "\n")
    tk = toolnexus.build(root=workspace, limits=Limits(max_line_length=20))
    out = grep(tk, pattern="needle", include="long.txt").output
    assert out == "long.txt:1:needlexxxxxxxxxxxxxx... [line truncated: 506 characters]"


def test_grep_line_longer_than_the_output_cap_says_it_was_truncated(workspace: Path) -> None:
    (workspace / "long.txt").write_text("needle" + "é" * 3000 + "\n")
    tk = toolnexus.build(root=workspace, limits=Limits(max_bytes=1000, max_line_length=5000))
    out = grep(tk, pattern="needle", include="long.txt").output
    assert out.startswith("long.txt:1:needleé")
    assert out.endswith("... [line truncated: 3006 characters, over the output cap]")
    assert len(out.encode()) <= 1000


def test_grep_output_is_capped(workspace: Path) -> None:
    (workspace / "many.txt").write_text("hit\n" * 50)
    tk = toolnexus.build(root=workspace, limits=Limits(max_lines=10))
    out = grep(tk, pattern="hit", include="many.txt").output.splitlines()
    assert len(out) == 11
    assert out[-1].startswith("[output truncated: showed 10 of 50 lines")


def test_glob_lists_sorted_relative_paths(tk: Toolkit) -> None:
    assert glob(tk, pattern="*.py").output.splitlines() == [
        "a.py",
        "b.py",
        "c.py",
        "src/latin1.py",
        "src/pkg/mod.py",
    ]
    assert glob(tk, pattern="*.{md,txt}").output == "a.md\nnotes.txt"
    assert glob(tk, pattern="[ab].*").output == "a.md\na.py\nb.py"
    assert glob(tk, pattern="src/**/*.py").output == "src/latin1.py\nsrc/pkg/mod.py"
    assert glob(tk, pattern="*.py", path="src").output == "src/latin1.py\nsrc/pkg/mod.py"
    assert glob(tk, pattern="config").output == "No files found."  # .git is skipped


def test_glob_limit_and_errors(tk: Toolkit) -> None:
    limited = glob(tk, pattern="*", limit=2).output.splitlines()
    assert limited[:2] == ["a.md", "a.py"]
    assert "limit of 2 paths" in limited[2]
    missing = glob(tk, pattern="*", path="missing")
    assert missing.is_error and "does not exist" in missing.output
    not_dir = glob(tk, pattern="*", path="a.py")
    assert not_dir.is_error and "not a directory" in not_dir.output
    bad_limit = glob(tk, pattern="*", limit="ten")
    assert bad_limit.is_error and "`limit` must be a number" in bad_limit.output


def test_confinement_refuses_escapes(tmp_path: Path, workspace: Path, tk: Toolkit) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("needle = 'secret'\n")
    for path in ("..", "../outside", str(outside)):
        for tool in ("grep", "glob"):
            args = {"pattern": "*" if tool == "glob" else "needle", "path": path}
            result = toolnexus.execute(tk, tool, args)
            assert result.is_error, (tool, path)
            assert "outside the workspace" in result.output


def test_symlinks_inside_are_visible_links_outside_are_not(
    tmp_path: Path, workspace: Path, tk: Toolkit
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("needle = 'secret'\n")
    os.symlink(outside, workspace / "linked_out")
    os.symlink(outside / "secret.py", workspace / "secret_link.py")
    os.symlink(workspace / "a.py", workspace / "z_alias.py")
    os.symlink(workspace / "src", workspace / "src" / "loop")  # a cycle
    names = glob(tk, pattern="*.py").output.splitlines()
    assert "z_alias.py" in names
    assert not any("secret" in n or "linked_out" in n for n in names)
    assert "src/loop/pkg/mod.py" not in names
    hits = grep(tk, pattern="needle").output
    assert "z_alias.py:2:" in hits
    assert "secret" not in hits
    refused = grep(tk, pattern="needle", path="linked_out")
    assert refused.is_error and "outside the workspace" in refused.output


def test_confine_false_walks_outside(tmp_path: Path, workspace: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("needle = 'secret'\n")
    os.symlink(outside, workspace / "linked_out")
    tk = toolnexus.build(root=workspace, confine=False)
    assert "linked_out/secret.py" in glob(tk, pattern="*.py").output.splitlines()
    result = grep(tk, pattern="secret", path=str(outside))
    assert result.output == f"{outside / 'secret.py'}:1:needle = 'secret'"


def test_skill_dirs_are_searchable_read_only(tmp_path: Path, workspace: Path) -> None:
    skills = tmp_path / "skills"
    (skills / "hello").mkdir(parents=True)
    (skills / "hello" / "SKILL.md").write_text(
        "---\nname: hello\ndescription: Say hello.\n---\nSay hello.\n"
    )
    tk = toolnexus.build(skills=skills, root=workspace)
    result = glob(tk, pattern="*.md", path=str(skills))
    assert result.is_error is False
    assert result.output == str(skills.resolve() / "hello" / "SKILL.md")


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("glob", {"pattern": "[z-a]"}, "Invalid glob pattern in `pattern`"),
        ("grep", {"pattern": "x", "include": "[z-a]"}, "Invalid glob pattern in `include`"),
        ("grep", {"pattern": "x", "path": "a\x00b"}, "NUL character"),
        ("glob", {"pattern": "*", "path": "x" * 5000}, "cannot be used"),
        ("glob", {"pattern": " "}, "`pattern` is empty"),
        ("glob", {"pattern": "*", "limit": 1e-9}, "`limit` must be a positive whole number"),
    ],
)
def test_odd_input_is_an_error_not_a_crash(
    tk: Toolkit, tool: str, args: dict[str, object], message: str
) -> None:
    result = toolnexus.execute(tk, tool, args)
    assert result.is_error is True
    assert message in result.output
    assert "failed:" not in result.output  # the text execute uses for an unexpected exception


def test_a_symlinked_directory_is_walked_once(workspace: Path, tk: Toolkit) -> None:
    os.symlink("src", workspace / "src_alias")  # like .venv/lib64 -> lib
    names = glob(tk, pattern="*.py").output.splitlines()
    assert names.count("src/pkg/mod.py") == 1
    assert not any(name.startswith("src_alias/") for name in names)
    hits = grep(tk, pattern="needle = 2").output.splitlines()
    assert hits[0] == "src/pkg/mod.py:2:needle = 2"
    assert hits[1:] == [
        "[skipped 2 binary, non-UTF-8, unreadable, oversized or hard-linked file(s)]"
    ]


def test_generated_directories_are_skipped_unless_searched_directly(workspace: Path) -> None:
    _write(
        workspace,
        {
            "node_modules/lib/index.js": "needle in deps\n",
            ".venv/lib/site.py": "needle in venv\n",
            "pkg/__pycache__/mod.py": "needle in cache\n",
            ".pytest_cache/v/x.py": "needle in cache\n",
        },
    )
    tk = toolnexus.build(root=workspace)
    hits = grep(tk, pattern="needle").output
    assert "node_modules" not in hits and ".venv" not in hits and "cache" not in hits
    assert "node_modules" not in glob(tk, pattern="**/*").output
    inside = grep(tk, pattern="needle", path="node_modules").output
    assert inside == "node_modules/lib/index.js:1:needle in deps"
    assert glob(tk, pattern="*.py", path=".venv/lib").output == ".venv/lib/site.py"
    assert "generated" not in tk["grep"].description  # the list is spelled out
    assert "node_modules" in tk["grep"].description and ".venv" in tk["glob"].description


def test_huge_limit_names_the_field(tk: Toolkit) -> None:
    result = glob(tk, pattern="*", limit=10**400)
    assert result.is_error
    assert "`limit` must be at most 1000000000, got about 1e400" in result.output
    assert "`limit` must be a positive whole number" in grep(tk, pattern="x", limit=-0.5).output
