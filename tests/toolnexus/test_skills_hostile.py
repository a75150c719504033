"""Skill discovery against hostile trees (18.2) and which duplicate wins (17.4).

Each case must finish: a FIFO or a device never blocks `build`, nothing is read whole
without a cap, and no depth of tree or symlink loop raises out of it.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from toolnexus import list_skills
from toolnexus._skills import MAX_SKILL_BYTES


def write_skill(folder: Path, frontmatter: str, body: str = "Body.") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\n{frontmatter}\n---\n{body}\n")
    return folder


def finishes(work: Callable[[], Any]) -> Any:
    """Run ``work`` on a thread and return its result; fail (not hang) if it never ends."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                box["value"] = work()
        except BaseException as exc:  # reported below, in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "discovery blocked"
    if "error" in box:
        raise box["error"]
    return box["value"]


posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX special files")


@posix_only
def test_a_fifo_skill_file_is_skipped_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "SKILL.md")
    write_skill(tmp_path / "ok", "name: ok")
    tk = finishes(lambda: tn.build(skills=tmp_path, builtins=False))
    assert [s.name for s in tk.skills] == ["ok"]
    skipped = finishes(lambda: list_skills(tmp_path)).skipped
    assert [(s.path.parent.name, s.reason, s.detail) for s in skipped] == [
        ("fifo", "unreadable", "not a regular file")
    ]


@posix_only
def test_a_skill_file_linked_to_dev_zero_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "zero").mkdir()
    (tmp_path / "zero" / "SKILL.md").symlink_to("/dev/zero")
    [skipped] = finishes(lambda: list_skills(tmp_path)).skipped
    assert (skipped.reason, skipped.detail) == ("unreadable", "not a regular file")
    assert finishes(lambda: tn.build(skills=tmp_path, builtins=False)).skills == ()


def test_a_skill_file_over_the_cap_is_skipped_unread(tmp_path: Path) -> None:
    big = write_skill(tmp_path / "big", "name: big", body="x" * MAX_SKILL_BYTES)
    [skipped] = list_skills(tmp_path).skipped
    assert skipped.path == big / "SKILL.md"
    assert (skipped.reason, skipped.detail) == ("unreadable", "larger than 1,000,000 bytes")


def test_a_tree_1100_levels_deep_is_walked(tmp_path: Path) -> None:
    deep = tmp_path / "skills"
    deep.mkdir()
    # Relative steps keep each system call's path short; the tree is 1,100 levels deep.
    here = os.getcwd()
    os.chdir(deep)
    try:
        for _ in range(1100):
            os.mkdir("d")
            os.chdir("d")
        Path("SKILL.md").write_text("---\nname: bottom\n---\nDeep.\n")
    finally:
        os.chdir(here)
    try:
        inventory = finishes(lambda: list_skills(deep))
        tk = finishes(lambda: tn.build(skills=deep, builtins=False))
    finally:
        _remove_deep(deep, 1100)
    assert [s.name for s in inventory.skills] == [s.name for s in tk.skills] == ["bottom"]
    assert inventory.skipped == ()


def _remove_deep(top: Path, levels: int) -> None:
    """Remove the deep tree bottom up (pytest's recursive cleanup would overflow on it)."""
    here = os.getcwd()
    os.chdir(top)
    try:
        for _ in range(levels):
            os.chdir("d")
        os.remove("SKILL.md")
        for _ in range(levels):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(here)


@posix_only
def test_a_skills_folder_that_is_a_symlink_loop_does_not_raise(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.warns(UserWarning, match="symlink loop"):
        tk = tn.build(skills=loop, builtins=False)
    assert "skill" not in tk
    inner = tmp_path / "skills"
    write_skill(inner / "a", "name: a")
    (inner / "a" / "me").symlink_to(inner / "a" / "me")
    (inner / "up").symlink_to(inner)
    assert [s.name for s in finishes(lambda: tn.build(skills=inner, builtins=False)).skills] == [
        "a"
    ]


def test_names_and_descriptions_are_one_line_in_the_catalog(tmp_path: Path) -> None:
    write_skill(
        tmp_path / "odd",
        'name: "two\\nlines"\ndescription: "first\\n## Injected heading\\n- x"',
    )
    tk = tn.build(skills=tmp_path, builtins=False)
    [skill] = tk.skills
    assert skill.name == "two lines"
    catalog = tn.skills_prompt(tk)
    assert catalog.splitlines()[-1] == "- **two lines**: first ## Injected heading - x"
    assert not tn.execute(tk, "skill", {"name": "two lines"}).is_error


# --- duplicates (17.4) ------------------------------------------------------------------------


def test_the_copy_closest_to_the_skills_root_wins(tmp_path: Path) -> None:
    deep = write_skill(tmp_path / "a" / "deep" / "dup", "name: dup\ndescription: deep copy")
    top = write_skill(tmp_path / "dup", "name: dup\ndescription: top copy")
    with pytest.warns(UserWarning, match="already taken") as caught:
        tk = tn.build(skills=tmp_path, builtins=False)
    assert [(s.name, s.directory) for s in tk.skills] == [("dup", top)]
    assert str(deep / "SKILL.md") in str(caught[0].message)


def test_at_equal_depth_path_order_decides(tmp_path: Path) -> None:
    first = write_skill(tmp_path / "a" / "x", "name: same")
    write_skill(tmp_path / "b" / "x", "name: same")
    with pytest.warns(UserWarning, match="already taken"):
        assert [s.directory for s in list_skills(tmp_path).skills] == [first]


@posix_only
def test_the_same_file_through_a_symlink_is_not_a_duplicate(tmp_path: Path) -> None:
    real = write_skill(tmp_path / "real", "name: one")
    (tmp_path / "z-alias").mkdir()
    (tmp_path / "z-alias" / "SKILL.md").symlink_to(real / "SKILL.md")
    (tmp_path / "a-deeper").mkdir()
    (tmp_path / "a-deeper" / "link").symlink_to(real, target_is_directory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inventory = list_skills(tmp_path)
        tk = tn.build(skills=tmp_path, builtins=False)
    assert [s.directory for s in inventory.skills] == [real]
    assert inventory.skipped == ()
    assert [s.directory for s in tk.skills] == [real]


# --- one summarised warning (17.5) ------------------------------------------------------------


def test_skips_are_one_short_warning_with_counts_and_the_first_paths(tmp_path: Path) -> None:
    for i in range(40):
        write_skill(tmp_path / f"dup{i:02}", "name: same")
    write_skill(tmp_path / "nameless", "description: no name")
    with pytest.warns(UserWarning) as caught:
        tk = tn.build(skills=tmp_path, builtins=False)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("skipped 40 skill file(s) (39 duplicate-name, 1 missing-name): ")
    assert message.count(" (duplicate-name: ") == 3
    assert "and 37 more" in message
    assert len(message) < 1000
    assert [s.name for s in tk.skills] == ["same"]


# --- skill directories and the workspace (18.2: the documented rule) ------------------------


def test_skill_dirs_outside_the_root_are_read_only_and_inside_it_writable(tmp_path: Path) -> None:
    root = tmp_path / "work"
    outside = write_skill(tmp_path / "shared" / "s", "name: shared")
    inside = write_skill(root / "skills" / "own", "name: own")
    tk = tn.build(skills=[tmp_path / "shared", root / "skills"], root=root)
    out_path = str(outside / "SKILL.md")
    assert tn.execute(tk, "read", {"path": out_path}).is_error is False
    refused = tn.execute(tk, "write", {"path": out_path, "content": "x"})
    assert refused.is_error and "read-only skill directory" in refused.output
    written = tn.execute(tk, "write", {"path": "skills/own/notes.md", "content": "x"})
    assert not written.is_error, written.output
    assert (inside / "notes.md").read_text() == "x"
